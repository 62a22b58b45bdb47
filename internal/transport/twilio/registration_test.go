package twilio_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

func acmeBrand(entityType string) twilio.BrandRegistration {
	return twilio.BrandRegistration{
		ID: "brand_1", DisplayName: "Acme", CompanyName: "Acme Widgets Inc", EntityType: entityType,
		EIN: "12-3456789", Vertical: "TECHNOLOGY", Email: "ops@acme.example", Phone: "+14155550199",
		Street: "1 Market St", City: "San Francisco", State: "CA", PostalCode: "94105", Country: "US",
		Website: "https://acme.example", FirstName: "Ada", LastName: "Lovelace",
		StockExchange: "NASDAQ", StockSymbol: "ACME",
	}
}

func acmeCampaign(brandSid string) twilio.CampaignRegistration {
	return twilio.CampaignRegistration{
		ID: "cmp_1", BrandSid: brandSid, UseCase: "MIXED",
		Description:      "Order updates and occasional offers for Acme customers who signed up.",
		MessageFlow:      "Customers opt in by ticking a box at checkout on https://acme.example.",
		SampleMessages:   []string{"Acme: your order 123 has shipped. Reply STOP to opt out.", "Acme: 10% off this week. Reply STOP to opt out."},
		HasEmbeddedLinks: true, SubscriberOptIn: true, DirectLending: false, AgeGated: false, HasEmbeddedPhone: false,
		HelpMessage:   "Acme: help at https://acme.example/help. Reply STOP to opt out.",
		OptInKeywords: []string{"START"}, OptOutKeywords: []string{"STOP", "END"},
	}
}

var (
	bundleSID   = regexp.MustCompile(`^BU[0-9a-f]{32}$`)
	brandSID    = regexp.MustCompile(`^BN[0-9a-f]{32}$`)
	campaignSID = regexp.MustCompile(`^QE[0-9a-f]{32}$`)
	mgSID       = regexp.MustCompile(`^MG[0-9a-f]{32}$`)
)

// registrationError is the *RegistrationError err carries, failing the test when there is none.
func registrationError(t *testing.T, err error) *twilio.RegistrationError {
	t.Helper()
	var re *twilio.RegistrationError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *RegistrationError", err, err)
	}
	return re
}

func TestRegisterBrandMakesTheTrustHubObjects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		entityType, businessType, companyType, brandType string
		stock                                            bool
	}{
		{"PRIVATE_PROFIT", "Corporation", "private", "STANDARD", false},
		{"PUBLIC_PROFIT", "Corporation", "public", "STANDARD", true},
		{"NON_PROFIT", "Non-profit Corporation", "non-profit", "STANDARD", false},
		{"GOVERNMENT", "Government", "government", "STANDARD", false},
		{"SOLE_PROPRIETOR", "Sole Proprietorship", "sole-proprietor", "SOLE_PROPRIETOR", false},
	}
	for _, tc := range cases {
		t.Run(tc.entityType, func(t *testing.T) {
			t.Parallel()
			peer, tr := newTransport(t)
			b := acmeBrand(tc.entityType)
			ref, err := tr.RegisterBrand(context.Background(), b)
			if err != nil {
				t.Fatalf("RegisterBrand: %v", err)
			}
			if !brandSID.MatchString(ref.BrandSid) || !bundleSID.MatchString(ref.CustomerProfileSid) ||
				!bundleSID.MatchString(ref.TrustProductSid) || ref.CustomerProfileSid == ref.TrustProductSid {
				t.Fatalf("ref = %+v", ref)
			}
			got := peer.Registrations()

			if len(got.EndUsers) != 3 || len(got.Addresses) != 1 || len(got.SupportingDocuments) != 1 {
				t.Fatalf("made %d end users, %d addresses, %d documents; want 3, 1, 1", len(got.EndUsers), len(got.Addresses), len(got.SupportingDocuments))
			}
			users := map[string]twiliotest.EndUser{}
			for _, e := range got.EndUsers {
				users[e.Type] = e
				if !strings.Contains(e.FriendlyName, b.ID) {
					t.Errorf("end user %s FriendlyName %q does not name the brand", e.Type, e.FriendlyName)
				}
			}
			business := users[twiliotest.EndUserBusinessInformation]
			wantBusiness := map[string]any{
				"business_name": "Acme Widgets Inc", "business_identity": "direct_customer", "business_type": tc.businessType,
				"business_industry": "TECHNOLOGY", "business_registration_identifier": "EIN",
				"business_registration_number": "12-3456789", "business_regions_of_operation": "USA_AND_CANADA",
				"website_url": "https://acme.example",
			}
			if !reflect.DeepEqual(business.Attributes, wantBusiness) {
				t.Errorf("business information = %v, want %v", business.Attributes, wantBusiness)
			}
			rep := users[twiliotest.EndUserAuthorizedRep]
			wantRep := map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "ops@acme.example",
				"phone_number": "+14155550199", "business_title": "Authorized representative", "job_position": "Director"}
			if !reflect.DeepEqual(rep.Attributes, wantRep) {
				t.Errorf("authorized representative = %v, want %v", rep.Attributes, wantRep)
			}
			a2p := users[twiliotest.EndUserA2PMessagingProfile]
			wantA2P := map[string]any{"company_type": tc.companyType}
			if tc.stock {
				wantA2P["stock_exchange"], wantA2P["stock_ticker"] = "NASDAQ", "ACME"
			}
			if !reflect.DeepEqual(a2p.Attributes, wantA2P) {
				t.Errorf("A2P messaging profile = %v, want %v", a2p.Attributes, wantA2P)
			}

			addr := got.Addresses[0]
			if addr.CustomerName != "Acme Widgets Inc" || addr.Street != "1 Market St" || addr.City != "San Francisco" ||
				addr.Region != "CA" || addr.PostalCode != "94105" || addr.IsoCountry != "US" {
				t.Errorf("address = %+v", addr)
			}
			doc := got.SupportingDocuments[0]
			if doc.Type != twiliotest.DocumentCustomerProfileAddr || !reflect.DeepEqual(doc.Attributes, map[string]any{"address_sids": addr.SID}) {
				t.Errorf("supporting document = %+v, want the address %s", doc, addr.SID)
			}

			wantProfile := twiliotest.Bundle{SID: ref.CustomerProfileSid, FriendlyName: got.CustomerProfiles[0].FriendlyName,
				Email: "ops@acme.example", PolicySID: twiliotest.CustomerProfilePolicySID, Status: twiliotest.BundlePendingReview,
				Assigned: []string{business.SID, rep.SID, doc.SID}}
			if len(got.CustomerProfiles) != 1 || !reflect.DeepEqual(got.CustomerProfiles[0], wantProfile) {
				t.Errorf("customer profiles = %+v, want [%+v]", got.CustomerProfiles, wantProfile)
			}
			wantProduct := twiliotest.Bundle{SID: ref.TrustProductSid, FriendlyName: got.TrustProducts[0].FriendlyName,
				Email: "ops@acme.example", PolicySID: twiliotest.A2PTrustProductPolicySID, Status: twiliotest.BundlePendingReview,
				Assigned: []string{a2p.SID, ref.CustomerProfileSid}}
			if len(got.TrustProducts) != 1 || !reflect.DeepEqual(got.TrustProducts[0], wantProduct) {
				t.Errorf("trust products = %+v, want [%+v]", got.TrustProducts, wantProduct)
			}
			for _, name := range []string{wantProfile.FriendlyName, wantProduct.FriendlyName} {
				if !strings.Contains(name, b.ID) {
					t.Errorf("bundle FriendlyName %q does not name the brand", name)
				}
			}

			wantBrand := twiliotest.Brand{SID: ref.BrandSid, CustomerProfileBundleSID: ref.CustomerProfileSid,
				A2PProfileBundleSID: ref.TrustProductSid, BrandType: tc.brandType, Status: "PENDING"}
			if len(got.Brands) != 1 || !reflect.DeepEqual(got.Brands[0], wantBrand) {
				t.Errorf("brands = %+v, want [%+v]", got.Brands, wantBrand)
			}
		})
	}
}

func TestRegisterBrandFallsBackToTheDisplayName(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	b := acmeBrand("PRIVATE_PROFIT")
	b.CompanyName, b.Country = "", ""
	if _, err := tr.RegisterBrand(context.Background(), b); err != nil {
		t.Fatalf("RegisterBrand: %v", err)
	}
	got := peer.Registrations()
	for _, e := range got.EndUsers {
		if e.Type == twiliotest.EndUserBusinessInformation && e.Attributes["business_name"] != "Acme" {
			t.Errorf("business_name = %v, want the display name", e.Attributes["business_name"])
		}
	}
	if a := got.Addresses[0]; a.CustomerName != "Acme" || a.IsoCountry != "US" {
		t.Errorf("address = %+v, want Acme in US", a)
	}
}

func TestBrandStatus(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	approved, err := tr.RegisterBrand(ctx, acmeBrand("PRIVATE_PROFIT"))
	if err != nil {
		t.Fatal(err)
	}
	failed, err := tr.RegisterBrand(ctx, acmeBrand("NON_PROFIT"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := tr.BrandStatus(ctx, approved.BrandSid)
	if err != nil || !reflect.DeepEqual(st, twilio.BrandState{Status: "PENDING"}) {
		t.Fatalf("new brand = %+v, %v; want PENDING only", st, err)
	}

	peer.DecideBrand(approved.BrandSid, "APPROVED", "VERIFIED", 87, "")
	st, err = tr.BrandStatus(ctx, approved.BrandSid)
	if err != nil || st.Status != "APPROVED" || st.IdentityStatus != "VERIFIED" || st.Score == nil || *st.Score != 87 || st.FailureReason != "" {
		t.Fatalf("approved brand = %+v (score %v), %v", st, st.Score, err)
	}

	peer.DecideBrand(failed.BrandSid, "FAILED", "UNVERIFIED", -1, "The EIN does not match the business name.")
	st, err = tr.BrandStatus(ctx, failed.BrandSid)
	want := twilio.BrandState{Status: "FAILED", IdentityStatus: "UNVERIFIED", FailureReason: "The EIN does not match the business name."}
	if err != nil || !reflect.DeepEqual(st, want) {
		t.Fatalf("failed brand = %+v, %v; want %+v", st, err, want)
	}

	_, err = tr.BrandStatus(ctx, "BN00000000000000000000000000000000")
	if re := registrationError(t, err); re.Status != http.StatusNotFound || re.Code != 20404 {
		t.Fatalf("unknown brand: %+v", re)
	}
}

// registeredBrand is an approved brand on peer.
func registeredBrand(t *testing.T, peer *twiliotest.Server, tr *twilio.Transport) twilio.BrandRef {
	t.Helper()
	ref, err := tr.RegisterBrand(context.Background(), acmeBrand("PRIVATE_PROFIT"))
	if err != nil {
		t.Fatalf("RegisterBrand: %v", err)
	}
	peer.DecideBrand(ref.BrandSid, "APPROVED", "VERIFIED", 80, "")
	return ref
}

func TestCampaignLifecycle(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	brand := registeredBrand(t, peer, tr)
	c := acmeCampaign(brand.BrandSid)
	ref, err := tr.RegisterCampaign(ctx, c)
	if err != nil {
		t.Fatalf("RegisterCampaign: %v", err)
	}
	if !mgSID.MatchString(ref.MessagingServiceSid) || !campaignSID.MatchString(ref.CampaignSid) {
		t.Fatalf("ref = %+v", ref)
	}
	got := peer.Registrations()
	if len(got.Services) != 1 || got.Services[0].SID != ref.MessagingServiceSid || !strings.Contains(got.Services[0].FriendlyName, c.ID) {
		t.Fatalf("services = %+v", got.Services)
	}
	want := twiliotest.Campaign{SID: ref.CampaignSid, ServiceSID: ref.MessagingServiceSid, BrandSID: brand.BrandSid,
		Description: c.Description, MessageFlow: c.MessageFlow, Usecase: "MIXED", MessageSamples: c.SampleMessages,
		HasEmbeddedLinks: true, SubscriberOptIn: true, HelpMessage: c.HelpMessage,
		OptInKeywords: []string{"START"}, OptOutKeywords: []string{"STOP", "END"}, Status: "IN_PROGRESS"}
	if len(got.Campaigns) != 1 || !reflect.DeepEqual(got.Campaigns[0], want) {
		t.Fatalf("campaigns = %+v, want [%+v]", got.Campaigns, want)
	}

	st, err := tr.CampaignStatus(ctx, ref)
	if err != nil || st != (twilio.CampaignState{Status: "IN_PROGRESS"}) {
		t.Fatalf("new campaign = %+v, %v", st, err)
	}
	peer.DecideCampaign(ref.CampaignSid, "FAILED", "The sample messages do not match the use case.")
	st, err = tr.CampaignStatus(ctx, ref)
	if err != nil || st != (twilio.CampaignState{Status: "FAILED", FailureReason: "The sample messages do not match the use case."}) {
		t.Fatalf("failed campaign = %+v, %v", st, err)
	}
	peer.DecideCampaign(ref.CampaignSid, "VERIFIED", "")
	st, err = tr.CampaignStatus(ctx, ref)
	if err != nil || st != (twilio.CampaignState{Status: "VERIFIED"}) {
		t.Fatalf("verified campaign = %+v, %v", st, err)
	}

	if err := tr.DeleteCampaign(ctx, ref); err != nil {
		t.Fatalf("DeleteCampaign: %v", err)
	}
	if n := len(peer.Registrations().Campaigns); n != 0 {
		t.Fatalf("%d campaigns after the delete", n)
	}
	_, err = tr.CampaignStatus(ctx, ref)
	if re := registrationError(t, err); re.Status != http.StatusNotFound || re.Code != 20404 {
		t.Fatalf("deleted campaign: %+v", re)
	}
	if re := registrationError(t, tr.DeleteCampaign(ctx, ref)); re.Status != http.StatusNotFound {
		t.Fatalf("second delete: %+v", re)
	}
}

func TestAssignNumber(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	brand := registeredBrand(t, peer, tr)
	ref, err := tr.RegisterCampaign(ctx, acmeCampaign(brand.BrandSid))
	if err != nil {
		t.Fatal(err)
	}
	// Twilio's PhoneNumber filter matches part of a number: the longer one also matches, first.
	peer.AddIncomingNumber("+141555501009")
	pn := peer.AddIncomingNumber("+14155550100")

	got, err := tr.AssignNumber(ctx, ref.MessagingServiceSid, "+14155550100")
	if err != nil || got != pn {
		t.Fatalf("AssignNumber = %q, %v; want %s", got, err, pn)
	}
	if svc := peer.Registrations().Services[0]; !reflect.DeepEqual(svc.PhoneNumberSIDs, []string{pn}) {
		t.Fatalf("service numbers = %v, want [%s]", svc.PhoneNumberSIDs, pn)
	}
	// A number is in one Messaging Service at most: Twilio's refusal reaches the caller.
	other, err := tr.RegisterCampaign(ctx, acmeCampaign(brand.BrandSid))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.AssignNumber(ctx, other.MessagingServiceSid, "+14155550100")
	if re := registrationError(t, err); re.Status != http.StatusBadRequest || re.Code != 21712 || !strings.Contains(re.Message, "+14155550100") {
		t.Fatalf("number in another service: %+v", re)
	}

	if err := tr.UnassignNumber(ctx, ref.MessagingServiceSid, pn); err != nil {
		t.Fatalf("UnassignNumber: %v", err)
	}
	if svc := peer.Registrations().Services[0]; len(svc.PhoneNumberSIDs) != 0 {
		t.Fatalf("service numbers after unassign = %v", svc.PhoneNumberSIDs)
	}
	if re := registrationError(t, tr.UnassignNumber(ctx, ref.MessagingServiceSid, pn)); re.Status != http.StatusNotFound {
		t.Fatalf("second unassign: %+v", re)
	}

	_, err = tr.AssignNumber(ctx, ref.MessagingServiceSid, "+14155559999")
	re := registrationError(t, err)
	if re.Status != http.StatusNotFound || !strings.Contains(re.Message, "+14155559999") || !strings.Contains(re.Message, "not a phone number of this Twilio account") {
		t.Fatalf("unknown number: %+v", re)
	}
	for _, s := range peer.Registrations().Services {
		if len(s.PhoneNumberSIDs) != 0 {
			t.Fatalf("service %s got numbers %v", s.SID, s.PhoneNumberSIDs)
		}
	}
}

func TestRegistrationRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Twilio's 400 on a campaign", func(t *testing.T) {
		t.Parallel()
		peer, tr := newTransport(t)
		c := acmeCampaign(registeredBrand(t, peer, tr).BrandSid)
		c.SampleMessages = nil
		_, err := tr.RegisterCampaign(ctx, c)
		re := registrationError(t, err)
		if re.Status != http.StatusBadRequest || re.Code != 20001 || !strings.Contains(re.Message, "MessageSamples") {
			t.Fatalf("no samples: %+v", re)
		}
		if !strings.Contains(err.Error(), "MessageSamples") {
			t.Fatalf("error text %q lacks Twilio's message", err)
		}
	})

	t.Run("Twilio's 400 on the brand", func(t *testing.T) {
		t.Parallel()
		peer, tr := newTransport(t)
		peer.FailNext("/v1/a2p/BrandRegistrations", http.StatusBadRequest, 21701, "Brand registration refused: the business is not eligible.")
		ref, err := tr.RegisterBrand(ctx, acmeBrand("PRIVATE_PROFIT"))
		re := registrationError(t, err)
		want := twilio.RegistrationError{Status: 400, Code: 21701, Message: "Brand registration refused: the business is not eligible."}
		if *re != want {
			t.Fatalf("refusal = %+v, want %+v", *re, want)
		}
		// The bundles made before the refusal stay, and the caller learns of them.
		got := peer.Registrations()
		if ref.BrandSid != "" || ref.CustomerProfileSid != got.CustomerProfiles[0].SID || ref.TrustProductSid != got.TrustProducts[0].SID || len(got.Brands) != 0 {
			t.Fatalf("ref = %+v after a refused brand; peer has %+v", ref, got)
		}
	})

	t.Run("4xx without a code or message", func(t *testing.T) {
		t.Parallel()
		peer, tr := newTransport(t)
		peer.FailNext("/v1/CustomerProfiles", http.StatusConflict, 0, "")
		_, err := tr.RegisterBrand(ctx, acmeBrand("PRIVATE_PROFIT"))
		if re := registrationError(t, err); re.Status != http.StatusConflict || re.Message == "" {
			t.Fatalf("409: %+v", re)
		}
	})

	t.Run("5xx is temporary", func(t *testing.T) {
		t.Parallel()
		peer, tr := newTransport(t)
		peer.FailNext("/v1/TrustProducts", http.StatusServiceUnavailable, 20503, "Service Unavailable")
		_, err := tr.RegisterBrand(ctx, acmeBrand("PRIVATE_PROFIT"))
		var tmp *transport.Temporary
		var re *twilio.RegistrationError
		if !errors.As(err, &tmp) || errors.As(err, &re) {
			t.Fatalf("503: %v (%T), want transport.Temporary", err, err)
		}
	})

	t.Run("unknown entity type", func(t *testing.T) {
		t.Parallel()
		peer, tr := newTransport(t)
		if _, err := tr.RegisterBrand(ctx, acmeBrand("PARTNERSHIP")); err == nil {
			t.Fatal("PARTNERSHIP registered")
		}
		if got := peer.Registrations(); len(got.CustomerProfiles) != 0 {
			t.Fatalf("Twilio was asked: %+v", got)
		}
	})
}

func TestRegistrationBadCredentials(t *testing.T) {
	t.Parallel()
	peer, _ := newTransport(t)
	peer.AddIncomingNumber("+14155550100")
	bad := twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: "wrongwrongwrong"})
	ctx := context.Background()
	calls := map[string]error{}
	_, calls["RegisterBrand"] = bad.RegisterBrand(ctx, acmeBrand("PRIVATE_PROFIT"))
	_, calls["BrandStatus"] = bad.BrandStatus(ctx, "BN00000000000000000000000000000000")
	_, calls["RegisterCampaign"] = bad.RegisterCampaign(ctx, acmeCampaign("BN00000000000000000000000000000000"))
	_, calls["AssignNumber"] = bad.AssignNumber(ctx, serviceSID, "+14155550100")
	calls["UnassignNumber"] = bad.UnassignNumber(ctx, serviceSID, "PN00000000000000000000000000000000")
	for name, err := range calls {
		f := transport.AsFailure(err)
		var re *twilio.RegistrationError
		if f == nil || f.Code != twilio.CodeProviderAuthFailed || errors.As(err, &re) {
			t.Errorf("%s: %v (%T), want PROVIDER_AUTH_FAILED", name, err, err)
		}
		if err != nil && strings.Contains(err.Error(), "wrongwrongwrong") {
			t.Errorf("%s: the error repeats the auth token", name)
		}
	}
}

// peerCall sends a request to the peer as curl would to Twilio and reads Twilio's answer.
func peerCall(t *testing.T, peer *twiliotest.Server, method, path string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, peer.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(twiliotest.AccountSID, twiliotest.AuthToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
		}
	}
	return resp.StatusCode, body
}

// TestPeerValidatesRegistration checks the peer refuses what Twilio refuses, so the transport's
// tests would catch a flow Twilio would not take.
func TestPeerValidatesRegistration(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	mk := func(path string, form url.Values) string {
		t.Helper()
		status, body := peerCall(t, peer, http.MethodPost, path, form)
		if status != http.StatusCreated {
			t.Fatalf("POST %s = %d %v", path, status, body)
		}
		return body["sid"].(string)
	}
	refused := func(name, method, path string, form url.Values, status, code int) {
		t.Helper()
		got, body := peerCall(t, peer, method, path, form)
		if got != status || body["code"] != float64(code) || body["message"] == "" || body["status"] != float64(status) {
			t.Errorf("%s: %d %v, want %d with code %d", name, got, body, status, code)
		}
	}
	profile := mk("/v1/CustomerProfiles", url.Values{"FriendlyName": {"p"}, "Email": {"a@b.example"}, "PolicySid": {twiliotest.CustomerProfilePolicySID}})
	product := mk("/v1/TrustProducts", url.Values{"FriendlyName": {"t"}, "Email": {"a@b.example"}, "PolicySid": {twiliotest.A2PTrustProductPolicySID}})
	a2p := mk("/v1/EndUsers", url.Values{"FriendlyName": {"a"}, "Type": {twiliotest.EndUserA2PMessagingProfile}, "Attributes": {`{"company_type":"private"}`}})

	refused("profile with the trust product's policy", "POST", "/v1/CustomerProfiles",
		url.Values{"FriendlyName": {"p"}, "Email": {"a@b.example"}, "PolicySid": {twiliotest.A2PTrustProductPolicySID}}, 400, 20001)
	refused("profile without Email", "POST", "/v1/CustomerProfiles",
		url.Values{"FriendlyName": {"p"}, "PolicySid": {twiliotest.CustomerProfilePolicySID}}, 400, 20001)
	refused("end user of an unknown type", "POST", "/v1/EndUsers", url.Values{"FriendlyName": {"x"}, "Type": {"individual"}}, 400, 20001)
	refused("attributes not JSON", "POST", "/v1/EndUsers",
		url.Values{"FriendlyName": {"x"}, "Type": {twiliotest.EndUserAuthorizedRep}, "Attributes": {"first_name=Ada"}}, 400, 20001)
	refused("assignment of an unknown sid", "POST", "/v1/CustomerProfiles/"+profile+"/EntityAssignments",
		url.Values{"ObjectSid": {"IT00000000000000000000000000000000"}}, 400, 20001)
	refused("A2P profile assigned to the customer profile", "POST", "/v1/CustomerProfiles/"+profile+"/EntityAssignments",
		url.Values{"ObjectSid": {a2p}}, 400, 20001)
	refused("assignment to an unknown bundle", "POST", "/v1/TrustProducts/BU00000000000000000000000000000000/EntityAssignments",
		url.Values{"ObjectSid": {a2p}}, 404, 20404)
	refused("status other than pending-review", "POST", "/v1/CustomerProfiles/"+profile, url.Values{"Status": {"twilio-approved"}}, 400, 20001)
	refused("submitting an empty profile", "POST", "/v1/CustomerProfiles/"+profile, url.Values{"Status": {"pending-review"}}, 400, 20001)
	refused("brand over draft bundles", "POST", "/v1/a2p/BrandRegistrations",
		url.Values{"CustomerProfileBundleSid": {profile}, "A2PProfileBundleSid": {product}}, 400, 20001)
	refused("brand over a profile only", "POST", "/v1/a2p/BrandRegistrations",
		url.Values{"CustomerProfileBundleSid": {profile}, "A2PProfileBundleSid": {profile}}, 400, 20001)

	mg := mk("/v1/Services", url.Values{"FriendlyName": {"s"}})
	campaign := url.Values{"BrandRegistrationSid": {"BN00000000000000000000000000000000"}, "Description": {"d"}, "MessageFlow": {"f"},
		"MessageSamples": {"one"}, "UsAppToPersonUsecase": {"MIXED"}, "HasEmbeddedLinks": {"false"}, "HasEmbeddedPhone": {"false"}}
	refused("campaign of an unknown brand", "POST", "/v1/Services/"+mg+"/Compliance/Usa2p", campaign, 400, 20001)
	refused("campaign of an unknown service", "POST", "/v1/Services/MG00000000000000000000000000000000/Compliance/Usa2p", campaign, 404, 20404)
	refused("unknown number to a service", "POST", "/v1/Services/"+mg+"/PhoneNumbers",
		url.Values{"PhoneNumberSid": {"PN00000000000000000000000000000000"}}, 400, 20001)
	refused("unknown v1 resource", "GET", "/v1/Nothing", nil, 404, 20404)
	refused("fetching a customer profile (not served)", "GET", "/v1/CustomerProfiles/"+profile, nil, 405, 20004)
}
