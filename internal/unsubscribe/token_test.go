package unsubscribe

import (
	"strings"
	"testing"
)

func TestToken(t *testing.T) {
	t.Parallel()
	s := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	const id = "bcc_0aZ9xY8wV7uT6sR5qP4o"
	token, err := s.Token(id)
	if err != nil {
		t.Fatal(err)
	}
	// The mailto: address's local part fits RFC 5321's 64 octets, in a case relays may change.
	if n := len(MailPrefix + token); n > 64 || token != strings.ToLower(token) {
		t.Fatalf("token %q: local part of %d octets", token, n)
	}
	if again, _ := s.Token(id); again != token {
		t.Fatalf("the same recipient's tokens differ: %q, %q", token, again)
	}
	other, _ := s.Token("bcc_0aZ9xY8wV7uT6sR5qP4p")
	otherKey, _ := NewSigner([]byte("another key, another installation")).Token(id)
	highest, _ := s.Token("bcc_" + strings.Repeat("z", 20))
	lowest, _ := s.Token("bcc_" + strings.Repeat("0", 20))

	raw, _ := encoding.DecodeString(token)
	altered := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 1
		return encoding.EncodeToString(b)
	}
	wrongVersion := func() string {
		b := append([]byte(nil), raw[:1+untimed.bytes]...)
		b[0] = 1
		return encoding.EncodeToString(append(b, s.tag(b)...))
	}()
	// The last character carries one unused bit: a second spelling of the same bytes.
	last := strings.IndexByte("abcdefghijklmnopqrstuvwxyz234567", token[len(token)-1])
	respelled := token[:len(token)-1] + string("abcdefghijklmnopqrstuvwxyz234567"[last^1])

	for _, tc := range []struct {
		name, token, want string
	}{
		{"valid", token, id},
		{"upper case", strings.ToUpper(token), id},
		{"another recipient", other, "bcc_0aZ9xY8wV7uT6sR5qP4p"},
		{"the highest id", highest, "bcc_" + strings.Repeat("z", 20)},
		{"the lowest id", lowest, "bcc_" + strings.Repeat("0", 20)},
		{"empty", "", ""},
		{"truncated", token[:len(token)-4], ""},
		{"extended", token + "aa", ""},
		{"altered version", altered(0), ""},
		{"altered id", altered(5), ""},
		{"altered tag", altered(len(raw) - 1), ""},
		{"signed version 1", wrongVersion, ""},
		{"second spelling", respelled, ""},
		{"signed by another key", otherKey, ""},
		{"not base32", "!" + token[1:], ""},
		{"padded", token + "===", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Parse(tc.token)
			if tc.want == "" {
				if err != ErrInvalid {
					t.Fatalf("Parse = %q, %v; want ErrInvalid", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// A recipient of a broadcast made since ids carry their time: 26 characters.
	timed := "bcc_0Xyz12AB" + "0aZ9xY8wV7uT6sR5qP"
	timedToken, err := s.Token(timed)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(MailPrefix + timedToken); n > 64 || timedToken != strings.ToLower(timedToken) {
		t.Fatalf("token %q: local part of %d octets", timedToken, n)
	}
	highestTimed, _ := s.Token("bcc_" + strings.Repeat("z", 26))
	rawTimed, _ := encoding.DecodeString(timedToken)
	for _, tc := range []struct {
		name, token, want string
	}{
		{"timed", timedToken, timed},
		{"timed, upper case", strings.ToUpper(timedToken), timed},
		{"the highest timed id", highestTimed, "bcc_" + strings.Repeat("z", 26)},
		{"timed, truncated", timedToken[:len(timedToken)-1], ""},
		{"timed, altered id", func() string { b := append([]byte(nil), rawTimed...); b[3] ^= 1; return encoding.EncodeToString(b) }(), ""},
		{"timed, another key", func() string { v, _ := NewSigner([]byte("another key, another installation")).Token(timed); return v }(), ""},
	} {
		got, err := s.Parse(tc.token)
		if tc.want == "" {
			if err != ErrInvalid {
				t.Errorf("%s: Parse = %q, %v; want ErrInvalid", tc.name, got, err)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%s: Parse = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "bc_0aZ9xY8wV7uT6sR5qP4o", "bcc_" + strings.Repeat("z", 25), "bcc_" + strings.Repeat("z", 27), "bcc_0aZ9xY8wV7uT6sR5qP4", "bcc_0aZ9xY8wV7uT6sR5qP4o0", "bcc_0aZ9xY8wV7uT6sR5qP4-"} {
		if _, err := s.Token(bad); err == nil {
			t.Errorf("Token(%q) made a token", bad)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	signer := NewSigner([]byte("k"))
	const id = "bcc_0aZ9xY8wV7uT6sR5qP4o"
	token, _ := signer.Token(id)
	for _, tc := range []struct {
		name, mailHost, own, want string
	}{
		{"link and address", "MX.Example.com", "",
			"<https://sb.example.com/unsubscribe/" + token + ">, <mailto:unsubscribe-" + token + "@mx.example.com>"},
		{"no inbound host", "", "", "<https://sb.example.com/unsubscribe/" + token + ">"},
		{"the broadcast's own link", "mx.example.com", "https://acme.example/u?e=ana%40example.com",
			"<https://acme.example/u?e=ana%40example.com>, <mailto:unsubscribe-" + token + "@mx.example.com>"},
	} {
		s := NewService(signer, nil, nil, "https://sb.example.com/", tc.mailHost)
		h, err := s.Headers(id, tc.own)
		if err != nil {
			t.Fatal(err)
		}
		if h["List-Unsubscribe"] != tc.want || h["List-Unsubscribe-Post"] != "List-Unsubscribe=One-Click" {
			t.Errorf("%s: headers %v, want List-Unsubscribe %q", tc.name, h, tc.want)
		}
	}
	if got, ok := TokenOfAddress("Unsubscribe-" + strings.ToUpper(token) + "@mx.example.com"); !ok || got != token {
		t.Errorf("TokenOfAddress = %q, %v", got, ok)
	}
	for _, a := range []string{"unsubscribe-@mx.example.com", "news@mx.example.com", "unsubscribe-" + token} {
		if got, ok := TokenOfAddress(a); ok {
			t.Errorf("TokenOfAddress(%q) = %q", a, got)
		}
	}
}

func TestOwnURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://acme.example/unsubscribe?e={email}&b={broadcastId}&r={recipientId}": "",
		"https://acme.example/u/{recipientId}":                                       "",
		"http://acme.example/u":                                                      "https",
		"mailto:u@acme.example":                                                      "absolute",
		"/u/{email}":                                                                 "absolute",
		"https://user:pw@acme.example/u":                                             "credentials",
		"https://acme.example/u?a=1,2":                                               "commas",
		"https://acme.example/u>":                                                    "angle",
		"https://acme.example/" + strings.Repeat("a", MaxURLLength):                  "at most",
	} {
		if got := CheckURL(raw); (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("CheckURL(%q) = %q, want %q", raw, got, want)
		}
	}
	got := ExpandURL("https://acme.example/u?e={email}&b={broadcastId}&r={recipientId}",
		Recipient{ID: "bcc_1", Broadcast: "bc_2", Address: "ana+news@example.com"})
	if got != "https://acme.example/u?e=ana%2Bnews%40example.com&b=bc_2&r=bcc_1" {
		t.Errorf("ExpandURL = %q", got)
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
