package addr

import "testing"

func TestForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s                                     string
		e164, email, scoped, chat, pageScoped bool
	}{
		{s: "+14155551234", e164: true},
		{s: "+1415555123456789"}, // 16 digits: too long for E.164
		{s: "+0415555123"},       // no country code starts with 0
		{s: "ada@example.com", email: true},
		{s: "ada@localhost"}, // no domain
		{s: "US.1349a8f2c", scoped: true},
		{s: "123456789", chat: true},
		{s: "-1001234567890", chat: true},         // a Telegram channel
		{s: "0123456"},                            // a national number, not a chat id
		{s: "1234567890123456", pageScoped: true}, // 16 digits: a page-scoped id only
		{s: "hello"},
	}
	for _, tc := range tests {
		got := [5]bool{IsE164(tc.s), IsEmail(tc.s), IsScopedUserID(tc.s), IsChatID(tc.s), IsPageScopedID(tc.s)}
		if got != [5]bool{tc.e164, tc.email, tc.scoped, tc.chat, tc.pageScoped} {
			t.Errorf("%q: e164, email, scoped, chat, page-scoped = %v", tc.s, got)
		}
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"+1 (500) 555-0100": "+15005550100",
		"+1 500-555-0100":   "+15005550100",
		"+1.500.555.0100":   "+15005550100",
		"15005550100":       "15005550100", // bare digits stay a chat id
		"ada@example.com":   "ada@example.com",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	if Key("Ana@Example.com") != "ana@example.com" || Key("+15005550100") != "+15005550100" || Key("US.AbCdEf12") != "US.AbCdEf12" {
		t.Errorf("Key: %q %q %q", Key("Ana@Example.com"), Key("+15005550100"), Key("US.AbCdEf12"))
	}
}
