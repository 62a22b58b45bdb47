// Package randid makes the random identifiers and secrets of Switchboard from the operating
// system's generator: ids with a type prefix, namespace-safe names, and signing secrets.
package randid

import (
	"crypto/rand"
	"fmt"
	"math/big"
)

// Alphabets.
const (
	// Base62 is letters and digits: ~5.95 bits a character.
	Base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	// Lower is lowercase letters and digits, valid in Kubernetes names.
	Lower = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// String returns n characters drawn uniformly from alphabet.
func String(alphabet string, n int) (string, error) {
	b := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("read random bytes: %w", err)
		}
		b[i] = alphabet[v.Int64()]
	}
	return string(b), nil
}

// Prefixed returns prefix followed by n base62 characters, e.g. "msg_…".
func Prefixed(prefix string, n int) (string, error) {
	s, err := String(Base62, n)
	if err != nil {
		return "", err
	}
	return prefix + s, nil
}

// Name returns prefix followed by n lowercase letters and digits: a valid Kubernetes name.
func Name(prefix string, n int) (string, error) {
	s, err := String(Lower, n)
	if err != nil {
		return "", err
	}
	return prefix + s, nil
}
