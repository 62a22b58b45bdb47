package app_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// numbersProject is twilioProject with a test key besides its live one, and a GET of a list's
// items that fails the test unless it answers 200.
func numbersProject(t *testing.T) (in *instance, acme, live, test string, items func(path, key string) []any) {
	t.Helper()
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in = start(t, publicAtListener, rcv.trusted())
	acme, live = twilioProject(t, in, peer, rcv)
	test = newKey(t, in, acme, apikey.Test)
	items = func(path, key string) []any {
		t.Helper()
		r := in.get(path, key)
		if r.status != 200 {
			t.Fatalf("GET %s = %d %v", path, r.status, r.body)
		}
		return r.body["items"].([]any)
	}
	return in, acme, live, test, items
}

// TestAvailableNumbers: test keys see the sandbox's documented numbers at no price; live keys
// see what the project's twilio account sells, priced by the PriceList's numberPrices (a
// country and type it does not price are not for sale); bad queries are 400 on their field.
func TestAvailableNumbers(t *testing.T) {
	in, acme, live, test, items := numbersProject(t)
	got := items("/v1/phone-numbers/available?countryCode=us&capabilities=sms,voice&limit=3", test)
	if len(got) != 3 || got[0].(map[string]any)["phoneNumber"] != "+15005550300" ||
		got[0].(map[string]any)["pricing"].(map[string]any)["monthlyPrice"] != 0.0 {
		t.Fatalf("sandbox numbers %v", got)
	}
	if got := items("/v1/phone-numbers/available?countryCode=US&type=tollFree&contains=0325", test); len(got) != 1 ||
		got[0].(map[string]any)["phoneNumber"] != "+15005550325" {
		t.Errorf("sandbox toll-free containing 0325: %v", got)
	}
	if got := items("/v1/phone-numbers/available?countryCode=US&type=mobile&capabilities=mms", test); len(got) != 0 {
		t.Errorf("sandbox mobile numbers with MMS: %v", got)
	}
	if got := items("/v2/numbers/available?countryCode=DE", test); len(got) != 0 {
		t.Errorf("sandbox numbers in DE: %v", got)
	}

	// Live: nothing is for sale until the PriceList prices it.
	if got := items("/v1/phone-numbers/available?countryCode=US", live); len(got) != 0 {
		t.Errorf("unpriced numbers for sale: %v", got)
	}
	in.createObjects(t, &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"}, Spec: v1alpha1.PriceListSpec{
		Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+1", Price: "0.01"}},
		NumberPrices: []v1alpha1.NumberPrice{{Country: "US", Type: "local", Monthly: "1.15"},
			{Country: "*", Type: "*", Monthly: "4.00", Upfront: "2.50"}}}})
	waitFor(t, func() bool { return len(items("/v1/phone-numbers/available?countryCode=US", live)) > 0 })
	got = items("/v1/phone-numbers/available?countryCode=US&contains=4155550102", live)
	if len(got) != 1 {
		t.Fatalf("live US local numbers containing 4155550102: %v", got)
	}
	n := got[0].(map[string]any)
	if n["phoneNumber"] != "+14155550102" || n["locality"] == "" || n["capabilities"].(map[string]any)["mms"] != true ||
		n["pricing"].(map[string]any)["monthlyPrice"] != 1.15 || n["pricing"].(map[string]any)["upfrontPrice"] != 0.0 {
		t.Errorf("live number %v", n)
	}
	got = items("/v2/numbers/available?countryCode=GB&type=mobile", live)
	if len(got) != 1 || got[0].(map[string]any)["pricing"].(map[string]any)["monthlyPrice"] != 4.0 ||
		got[0].(map[string]any)["pricing"].(map[string]any)["upfrontPrice"] != 2.5 {
		t.Errorf("live GB mobile numbers %v", got)
	}
	if got := items("/v1/phone-numbers/available?countryCode=FR", live); len(got) != 0 {
		t.Errorf("numbers in a country the account does not sell: %v", got)
	}

	for _, q := range []string{"", "countryCode=USA", "countryCode=US&type=landline", "countryCode=US&capabilities=fax",
		"countryCode=US&limit=0", "countryCode=US&limit=101", "countryCode=US&contains=abc"} {
		for _, base := range []string{"/v1/phone-numbers/available", "/v2/numbers/available"} {
			if r := in.get(base+"?"+q, test); r.status != 400 || r.body["code"] != "invalid_request" {
				t.Errorf("GET %s?%s = %d %v", base, q, r.status, r.body)
			}
		}
	}
}

// TestNumberRequirements: test keys read the sandbox's table; live keys the twilio account's
// regulations (the peer's: a German business needs its name, an address and a register
// excerpt), grouped by kind of end user, documents named as the client's documentType; a country
// that asks nothing has no group; bad queries are 400.
func TestNumberRequirements(t *testing.T) {
	in, _, live, test, items := numbersProject(t)
	kinds := func(group any) []string {
		var out []string
		for _, rt := range group.(map[string]any)["requirementTypes"].([]any) {
			out = append(out, rt.(map[string]any)["type"].(string))
		}
		return out
	}
	for _, key := range []string{test, live} {
		de := items("/v1/phone-numbers/requirements?countryCode=de&type=local", key)
		if len(de) != 1 || de[0].(map[string]any)["countryCode"] != "DE" || de[0].(map[string]any)["phoneNumberType"] != "local" ||
			fmt.Sprint(kinds(de[0])) != "[textual document address]" && fmt.Sprint(kinds(de[0])) != "[textual address document]" {
			t.Errorf("DE local requirements: %v", de)
		}
		for _, rt := range de[0].(map[string]any)["requirementTypes"].([]any) {
			if m := rt.(map[string]any); m["type"] == "document" && fmt.Sprint(m["acceptanceCriteria"]) != "map[allowedValues:[business_registration]]" {
				t.Errorf("the register excerpt's documents: %v", m)
			}
		}
		gb := items("/v1/phone-numbers/requirements?countryCode=GB&type=mobile", key)
		if len(gb) != 1 || fmt.Sprint(kinds(gb[0])) != "[textual document]" {
			t.Errorf("GB mobile requirements: %v", gb)
		}
		if us := items("/v1/phone-numbers/requirements?countryCode=US", key); len(us) != 0 {
			t.Errorf("US requirements: %v", us)
		}
	}
	for _, q := range []string{"", "countryCode=DEU", "countryCode=DE&type=landline"} {
		if r := in.get("/v1/phone-numbers/requirements?"+q, test); r.status != 400 || r.body["code"] != "invalid_request" {
			t.Errorf("GET requirements?%s = %d %v", q, r.status, r.body)
		}
	}
}
