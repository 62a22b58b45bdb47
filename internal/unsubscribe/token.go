// Package unsubscribe is one-click unsubscribe from broadcast email (RFC 8058): the signed token
// of each recipient's link, the List-Unsubscribe headers that carry it, and the page served at
// {dashboard_url}/unsubscribe/{token} whose POST puts the address on the project's suppression
// list (docs/email.md).
package unsubscribe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// KeyName and KeySize name the shared secret tokens are signed with (postgres.SharedSecret).
const (
	KeyName = "unsubscribe_token_key"
	KeySize = 32
)

// Lifetime is how long a token is honoured after the mail that carried it was sent: mail is
// read, and its links followed, long after it arrived.
const Lifetime = 365 * 24 * time.Hour

// Recipient is what a token names: one address of one broadcast of a project, in its mode
// (test and live keep separate suppression lists).
type Recipient struct {
	Project   string
	TestMode  bool
	Broadcast string
	Address   string
}

// ErrInvalid is a token that was not made by this installation's key (forged, altered,
// truncated), or has expired.
var ErrInvalid = errors.New("invalid unsubscribe token")

const (
	version = 1
	tagSize = 16 // a truncated HMAC-SHA256: 128 bits
	// header is the version, the issue time (Unix seconds) and the flags.
	headerSize = 1 + 8 + 1
)

// Signer makes and checks tokens with one installation key.
type Signer struct {
	key []byte
	now func() time.Time
}

// NewSigner returns a Signer for key (every replica needs the same one).
func NewSigner(key []byte) *Signer { return &Signer{key: key, now: time.Now} }

// Token is the URL-safe token of r, issued now.
func (s *Signer) Token(r Recipient) string {
	b := make([]byte, headerSize, headerSize+len(r.Project)+len(r.Broadcast)+len(r.Address)+2+tagSize)
	b[0] = version
	binary.BigEndian.PutUint64(b[1:9], uint64(s.now().Unix()))
	if r.TestMode {
		b[9] = 1
	}
	b = append(b, r.Project...)
	b = append(b, 0)
	b = append(b, r.Broadcast...)
	b = append(b, 0)
	b = append(b, r.Address...)
	b = append(b, s.tag(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Parse returns what token names when this installation's key signed it less than Lifetime ago.
func (s *Signer) Parse(token string) (Recipient, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) < headerSize+2+tagSize {
		return Recipient{}, ErrInvalid
	}
	body, tag := b[:len(b)-tagSize], b[len(b)-tagSize:]
	if !hmac.Equal(tag, s.tag(body)) || body[0] != version || body[9] > 1 {
		return Recipient{}, ErrInvalid
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(body[1:9])), 0)
	if age := s.now().Sub(issued); age > Lifetime || age < -time.Hour {
		return Recipient{}, ErrInvalid
	}
	parts := strings.Split(string(body[headerSize:]), "\x00")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Recipient{}, ErrInvalid
	}
	return Recipient{Project: parts[0], TestMode: body[9] == 1, Broadcast: parts[1], Address: parts[2]}, nil
}

func (s *Signer) tag(body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("unsubscribe\x00"))
	m.Write(body)
	return m.Sum(nil)[:tagSize]
}

// Path is where the page of a token is served, under the dashboard URL.
const Path = "/unsubscribe/"

// Headers are the header fields of a broadcast's email to r: List-Unsubscribe with the one-click
// URL under baseURL, and List-Unsubscribe-Post (RFC 8058).
func (s *Signer) Headers(baseURL string, r Recipient) map[string]string {
	return map[string]string{
		"List-Unsubscribe":      "<" + strings.TrimSuffix(baseURL, "/") + Path + s.Token(r) + ">",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
	}
}
