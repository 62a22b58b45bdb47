package console

import (
	"regexp"
	"testing"
)

var verb = regexp.MustCompile(`%[sd]`)

// Every language has every key, with the same placeholders in the same order, so no page shows
// a key or a %!s(MISSING).
func TestEveryLanguageHasEveryText(t *testing.T) {
	for l, texts := range text {
		for key, en := range text["en"] {
			s, ok := texts[key]
			if !ok {
				t.Errorf("%s lacks %q", l, key)
				continue
			}
			if a, b := verb.FindAllString(s, -1), verb.FindAllString(en, -1); len(a) != len(b) {
				t.Errorf("%s %q has placeholders %v, English %v", l, key, a, b)
			}
		}
		if len(texts) != len(text["en"]) {
			t.Errorf("%s has %d texts, English %d", l, len(texts), len(text["en"]))
		}
	}
}

// TestCookiesAreSecureButOnDev: only plain http on a loopback host (switchboard dev) gets
// cookies without Secure.
func TestCookiesAreSecureButOnDev(t *testing.T) {
	for address, want := range map[string]bool{
		"http://127.0.0.1:8080":           false,
		"http://localhost:8080/":          false,
		"http://[::1]:8080":               false,
		"https://127.0.0.1:8443":          true,
		"https://switchboard.example.com": true,
		"http://switchboard.example.com":  true,
		"http://[::]:8080":                true,
		"":                                true,
	} {
		if got := SecureAt(address); got != want {
			t.Errorf("SecureAt(%q) = %v, want %v", address, got, want)
		}
	}
}
