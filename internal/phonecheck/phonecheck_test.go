package phonecheck_test

import (
	"testing"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/phonecheck"
)

func TestInspect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, e164, country, national, line, carrier string
		valid                                      bool
	}{
		{"+34600000000", "+34600000000", "ES", "600 00 00 00", phonecheck.Mobile, "Vodafone", true},
		{"+1 (415) 555-2671", "+14155552671", "US", "(415) 555-2671", phonecheck.Unknown, "", true}, // NANP: mobile or fixed
		{"+442071838750", "+442071838750", "GB", "020 7183 8750", phonecheck.Landline, "", true},
		{"+18005550199", "+18005550199", "US", "(800) 555-0199", phonecheck.TollFree, "", true},
		{"+4915123456789", "+4915123456789", "DE", "01512 3456789", phonecheck.Mobile, "T-Mobile", true},
		// Invalid numbers still name the region they parse to: too short to be assigned, and the
		// UK's drama range (Ofcom keeps +44 7700 900000–900999 for fiction).
		{"+12125550", "+12125550", "US", "", phonecheck.Unknown, "", false},
		{"+447700900123", "+447700900123", "GB", "", phonecheck.Unknown, "", false},
		{"+80012345678", "+80012345678", "", "1234 5678", phonecheck.TollFree, "", true}, // no region: international freephone
	} {
		r, err := phonecheck.Inspect(c.in)
		if err != nil || r.PhoneNumber != c.e164 || r.CountryCode != c.country || r.NationalFormat != c.national ||
			r.LineType != c.line || r.Carrier.Name != c.carrier || r.Carrier.Type != c.line || r.ValidNumber != c.valid {
			t.Errorf("Inspect(%q) = %+v, %v", c.in, r, err)
		}
	}
	for _, bad := range []string{"", "14155552671", "+", "+abc", "+1" + string(make([]byte, 70))} {
		_, err := phonecheck.Inspect(bad)
		e := apperror.As(err)
		if e == nil || e.Code != "invalid_request" {
			t.Errorf("Inspect(%q) = %v, want a 400 on phoneNumber", bad, err)
		}
	}
}
