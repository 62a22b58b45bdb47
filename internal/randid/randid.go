// Package randid makes the random identifiers and secrets of Switchboard from the operating
// system's generator: ids with a type prefix, namespace-safe names, and signing secrets.
package randid

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"time"
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

// timeChars is the width of the time part of a Timed id: 62^8 ms reach the year 8888.
const timeChars = 8

// TimedLength is the length after the prefix of a Timed id: the time, then 18 random
// characters (~107 bits). Untimed ids of Prefixed(prefix, 24) are told apart by their length.
const TimedLength = timeChars + 18

// Timed returns prefix followed by at's millisecond in base62 (fixed width, so ids sort by time)
// and random characters. The rows of time-partitioned tables take ids made from their own
// created_at: the id then tells which partition holds the row (TimeOf), and a lookup by id
// touches one partition instead of all of them.
func Timed(prefix string, at time.Time) (string, error) {
	ms := at.UnixMilli()
	if ms < 0 {
		return "", fmt.Errorf("a timed id cannot hold %s, before 1970", at)
	}
	rest, err := String(Base62, TimedLength-timeChars)
	if err != nil {
		return "", err
	}
	b := make([]byte, timeChars, TimedLength)
	for i := timeChars - 1; i >= 0; i-- {
		b[i] = Base62[ms%62]
		ms /= 62
	}
	return prefix + string(append(b, rest...)), nil
}

// TimeOf returns the millisecond a Timed id was made for, and false for an id of another shape
// (an id made before ids carried their time). The id's type prefix ends at its last '_'.
func TimeOf(id string) (time.Time, bool) {
	rest := id[strings.LastIndexByte(id, '_')+1:]
	if len(rest) != TimedLength {
		return time.Time{}, false
	}
	var ms int64
	for i := range timeChars {
		v := strings.IndexByte(Base62, rest[i])
		if v < 0 {
			return time.Time{}, false
		}
		ms = ms*62 + int64(v)
	}
	return time.UnixMilli(ms).UTC(), true
}
