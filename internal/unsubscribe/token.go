// Package unsubscribe is one-click unsubscribe from broadcast email (RFC 8058, RFC 2369): the
// signed token of each recipient's link and address, the List-Unsubscribe headers that carry
// them, the page served at {dashboard_url}/unsubscribe/{token} whose POST puts the address on
// the project's suppression list, and the same for a mail to unsubscribe-{token}@{inbound host}
// (docs/email.md).
package unsubscribe

import (
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

// A token names one broadcast recipient (a broadcast_contacts row, "bcc_" and 20 base62
// characters), whose row says the project, mode, broadcast and address: the address is not in
// the link, which mail scanners and proxies log. It is short enough to be the local part of
// the mailto: address (RFC 5321: 64 octets, with the "unsubscribe-" prefix), and written in
// lower-case base32, because relays may change a local part's case.
//
// Its bytes are the version, the id's 119 bits (15 bytes) and a truncated HMAC-SHA256.
const (
	version    = 2
	idPrefix   = "bcc_"
	idChars    = 20
	idBytes    = 15
	tagSize    = 12 // 96 bits: forging one takes 2^96 tries, each a request
	tokenBytes = 1 + idBytes + tagSize
)

var (
	encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
	// idLimit is 62^20: one past the largest id.
	idLimit = new(big.Int).Exp(big.NewInt(62), big.NewInt(idChars), nil)
)

// Signer makes and checks tokens with one installation key.
type Signer struct{ key []byte }

// NewSigner returns a Signer for key (every replica needs the same one).
func NewSigner(key []byte) *Signer { return &Signer{key: key} }

// Token is the token of the broadcast recipient recipientID; the same id always gives the same
// token, so the headers of a message can be shown again as they were sent.
func (s *Signer) Token(recipientID string) (string, error) {
	n, ok := decodeID(recipientID)
	if !ok {
		return "", errors.New("a broadcast recipient's id is " + idPrefix + " and 20 base62 characters")
	}
	b := make([]byte, 1+idBytes, tokenBytes)
	b[0] = version
	n.FillBytes(b[1 : 1+idBytes])
	return encoding.EncodeToString(append(b, s.tag(b)...)), nil
}

// Parse returns the broadcast recipient a token made by this installation's key names. Upper
// case reads as lower case.
func (s *Signer) Parse(token string) (recipientID string, err error) {
	token = strings.ToLower(token)
	b, err := encoding.DecodeString(token)
	// A token has one spelling: re-encoding refuses strings whose unused last bits differ.
	if err != nil || len(b) != tokenBytes || encoding.EncodeToString(b) != token {
		return "", ErrInvalid
	}
	body, tag := b[:1+idBytes], b[1+idBytes:]
	if !hmac.Equal(tag, s.tag(body)) || body[0] != version {
		return "", ErrInvalid
	}
	n := new(big.Int).SetBytes(body[1:])
	if n.Cmp(idLimit) >= 0 {
		return "", ErrInvalid
	}
	return encodeID(n), nil
}

func (s *Signer) tag(body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("unsubscribe\x00"))
	m.Write(body)
	return m.Sum(nil)[:tagSize]
}

func decodeID(id string) (*big.Int, bool) {
	digits, ok := strings.CutPrefix(id, idPrefix)
	if !ok || len(digits) != idChars {
		return nil, false
	}
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

func encodeID(n *big.Int) string {
	digits := make([]byte, idChars)
	n = new(big.Int).Set(n)
	base, d := big.NewInt(62), new(big.Int)
	for i := idChars - 1; i >= 0; i-- {
		n.DivMod(n, base, d)
		digits[i] = randid.Base62[d.Int64()]
	}
	return idPrefix + string(digits)
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
