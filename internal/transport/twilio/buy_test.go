package twilio_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

const (
	address = "AD0123456789abcdef0123456789abcdef"
)

func phoneNumbers(list []twilio.AvailableNumber) string {
	var out []string
	for _, n := range list {
		out = append(out, n.PhoneNumber)
	}
	return fmt.Sprint(out)
}

func TestSearchNumbers(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()

	got, err := tr.SearchNumbers(ctx, twilio.NumberSearch{Country: "us"})
	if err != nil {
		t.Fatal(err)
	}
	if phoneNumbers(got) != "[+14155550100 +14155550101 +14155550102 +14155550103 +14155550104]" {
		t.Fatalf("US local = %v", phoneNumbers(got))
	}
	want := twilio.AvailableNumber{PhoneNumber: "+14155550100", FriendlyName: "(415) 555-0100", Locality: "San Francisco",
		Region: "CA", PostalCode: "94103", ISOCountry: "US", AddressRequirements: "none", Voice: true, SMS: true, MMS: true}
	if got[0] != want {
		t.Errorf("first number = %+v, want %+v", got[0], want)
	}

	for _, c := range []struct {
		name string
		s    twilio.NumberSearch
		want string
	}{
		{"contains", twilio.NumberSearch{Country: "US", Contains: "5550103"}, "[+14155550103]"},
		{"contains with *", twilio.NumberSearch{Country: "US", Contains: "555010*"}, "[+14155550100 +14155550101 +14155550102 +14155550103 +14155550104]"},
		{"area code", twilio.NumberSearch{Country: "US", AreaCode: "415", Limit: 2}, "[+14155550100 +14155550101]"},
		{"another area code", twilio.NumberSearch{Country: "US", AreaCode: "212"}, "[]"},
		{"toll-free", twilio.NumberSearch{Country: "US", Type: twilio.NumberTypeTollFree, SMS: true, Voice: true}, "[+18005550100]"},
		{"toll-free with MMS", twilio.NumberSearch{Country: "US", Type: twilio.NumberTypeTollFree, MMS: true}, "[]"},
		{"GB mobile", twilio.NumberSearch{Country: "GB", Type: twilio.NumberTypeMobile, SMS: true}, "[+447700900100]"},
		{"DE local with SMS", twilio.NumberSearch{Country: "DE", Type: twilio.NumberTypeLocal, SMS: true}, "[]"},
		{"DE local", twilio.NumberSearch{Country: "DE", Type: twilio.NumberTypeLocal, Voice: true}, "[+4930900100]"},
		// Twilio's 404 for a country or type it has nothing of: no numbers.
		{"unknown country", twilio.NumberSearch{Country: "FR"}, "[]"},
		{"type not sold there", twilio.NumberSearch{Country: "GB", Type: twilio.NumberTypeTollFree}, "[]"},
	} {
		got, err := tr.SearchNumbers(ctx, c.s)
		if err != nil || got == nil || phoneNumbers(got) != c.want {
			t.Errorf("%s: %v, %v; want %s", c.name, phoneNumbers(got), err, c.want)
		}
	}

	de, _ := tr.SearchNumbers(ctx, twilio.NumberSearch{Country: "DE"})
	if len(de) != 1 || de[0].AddressRequirements != "local" || de[0].SMS || !de[0].Voice || de[0].Locality != "Berlin" {
		t.Errorf("DE local = %+v", de)
	}

	// Numbers put up for sale are found; Limit bounds what is answered.
	for i := range 30 {
		peer.AddAvailableNumber("US", "local", newYorkNumber(fmt.Sprintf("+1212555%04d", i)))
	}
	if got, err := tr.SearchNumbers(ctx, twilio.NumberSearch{Country: "US", AreaCode: "212"}); err != nil || len(got) != 20 {
		t.Errorf("default limit: %d numbers, %v; want 20", len(got), err)
	}
	if got, err := tr.SearchNumbers(ctx, twilio.NumberSearch{Country: "US", Limit: 1000}); err != nil || len(got) != 35 {
		t.Errorf("limit 1000: %d numbers, %v; want all 35", len(got), err)
	}

	for _, bad := range []twilio.NumberSearch{{Country: "USA"}, {Country: "US", Type: "landline"}, {Country: "US", AreaCode: "41"}} {
		if _, err := tr.SearchNumbers(ctx, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func newYorkNumber(number string) twiliotest.AvailableNumberSpec {
	return twiliotest.AvailableNumberSpec{PhoneNumber: number, Locality: "New York", Region: "NY", Voice: true, SMS: true}
}

func TestBuyNumber(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()

	p := twilio.Purchase{PhoneNumber: "+14155550101", FriendlyName: "Support line",
		SMSURL: "https://sb.example/twilio/sms", VoiceURL: "https://sb.example/twilio/voice",
		StatusCallback: "https://sb.example/twilio/status"}
	b, err := tr.BuyNumber(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.SID, "PN") || b.PhoneNumber != p.PhoneNumber || !b.Voice || !b.SMS || !b.MMS || b.AddressRequirements != "none" {
		t.Fatalf("BuyNumber = %+v", b)
	}
	bought := peer.Bought()
	want := twiliotest.IncomingNumber{SID: b.SID, PhoneNumber: p.PhoneNumber, SMS: true, MMS: true, Voice: true,
		FriendlyName: "Support line", SMSURL: p.SMSURL, SMSMethod: "POST", VoiceURL: p.VoiceURL, VoiceMethod: "POST",
		StatusCallback: p.StatusCallback, AddressRequirements: "none"}
	if len(bought) != 1 || !reflect.DeepEqual(bought[0], want) {
		t.Fatalf("peer bought %+v, want %+v", bought, want)
	}
	// The account holds it: no longer for sale, found among its numbers.
	if got, _ := tr.SearchNumbers(ctx, twilio.NumberSearch{Country: "US", Contains: "5550101"}); len(got) != 0 {
		t.Errorf("a bought number is still for sale: %v", phoneNumbers(got))
	}
	if in, found, err := tr.FindIncomingNumber(ctx, p.PhoneNumber); err != nil || !found || in.SID != b.SID {
		t.Errorf("FindIncomingNumber = %+v, %v, %v", in, found, err)
	}

	// Twilio's refusals, told apart.
	for _, c := range []struct {
		name string
		p    twilio.Purchase
		want error
		code int
	}{
		{"bought already", twilio.Purchase{PhoneNumber: p.PhoneNumber}, twilio.ErrNumberUnavailable, 21422},
		{"never for sale", twilio.Purchase{PhoneNumber: "+14155559999"}, twilio.ErrNumberUnavailable, 21422},
		{"no bundle", twilio.Purchase{PhoneNumber: "+4930900100", AddressSID: address}, twilio.ErrNumberNeedsBundle, 21649},
		{"no address", twilio.Purchase{PhoneNumber: "+12125550000"}, twilio.ErrNumberNeedsAddress, 21631},
	} {
		if c.name == "no address" {
			peer.AddAvailableNumber("US", "local", twiliotest.AvailableNumberSpec{PhoneNumber: "+12125550000", Voice: true, AddressRequirements: "any"})
		}
		_, err := tr.BuyNumber(ctx, c.p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if re := registrationError(t, err); re.Code != c.code || re.Status != http.StatusBadRequest {
			t.Errorf("%s: %+v, want code %d", c.name, re, c.code)
		}
	}
	// With what they need they are bought: the bundle covers the address too.
	bundle := peer.AddApprovedBundle("DE", "local", "business")
	if b, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+4930900100", BundleSID: bundle}); err != nil || b.AddressRequirements != "local" || b.SMS {
		t.Errorf("DE with a bundle: %+v, %v", b, err)
	}
	if _, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+12125550000", AddressSID: address}); err != nil {
		t.Errorf("with an address: %v", err)
	}
	got := peer.Bought()
	if len(got) != 3 || got[1].BundleSID != bundle || got[2].AddressSID != address {
		t.Errorf("bought = %+v", got)
	}

	if _, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "4155550102"}); err == nil {
		t.Error("a number not in E.164: no error")
	}
}

func TestBuyNumberErrorsKeepURLsOut(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	hook := "https://user:hunter2secret@sb.example/twilio/sms"
	path := "/2010-04-01/Accounts/" + twiliotest.AccountSID + "/IncomingPhoneNumbers.json"
	peer.FailNext(path, 400, 21402, "Url "+hook+" is not valid")
	_, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+14155550100", SMSURL: hook})
	if re := registrationError(t, err); re.Code != 21402 || strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("error %v repeats the webhook URL", err)
	}

	peer.Storm(1, http.StatusServiceUnavailable)
	var tmp *transport.Temporary
	if _, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+14155550100"}); !errors.As(err, &tmp) {
		t.Errorf("a 503: %v (%T), want *transport.Temporary", err, err)
	}
	bad := twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: "wrongwrongwrong"})
	_, err = bad.SearchNumbers(ctx, twilio.NumberSearch{Country: "US"})
	if f := transport.AsFailure(err); f == nil || f.Code != twilio.CodeProviderAuthFailed || strings.Contains(err.Error(), "wrongwrongwrong") {
		t.Errorf("bad credentials: %v (%T), want PROVIDER_AUTH_FAILED", err, err)
	}
}

func TestReleaseNumber(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	b, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+447700900100"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.ReleaseNumber(ctx, b.SID); err != nil {
		t.Fatalf("ReleaseNumber: %v", err)
	}
	if len(peer.Bought()) != 0 {
		t.Errorf("the peer still holds %+v", peer.Bought())
	}
	if _, found, _ := tr.FindIncomingNumber(ctx, b.PhoneNumber); found {
		t.Error("a released number is still the account's")
	}
	// Released twice: Twilio no longer knows it, which is no error.
	if err := tr.ReleaseNumber(ctx, b.SID); err != nil {
		t.Errorf("released again: %v", err)
	}
	// For sale again, and bought again under a new sid.
	got, err := tr.SearchNumbers(ctx, twilio.NumberSearch{Country: "GB", Type: twilio.NumberTypeMobile})
	if err != nil || phoneNumbers(got) != "[+447700900100]" {
		t.Fatalf("after release: %v, %v", phoneNumbers(got), err)
	}
	again, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+447700900100"})
	if err != nil || again.SID == b.SID {
		t.Fatalf("bought again: %+v, %v (first sid %s)", again, err, b.SID)
	}
	if err := tr.ReleaseNumber(ctx, "../Calls/CA0123"); err == nil {
		t.Error("a sid that is not a PN sid: no error")
	}
	peer.Storm(1, http.StatusServiceUnavailable)
	var tmp *transport.Temporary
	if err := tr.ReleaseNumber(ctx, again.SID); !errors.As(err, &tmp) {
		t.Errorf("a 503: %v (%T), want *transport.Temporary", err, err)
	}
}

func TestNumberRequirements(t *testing.T) {
	t.Parallel()
	_, tr := newTransport(t)
	ctx := context.Background()

	de, err := tr.NumberRequirements(ctx, "de", twilio.NumberTypeLocal)
	if err != nil {
		t.Fatal(err)
	}
	want := []twilio.Requirement{
		{Name: "Business", Type: twilio.RequirementText, Fields: []string{"business_name", "business_website"}, EndUserType: "business"},
		{Name: "Commercial Registry Excerpt", Type: twilio.RequirementDocument,
			Description:       "An excerpt from the commercial register (Handelsregisterauszug) showing the business name.",
			AcceptedDocuments: []string{"commercial_registrar_excerpt"}, Fields: []string{"business_name"}, EndUserType: "business"},
		{Name: "Business Address", Type: twilio.RequirementAddress,
			Description:       "The business's address in the area of the number's area code.",
			AcceptedDocuments: []string{"address"}, Fields: []string{"address_sids"}, EndUserType: "business"},
	}
	if !reflect.DeepEqual(de, want) {
		t.Errorf("DE local =\n%+v\nwant\n%+v", de, want)
	}

	gb, err := tr.NumberRequirements(ctx, "GB", twilio.NumberTypeMobile)
	if err != nil || len(gb) != 2 || gb[0].Type != twilio.RequirementText || gb[0].EndUserType != "individual" ||
		fmt.Sprint(gb[0].Fields) != "[first_name last_name]" || gb[1].Type != twilio.RequirementDocument ||
		gb[1].Name != "Proof of Identity" || fmt.Sprint(gb[1].AcceptedDocuments) != "[passport government_issued_document]" {
		t.Errorf("GB mobile = %+v, %v", gb, err)
	}
	// Every type of a country.
	if all, err := tr.NumberRequirements(ctx, "GB", ""); err != nil || len(all) != 2 {
		t.Errorf("GB = %+v, %v", all, err)
	}
	for _, c := range [][2]string{{"US", twilio.NumberTypeLocal}, {"DE", twilio.NumberTypeMobile}, {"GB", twilio.NumberTypeTollFree}} {
		if got, err := tr.NumberRequirements(ctx, c[0], c[1]); err != nil || got == nil || len(got) != 0 {
			t.Errorf("%s %s = %+v, %v; want none", c[0], c[1], got, err)
		}
	}
	for _, c := range [][2]string{{"Germany", ""}, {"DE", "landline"}} {
		if _, err := tr.NumberRequirements(ctx, c[0], c[1]); err == nil {
			t.Errorf("%s %q: no error", c[0], c[1])
		}
	}
}

func TestNumberRequirementsErrors(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	peer.FailNext("/v2/RegulatoryCompliance/Regulations", 400, 20001, "Invalid IsoCountry")
	if re := registrationError(t, func() error { _, err := tr.NumberRequirements(ctx, "DE", ""); return err }()); re.Code != 20001 {
		t.Errorf("a 400: %+v", re)
	}
	peer.Storm(1, http.StatusTooManyRequests)
	var tmp *transport.Temporary
	if _, err := tr.NumberRequirements(ctx, "DE", ""); !errors.As(err, &tmp) || tmp.RetryAfter != twiliotest.StormRetryAfter {
		t.Errorf("a 429: %v (%T), want *transport.Temporary with Retry-After", err, err)
	}
}
