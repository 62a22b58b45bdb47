package message

import (
	"testing"

	"github.com/switchboard-io/switchboard/internal/risk"
)

// TestMayLink: every text in which the link finder finds a link passes the cheap check, and
// plain texts do not.
func TestMayLink(t *testing.T) {
	for _, text := range []string{
		"Your verification code is 123456. It expires in 10 minutes.",
		"See you at 5. Thanks!",
		"Hello",
	} {
		if mayLink(text) {
			t.Errorf("mayLink(%q) = true", text)
		}
	}
	for _, text := range []string{
		"Track it at bit.ly/abc", "https://example.com", "http://localhost:8080/x", "Visit Example.COM today",
		"go to www.shop.example.org/deal.", "10.0.0.1/admin", "café.example.fr", "(see acme.io)",
	} {
		if len(risk.Features("sms", "", text, "", "").Links) == 0 {
			t.Errorf("the link finder finds no link in %q", text)
		}
		if !mayLink(text) {
			t.Errorf("mayLink(%q) = false", text)
		}
	}
}
