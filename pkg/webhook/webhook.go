// Package webhook signs and verifies Switchboard's webhook deliveries. Receivers import it to check
// the X-Service-Signature header before they act on a delivery:
//
//	err := webhook.Verify(r.Header.Get(webhook.SignatureHeader), body, secret, 5*time.Minute, time.Now())
//
// The header is `t=<unix seconds>,v1=<hex>,v2=<hex>`, with only the enabled schemes present and one
// timestamp shared by both. Scheme v1 is HMAC-SHA256 of the raw body; scheme v2 is HMAC-SHA256 of
// "<t>.<body>", so the timestamp is signed too and old deliveries can be refused.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of every delivery.
const (
	SignatureHeader = "X-Service-Signature"
	EventHeader     = "X-Service-Event"
)

// Signature versions a webhook can be on.
const (
	V1   = "v1"
	V1V2 = "v1+v2"
	V2   = "v2"
)

// Errors of Verify.
var (
	ErrNoSignature = errors.New("webhook: no v1 or v2 signature in the header")
	ErrMismatch    = errors.New("webhook: signature does not match the body")
	ErrTimestamp   = errors.New("webhook: timestamp missing, malformed or outside the tolerance")
)

// Sign returns the X-Service-Signature value for body sent at t under version (v1, v1+v2 or v2).
func Sign(secret, body []byte, t time.Time, version string) (string, error) {
	ts := strconv.FormatInt(t.Unix(), 10)
	parts := []string{"t=" + ts}
	switch version {
	case V1:
		parts = append(parts, "v1="+mac(secret, body))
	case V1V2:
		parts = append(parts, "v1="+mac(secret, body), "v2="+mac(secret, signedV2(ts, body)))
	case V2:
		parts = append(parts, "v2="+mac(secret, signedV2(ts, body)))
	default:
		return "", fmt.Errorf("webhook: unknown signature version %q", version)
	}
	return strings.Join(parts, ","), nil
}

// Verify checks header against body and secret the tolerant way: it splits the header into
// key=value pairs on the first "=", prefers v2 when present (checking that t is within tolerance
// of now), and otherwise checks v1. A tolerance of 0 skips the timestamp check.
func Verify(header string, body, secret []byte, tolerance time.Duration, now time.Time) error {
	fields := map[string][]string{}
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok {
			fields[k] = append(fields[k], v)
		}
	}
	if sigs, ok := fields["v2"]; ok {
		ts := first(fields["t"])
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return ErrTimestamp
		}
		if tolerance > 0 {
			if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
				return ErrTimestamp
			}
		}
		return anyMatches(sigs, mac(secret, signedV2(ts, body)))
	}
	if sigs, ok := fields["v1"]; ok {
		return anyMatches(sigs, mac(secret, body))
	}
	return ErrNoSignature
}

func anyMatches(sigs []string, want string) error {
	for _, s := range sigs {
		if hmac.Equal([]byte(strings.ToLower(s)), []byte(want)) {
			return nil
		}
	}
	return ErrMismatch
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func signedV2(ts string, body []byte) []byte {
	b := make([]byte, 0, len(ts)+1+len(body))
	b = append(b, ts...)
	b = append(b, '.')
	return append(b, body...)
}

func mac(secret, msg []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}
