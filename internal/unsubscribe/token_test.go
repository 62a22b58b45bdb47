package unsubscribe

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestToken(t *testing.T) {
	t.Parallel()
	issued := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(now time.Time) *Signer {
		s := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
		s.now = func() time.Time { return now }
		return s
	}
	rcpt := Recipient{Project: "acme", Broadcast: "bc_01", Address: "ana@example.com"}
	token := at(issued).Token(rcpt)
	testToken := at(issued).Token(Recipient{Project: "acme", TestMode: true, Broadcast: "bc_01", Address: "ana@example.com"})
	otherProject := at(issued).Token(Recipient{Project: "acme2", Broadcast: "bc_01", Address: "ana@example.com"})
	otherKey := NewSigner([]byte("another key, another installation"))
	otherKey.now = func() time.Time { return issued }

	raw, _ := base64.RawURLEncoding.DecodeString(token)
	altered := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 1
		return base64.RawURLEncoding.EncodeToString(b)
	}
	// The project's name moved into the broadcast id: same bytes but one separator.
	shifted := strings.Replace(string(raw), "acme\x00bc", "acm\x00ebc", 1)

	for _, tc := range []struct {
		name  string
		token string
		now   time.Time
		want  *Recipient
	}{
		{"valid", token, issued, &rcpt},
		{"valid months later", token, issued.Add(300 * 24 * time.Hour), &rcpt},
		{"test mode kept", testToken, issued, &Recipient{Project: "acme", TestMode: true, Broadcast: "bc_01", Address: "ana@example.com"}},
		{"other project is its own token", otherProject, issued, &Recipient{Project: "acme2", Broadcast: "bc_01", Address: "ana@example.com"}},
		{"expired", token, issued.Add(Lifetime + time.Second), nil},
		{"issued in the future", token, issued.Add(-2 * time.Hour), nil},
		{"empty", "", issued, nil},
		{"truncated", token[:len(token)-4], issued, nil},
		{"truncated to the header", token[:12], issued, nil},
		{"altered time", altered(5), issued, nil},
		{"altered mode", altered(9), issued, nil},
		{"altered project", altered(10), issued, nil},
		{"altered address", altered(len(raw) - tagSize - 1), issued, nil},
		{"altered tag", altered(len(raw) - 1), issued, nil},
		{"moved separator", base64.RawURLEncoding.EncodeToString([]byte(shifted)), issued, nil},
		{"signed by another key", otherKey.Token(rcpt), issued, nil},
		{"padded", token + "=", issued, nil},
		{"not base64", "!" + token[1:], issued, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := at(tc.now).Parse(tc.token)
			if tc.want == nil {
				if err != ErrInvalid {
					t.Fatalf("Parse = %+v, %v; want ErrInvalid", got, err)
				}
				return
			}
			if err != nil || got != *tc.want {
				t.Fatalf("Parse = %+v, %v; want %+v", got, err, *tc.want)
			}
		})
	}
	if token == otherProject || strings.Contains(token, "/") || strings.Contains(token, "+") || len(token) > 120 {
		t.Errorf("token %q: want URL-safe, compact, distinct per project", token)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	s := NewSigner([]byte("k"))
	rcpt := Recipient{Project: "acme", Broadcast: "bc_01", Address: "ana@example.com"}
	h := s.Headers("https://sb.example.com/", rcpt)
	url := strings.TrimSuffix(strings.TrimPrefix(h["List-Unsubscribe"], "<https://sb.example.com/unsubscribe/"), ">")
	if got, err := s.Parse(url); err != nil || got != rcpt {
		t.Errorf("List-Unsubscribe %q names %+v, %v", h["List-Unsubscribe"], got, err)
	}
	if h["List-Unsubscribe-Post"] != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q", h["List-Unsubscribe-Post"])
	}
}

func TestTextHasEveryKey(t *testing.T) {
	t.Parallel()
	for l, keys := range text {
		for k := range text["en"] {
			if keys[k] == "" {
				t.Errorf("%s has no %q", l, k)
			}
		}
		if len(keys) != len(text["en"]) {
			t.Errorf("%s has %d keys, en %d", l, len(keys), len(text["en"]))
		}
	}
}
