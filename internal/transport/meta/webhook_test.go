package meta_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport/meta"
)

// hookSign is the X-Hub-Signature-256 Meta sends with body, computed here rather than through
// metatest so that the two do not vouch for each other.
func hookSign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestVerifySignature(t *testing.T) {
	t.Parallel()
	secret := []byte("6a3bd1c0f8e24c5e9d7b2a41f0c3e8d7")
	body := hookTestdata(t, "wa_text_context.json")
	good := hookSign(secret, body)
	for _, tc := range []struct {
		name   string
		secret []byte
		body   []byte
		header string
		want   error
	}{
		{"signed", secret, body, good, nil},
		{"upper-case hex and prefix", secret, body, strings.ToUpper(good), nil},
		{"surrounding spaces", secret, body, " " + good + " ", nil},
		{"missing", secret, body, "", meta.ErrWebhookUnsigned},
		{"blank", secret, body, "   ", meta.ErrWebhookUnsigned},
		{"another secret", []byte("another"), body, good, meta.ErrWebhookSignature},
		{"a body changed by one byte", secret, append([]byte(" "), body...), good, meta.ErrWebhookSignature},
		{"sha1, the old header's prefix", secret, body, "sha1=" + strings.TrimPrefix(good, "sha256="), meta.ErrWebhookSignature},
		{"no prefix", secret, body, strings.TrimPrefix(good, "sha256="), meta.ErrWebhookSignature},
		{"prefix only", secret, body, "sha256=", meta.ErrWebhookSignature},
		{"not hex", secret, body, "sha256=" + strings.Repeat("zz", 32), meta.ErrWebhookSignature},
		{"truncated", secret, body, good[:len(good)-2], meta.ErrWebhookSignature},
		{"an empty secret", nil, body, hookSign(nil, body), meta.ErrWebhookSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := meta.VerifySignature(tc.secret, tc.body, tc.header); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyHandshake(t *testing.T) {
	t.Parallel()
	const token = "switchboard-verify-7f3c"
	query := func(mode, verifyToken, challenge string) url.Values {
		q := url.Values{}
		for k, v := range map[string]string{"hub.mode": mode, "hub.verify_token": verifyToken, "hub.challenge": challenge} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return q
	}
	for _, tc := range []struct {
		name    string
		query   url.Values
		token   string
		want    string
		wantErr error
	}{
		{"subscribe", query("subscribe", token, "1158201444"), token, "1158201444", nil},
		{"another token", query("subscribe", "guess", "1158201444"), token, "", meta.ErrWebhookHandshakeToken},
		{"no token", query("subscribe", "", "1158201444"), token, "", meta.ErrWebhookHandshakeToken},
		{"no token configured", query("subscribe", "", "1158201444"), "", "", meta.ErrWebhookHandshakeToken},
		{"another mode", query("unsubscribe", token, "1158201444"), token, "", meta.ErrWebhookHandshakeMode},
		{"no mode", query("", token, "1158201444"), token, "", meta.ErrWebhookHandshakeMode},
		{"no challenge", query("subscribe", token, ""), token, "", meta.ErrWebhookHandshakeChallenge},
		{"markup in the challenge", query("subscribe", token, "<script>alert(1)</script>"), token, "", meta.ErrWebhookHandshakeChallenge},
		{"a challenge too long", query("subscribe", token, strings.Repeat("1", 257)), token, "", meta.ErrWebhookHandshakeChallenge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := meta.VerifyHandshake(tc.query, tc.token)
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("got %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
