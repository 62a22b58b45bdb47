package twilio_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// excerpt is a (tiny) PDF of a commercial register excerpt.
var excerpt = []byte("%PDF-1.4\n1 0 obj <</Type /Catalog>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n")

// deBusiness is a bundle for German local numbers of a business, as the peer's regulation asks.
func deBusiness(statusCallback string) twilio.BundleRequest {
	return twilio.BundleRequest{
		EndUserType: twilio.EndUserBusiness, Country: "de", NumberType: twilio.NumberTypeLocal,
		Email: "compliance@acme.example", StatusCallback: statusCallback,
		EndUser: twilio.EndUser{FriendlyName: "Acme GmbH",
			Attributes: map[string]string{"business_name": "Acme GmbH", "business_website": "https://acme.example"}},
		Address: &twilio.AddressInput{CustomerName: "Acme GmbH", Street: "Friedrichstraße 1", StreetSecondary: "3. OG",
			City: "Berlin", Region: "Berlin", PostalCode: "10117", ISOCountry: "de"},
		Documents: []twilio.SupportingDocumentInput{{Type: "commercial_registrar_excerpt",
			Attributes: map[string]string{"business_name": "Acme GmbH"}, File: excerpt, MimeType: "application/pdf"}},
	}
}

func TestCreateBundleBuysAGermanNumber(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	hook, callbacks := newReceiver(t)

	b, err := tr.CreateBundle(ctx, deBusiness(hook+"/twilio/bundles?tenant=acme"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.SID, "BU") || b.Status != twilio.BundlePendingReview || b.FailureReason != "" {
		t.Fatalf("CreateBundle = %+v", b)
	}

	// What the peer was given: the regulation, the end user, the address and both documents.
	got := peer.Bundles()
	if len(got) != 1 {
		t.Fatalf("peer bundles = %+v", got)
	}
	bu := got[0]
	addresses := peer.Registrations().Addresses
	if len(addresses) != 1 || addresses[0].IsoCountry != "DE" || addresses[0].City != "Berlin" {
		t.Fatalf("addresses = %+v", addresses)
	}
	if bu.SID != b.SID || bu.Status != twilio.BundlePendingReview || bu.RegulationSID != twiliotest.RegulationDELocalBusiness ||
		bu.ISOCountry != "DE" || bu.NumberType != "local" || bu.EndUserType != "business" || bu.EndUserKind != "business" ||
		bu.Email != "compliance@acme.example" || bu.AddressSID != addresses[0].SID {
		t.Errorf("peer bundle = %+v", bu)
	}
	if want := map[string]any{"business_name": "Acme GmbH", "business_website": "https://acme.example"}; !reflect.DeepEqual(bu.EndUserAttributes, want) {
		t.Errorf("end user attributes = %v", bu.EndUserAttributes)
	}
	if len(bu.Documents) != 2 || bu.Documents[0].Type != "commercial_registrar_excerpt" || bu.Documents[0].FileSize != len(excerpt) ||
		bu.Documents[0].MimeType != "application/pdf" || bu.Documents[0].Attributes["business_name"] != "Acme GmbH" ||
		bu.Documents[1].Type != "address" || bu.Documents[1].FileSize != 0 {
		t.Errorf("documents = %+v", bu.Documents)
	}

	// Not approved yet: the number is still refused, as it is without a bundle.
	buy := twilio.Purchase{PhoneNumber: "+4930900100", BundleSID: b.SID}
	for _, p := range []twilio.Purchase{{PhoneNumber: "+4930900100"}, buy} {
		if _, err := tr.BuyNumber(ctx, p); !errors.Is(err, twilio.ErrNumberNeedsBundle) {
			t.Fatalf("buy with bundle %q before approval: %v, want ErrNumberNeedsBundle", p.BundleSID, err)
		}
	}

	// A poller sees pending-review, then twilio-approved.
	if st, err := tr.BundleStatus(ctx, b.SID); err != nil || st.Status != twilio.BundlePendingReview {
		t.Fatalf("first poll = %+v, %v", st, err)
	}
	if st, err := tr.BundleStatus(ctx, b.SID); err != nil || st != (twilio.Bundle{SID: b.SID, Status: twilio.BundleApproved}) {
		t.Fatalf("second poll = %+v, %v", st, err)
	}
	cb := next(t, callbacks) // its signature verified with VerifySignature
	if cb.form.Get("BundleSid") != b.SID || cb.form.Get("Status") != twilio.BundleApproved ||
		cb.form.Get("AccountSid") != twiliotest.AccountSID || cb.form.Has("FailureReason") {
		t.Errorf("status callback = %v", cb.form)
	}

	// Without it still refused; with it bought.
	if _, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+4930900100"}); !errors.Is(err, twilio.ErrNumberNeedsBundle) {
		t.Errorf("without the bundle: %v, want ErrNumberNeedsBundle", err)
	}
	n, err := tr.BuyNumber(ctx, buy)
	if err != nil || n.PhoneNumber != "+4930900100" {
		t.Fatalf("with the approved bundle: %+v, %v", n, err)
	}
	if bought := peer.Bought(); len(bought) != 1 || bought[0].BundleSID != b.SID {
		t.Errorf("bought = %+v", bought)
	}
}

func TestBundleOfAnotherCountryDoesNotBuy(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	passport := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'J', 'F', 'I', 'F', 0}
	b, err := tr.CreateBundle(ctx, twilio.BundleRequest{EndUserType: twilio.EndUserIndividual, Country: "GB",
		NumberType: twilio.NumberTypeMobile, Email: "jane@example.org",
		EndUser: twilio.EndUser{Attributes: map[string]string{"first_name": "Jane", "last_name": "Doe"}},
		Documents: []twilio.SupportingDocumentInput{{Type: "passport", File: passport,
			Attributes: map[string]string{"first_name": "Jane", "last_name": "Doe"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tr.BundleStatus(ctx, b.SID); err != nil {
			t.Fatal(err)
		}
	}
	got := peer.Bundles()
	if len(got) != 1 || got[0].Status != twiliotest.BundleTwilioApproved || got[0].AddressSID != "" ||
		len(got[0].Documents) != 1 || got[0].Documents[0].MimeType != "image/jpeg" {
		t.Fatalf("peer bundles = %+v", got)
	}
	// An approved GB mobile bundle does not buy a DE local number.
	_, err = tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+4930900100", BundleSID: b.SID})
	if !errors.Is(err, twilio.ErrNumberNeedsBundle) {
		t.Fatalf("DE with a GB bundle: %v, want ErrNumberNeedsBundle", err)
	}
	if re := registrationError(t, err); re.Code != 21649 || !strings.Contains(re.Message, "GB mobile") {
		t.Errorf("refusal = %+v", re)
	}
}

func TestRejectedBundleReportsItsReason(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	hook, callbacks := newReceiver(t)
	const reason = "The commercial register excerpt is older than six months."
	peer.RejectBundles(reason)

	b, err := tr.CreateBundle(ctx, deBusiness(hook+"/bundles"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := tr.BundleStatus(ctx, b.SID); err != nil || st.Status != twilio.BundlePendingReview || st.FailureReason != "" {
		t.Fatalf("first poll = %+v, %v", st, err)
	}
	st, err := tr.BundleStatus(ctx, b.SID)
	if err != nil || st.Status != twilio.BundleRejected || st.FailureReason != reason {
		t.Fatalf("second poll = %+v, %v; want rejected with %q", st, err, reason)
	}
	cb := next(t, callbacks)
	if cb.form.Get("Status") != twilio.BundleRejected || cb.form.Get("FailureReason") != reason || cb.form.Get("BundleSid") != b.SID {
		t.Errorf("status callback = %v", cb.form)
	}
	if _, err := tr.BuyNumber(ctx, twilio.Purchase{PhoneNumber: "+4930900100", BundleSID: b.SID}); !errors.Is(err, twilio.ErrNumberNeedsBundle) {
		t.Errorf("buy with a rejected bundle: %v, want ErrNumberNeedsBundle", err)
	}

	// Approving again: the next bundle is approved.
	peer.RejectBundles("")
	b2, err := tr.CreateBundle(ctx, deBusiness(""))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = tr.BundleStatus(ctx, b2.SID)
	if st, err := tr.BundleStatus(ctx, b2.SID); err != nil || st.Status != twilio.BundleApproved {
		t.Errorf("after RejectBundles(\"\"): %+v, %v", st, err)
	}
}

func TestCreateBundleRefusals(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()

	// Twilio's refusals are *RegistrationErrors with its code.
	noType := deBusiness("")
	noType.EndUserType = ""
	_, err := tr.CreateBundle(ctx, noType)
	if re := registrationError(t, err); re.Status != http.StatusBadRequest || re.Code != 20001 || !strings.Contains(re.Message, "Type") {
		t.Errorf("no end user type: %+v", re)
	}
	noEmail := deBusiness("")
	noEmail.Email = ""
	_, err = tr.CreateBundle(ctx, noEmail)
	if re := registrationError(t, err); re.Code != 20001 || !strings.Contains(re.Message, "Email") {
		t.Errorf("no email: %+v", re)
	}
	if len(peer.Bundles()) != 0 {
		t.Fatalf("bundles made: %+v", peer.Bundles())
	}

	// A document without its file: the bundle is made but Twilio's evaluation refuses it.
	noFile := deBusiness("")
	noFile.Documents[0].File = nil
	_, err = tr.CreateBundle(ctx, noFile)
	if re := registrationError(t, err); re.Code != 20001 || !strings.Contains(re.Message, "no file") {
		t.Errorf("no file: %+v", re)
	}
	if got := peer.Bundles(); len(got) != 1 || got[0].Status != twiliotest.BundleDraft || !strings.Contains(err.Error(), got[0].SID) {
		t.Errorf("after a refused submission: %+v (%v)", got, err)
	}
	// A file Twilio does not take, refused by the upload.
	text := deBusiness("")
	text.Documents[0].File, text.Documents[0].MimeType = []byte("just text"), "text/plain"
	_, err = tr.CreateBundle(ctx, text)
	if re := registrationError(t, err); re.Code != 20001 || !strings.Contains(re.Message, "text/plain") {
		t.Errorf("a text file: %+v", re)
	}
	// An end user missing a field the regulation asks for.
	noName := deBusiness("")
	delete(noName.EndUser.Attributes, "business_website")
	_, err = tr.CreateBundle(ctx, noName)
	if re := registrationError(t, err); !strings.Contains(re.Message, "business_website") {
		t.Errorf("no website: %+v", re)
	}

	// Refused before asking Twilio.
	for _, c := range []struct {
		name string
		b    twilio.BundleRequest
	}{
		{"country", twilio.BundleRequest{EndUserType: "business", Country: "Germany"}},
		{"number type", twilio.BundleRequest{EndUserType: "business", Country: "DE", NumberType: "landline"}},
	} {
		var re *twilio.RegistrationError
		if _, err := tr.CreateBundle(ctx, c.b); err == nil || errors.As(err, &re) {
			t.Errorf("%s: %v, want a local error", c.name, err)
		}
	}
	if _, err := tr.BundleStatus(ctx, "BUnope"); err == nil {
		t.Error("BundleStatus of a malformed sid: no error")
	}
	_, err = tr.BundleStatus(ctx, "BU0123456789abcdef0123456789abcdef")
	if re := registrationError(t, err); re.Status != http.StatusNotFound || re.Code != 20404 {
		t.Errorf("unknown bundle: %+v", re)
	}

	// 5xx and 429 are temporary, as for the other calls.
	peer.Storm(1, http.StatusServiceUnavailable)
	var tmp *transport.Temporary
	if _, err := tr.CreateBundle(ctx, deBusiness("")); !errors.As(err, &tmp) {
		t.Errorf("a 503: %v (%T), want *transport.Temporary", err, err)
	}
	peer.FailNext("/v2/RegulatoryCompliance/SupportingDocuments", http.StatusTooManyRequests, 20429, "Too Many Requests")
	if _, err := tr.CreateBundle(ctx, deBusiness("")); !errors.As(err, &tmp) {
		t.Errorf("a 429 of the upload: %v (%T), want *transport.Temporary", err, err)
	}
}

func TestCreateAddress(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	a, err := tr.CreateAddress(ctx, twilio.AddressInput{CustomerName: "Jane Doe", Street: "1 High Street",
		City: "London", Region: "London", PostalCode: "SW1A 1AA", ISOCountry: "gb"})
	if err != nil {
		t.Fatal(err)
	}
	got := peer.Registrations().Addresses
	if !strings.HasPrefix(a.SID, "AD") || a.Validated || a.Verified || len(got) != 1 || got[0].SID != a.SID || got[0].IsoCountry != "GB" {
		t.Errorf("CreateAddress = %+v; peer has %+v", a, got)
	}
	_, err = tr.CreateAddress(ctx, twilio.AddressInput{CustomerName: "Jane Doe", City: "London", Region: "London",
		PostalCode: "SW1A 1AA", ISOCountry: "GB"})
	if re := registrationError(t, err); re.Code != 20001 || !strings.Contains(re.Message, "Street") {
		t.Errorf("no street: %+v", re)
	}
	if _, err := tr.CreateAddress(ctx, twilio.AddressInput{ISOCountry: "Britain"}); err == nil {
		t.Error("a country that is not ISO: no error")
	}
}
