package invitation

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

// The create request becomes the spec with its defaults; every refusal names its field.
func TestSpecOf(t *testing.T) {
	t.Parallel()
	spec, errs := specOf(Input{})
	if len(errs) != 0 || spec.ConnectionType != v1alpha1.ConnectionWhatsApp || spec.ExpiresInDays != 7 {
		t.Errorf("defaults = %+v %v", spec, errs)
	}
	spec, errs = specOf(Input{AllowedPhoneCountries: ptr([]string{"br", "MX", "BR"}), PhoneNumberID: ptr("106540352242922"),
		ClientName: ptr(strings.Repeat("ñ", 100)), ExpiresInDays: ptr(30)})
	if len(errs) != 0 || !slices.Equal(spec.AllowedPhoneCountries, []string{"BR", "MX"}) || spec.ExpiresInDays != 30 {
		t.Errorf("countries in upper case, once; 100 characters (not bytes) = %+v %v", spec, errs)
	}
	for name, c := range map[string]struct {
		in   Input
		path string
	}{
		"101 characters":           {Input{ClientName: ptr(strings.Repeat("ñ", 101))}, "clientName"},
		"a display name in email":  {Input{ClientEmail: ptr("Ana <ana@bakery.example>")}, "clientEmail"},
		"a local number":           {Input{ClientPhone: ptr("011 99999 0000")}, "clientPhone"},
		"0 days":                   {Input{ExpiresInDays: ptr(0)}, "expiresInDays"},
		"a country with a digit":   {Input{AllowedPhoneCountries: ptr([]string{"B1"})}, "allowedPhoneCountries[0]"},
		"an empty phone number id": {Input{PhoneNumberID: ptr("")}, "phoneNumberId"},
		"countries on messenger": {Input{ConnectionType: ptr("messenger"), AllowedPhoneCountries: ptr([]string{"BR"})},
			"allowedPhoneCountries"},
		"an unknown type": {Input{ConnectionType: ptr("instagram")}, "connectionType"},
	} {
		_, errs := specOf(c.in)
		if len(errs) != 1 || errs[0].Path != c.path {
			t.Errorf("%s: %v, want one error on %s", name, errs, c.path)
		}
	}
}
