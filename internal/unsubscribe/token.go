// Package unsubscribe is one-click unsubscribe from broadcast email (RFC 8058, RFC 2369): the
// signed token of each recipient's link and address, the List-Unsubscribe headers that carry
// them, the page served at {dashboard_url}/unsubscribe/{token} whose POST puts the address on
// the project's suppression list, and the same for a mail to unsubscribe-{token}@{inbound host}
// (docs/email.md).
package unsubscribe

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"math/big"
	"strings"

	"github.com/switchboard-io/switchboard/internal/randid"
)

// KeyName and KeySize name the shared secret tokens are signed with (postgres.SharedSecret).
const (
	KeyName = "unsubscribe_token_key"
	KeySize = 32
)

// ErrInvalid is a token that was not made by this installation's key (forged, altered,
// truncated), names no recipient, or has expired.
var ErrInvalid = errors.New("invalid unsubscribe token")

// A token names one broadcast recipient (a broadcast_contacts row), whose row says the
// project, mode, broadcast and address: the address is not in the link, which mail scanners and
// proxies log. It is short enough to be the local part of the mailto: address (RFC 5321: 64
// octets, with the "unsubscribe-" prefix), and written in lower-case base32, because relays may
// change a local part's case. Its two forms are told apart by their length:
//
//   - a recipient id with its broadcast's time ("bcc_" and 26 base62 characters, randid.Timed):
//     the id's 155 bits (20 bytes) and a truncated HMAC-SHA256, 52 characters;
//   - an id made before ids carried their time ("bcc_" and 20): a version byte (2), the id's 119
//     bits (15 bytes) and the HMAC, 45 characters. Such links went out in mail and stay valid.
const (
	idPrefix = "bcc_"
	tagSize  = 12 // 96 bits: forging one takes 2^96 tries, each a request
)

// idForm is one form of recipient id a token holds.
type idForm struct {
	chars   int    // base62 characters after the prefix
	bytes   int    // bytes the id's number takes
	version []byte // the token's leading version byte, or none
	limit   *big.Int
}

var (
	encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
	timedID  = idForm{chars: randid.TimedLength, bytes: 20}
	untimed  = idForm{chars: 20, bytes: 15, version: []byte{2}}
	idForms  = []idForm{timedID, untimed}
)

func init() {
	for i := range idForms {
		idForms[i].limit = new(big.Int).Exp(big.NewInt(62), big.NewInt(int64(idForms[i].chars)), nil)
	}
}

// tokenBytes is the decoded length of a token of the form.
func (f idForm) tokenBytes() int { return len(f.version) + f.bytes + tagSize }

// Signer makes and checks tokens with one installation key.
type Signer struct{ key []byte }

// NewSigner returns a Signer for key (every replica needs the same one).
func NewSigner(key []byte) *Signer { return &Signer{key: key} }

// Token is the token of the broadcast recipient recipientID; the same id always gives the same
// token, so the headers of a message can be shown again as they were sent.
func (s *Signer) Token(recipientID string) (string, error) {
	digits, ok := strings.CutPrefix(recipientID, idPrefix)
	for _, f := range idForms {
		if !ok || len(digits) != f.chars {
			continue
		}
		n, ok := decodeID(digits)
		if !ok {
			break
		}
		b := make([]byte, len(f.version)+f.bytes, f.tokenBytes())
		copy(b, f.version)
		n.FillBytes(b[len(f.version):])
		return encoding.EncodeToString(append(b, s.tag(b)...)), nil
	}
	return "", errors.New("a broadcast recipient's id is " + idPrefix + " and 26 (or 20) base62 characters")
}

// Parse returns the broadcast recipient a token made by this installation's key names. Upper
// case reads as lower case.
func (s *Signer) Parse(token string) (recipientID string, err error) {
	token = strings.ToLower(token)
	b, err := encoding.DecodeString(token)
	// A token has one spelling: re-encoding refuses strings whose unused last bits differ.
	if err != nil || encoding.EncodeToString(b) != token {
		return "", ErrInvalid
	}
	for _, f := range idForms {
		if len(b) != f.tokenBytes() {
			continue
		}
		body, tag := b[:len(b)-tagSize], b[len(b)-tagSize:]
		if !hmac.Equal(tag, s.tag(body)) || !bytes.HasPrefix(body, f.version) {
			return "", ErrInvalid
		}
		n := new(big.Int).SetBytes(body[len(f.version):])
		if n.Cmp(f.limit) >= 0 {
			return "", ErrInvalid
		}
		return idPrefix + encodeID(n, f.chars), nil
	}
	return "", ErrInvalid
}

func (s *Signer) tag(body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("unsubscribe\x00"))
	m.Write(body)
	return m.Sum(nil)[:tagSize]
}

func decodeID(digits string) (*big.Int, bool) {
	n := new(big.Int)
	base := big.NewInt(62)
	for i := range len(digits) {
		d := strings.IndexByte(randid.Base62, digits[i])
		if d < 0 {
			return nil, false
		}
		n.Mul(n, base).Add(n, big.NewInt(int64(d)))
	}
	return n, true
}

func encodeID(n *big.Int, chars int) string {
	digits := make([]byte, chars)
	n = new(big.Int).Set(n)
	base, d := big.NewInt(62), new(big.Int)
	for i := chars - 1; i >= 0; i-- {
		n.DivMod(n, base, d)
		digits[i] = randid.Base62[d.Int64()]
	}
	return string(digits)
}

// Path is where the page of a token is served, under the dashboard URL; MailPrefix begins the
// local part of the mailto: address at the installation's inbound host.
const (
	Path       = "/unsubscribe/"
	MailPrefix = "unsubscribe-"
)

// TokenOfAddress returns the token of a mailto: unsubscribe address's local part, false when
// it is not one.
func TokenOfAddress(address string) (string, bool) {
	at := strings.LastIndexByte(address, '@')
	if at < 0 {
		return "", false
	}
	local := strings.ToLower(address[:at])
	token, ok := strings.CutPrefix(local, MailPrefix)
	return token, ok && token != ""
}
