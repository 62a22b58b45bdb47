package twilio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/twilio/twilio-go/client"
	api "github.com/twilio/twilio-go/rest/api/v2010"
	messaging "github.com/twilio/twilio-go/rest/messaging/v1"
	trusthub "github.com/twilio/twilio-go/rest/trusthub/v1"
)

// A2P 10DLC registration of a secondary customer's Standard brand, as Twilio's ISV guide does it:
// a Secondary Customer Profile and an A2P Trust Product in Trust Hub, then a BrandRegistration;
// per campaign a Messaging Service with a UsAppToPerson, and the numbers added to the service.

// Trust Hub policies of the two bundles.
const (
	secondaryCustomerProfilePolicy = "RNdfbf3fae0e1107f8aded0e7cead80bf5"
	a2pTrustProductPolicy          = "RNb0d4771c2c98518d916a3d4cd70a8f8b"
)

// bundleSubmitted is the status a bundle is moved to for Twilio's review.
const bundleSubmitted = "pending-review"

// BrandRegistration is what Twilio's Trust Hub and A2P brand registration need of a business.
type BrandRegistration struct {
	ID                                                                                                                   string // Switchboard's brand id; use it in FriendlyName values
	DisplayName, CompanyName, EntityType, EIN, Vertical, Email, Phone, Street, City, State, PostalCode, Country, Website string
	FirstName, LastName                                                                                                  string // the authorized representative
	StockExchange, StockSymbol                                                                                           string
}

// EntityType is one of PRIVATE_PROFIT, PUBLIC_PROFIT, NON_PROFIT, GOVERNMENT, SOLE_PROPRIETOR.
// entityTypes maps it to Trust Hub's business_type and the A2P profile's company_type.
var entityTypes = map[string]struct{ businessType, companyType string }{
	"PRIVATE_PROFIT":  {"Corporation", "private"},
	"PUBLIC_PROFIT":   {"Corporation", "public"},
	"NON_PROFIT":      {"Non-profit Corporation", "non-profit"},
	"GOVERNMENT":      {"Government", "government"},
	"SOLE_PROPRIETOR": {"Sole Proprietorship", "sole-proprietor"},
}

// BrandRef is what Twilio made for a brand.
type BrandRef struct {
	BrandSid           string `json:"brandSid"`           // BN...
	CustomerProfileSid string `json:"customerProfileSid"` // BU... (secondary customer profile)
	TrustProductSid    string `json:"trustProductSid"`    // BU... (A2P trust product)
}

// BrandState is a brand registration as Twilio reports it.
type BrandState struct {
	Status         string // Twilio's: PENDING, IN_REVIEW, APPROVED, FAILED, SUSPENDED, DELETED
	IdentityStatus string // SELF_DECLARED, UNVERIFIED, VERIFIED, VETTED_VERIFIED ("" when absent)
	Score          *int
	FailureReason  string // failure_reason, or the errors' descriptions joined
}

// CampaignRegistration is an A2P campaign to register for a brand.
type CampaignRegistration struct {
	ID, BrandSid, Description, MessageFlow, UseCase                              string
	SampleMessages                                                               []string
	HasEmbeddedLinks, HasEmbeddedPhone, SubscriberOptIn, AgeGated, DirectLending bool
	HelpMessage                                                                  string
	OptInKeywords, OptOutKeywords                                                []string
}

// CampaignRef is what Twilio made for a campaign.
type CampaignRef struct {
	MessagingServiceSid string `json:"messagingServiceSid"` // MG...
	CampaignSid         string `json:"campaignSid"`         // QE... (the UsAppToPerson sid)
}

// CampaignState is a campaign as Twilio reports it.
type CampaignState struct {
	Status        string // Twilio's campaign_status: PENDING, IN_PROGRESS, VERIFIED, FAILED, SUSPENDED, EXPIRED
	FailureReason string // the errors' descriptions joined
}

// RegistrationError is Twilio refusing a registration call: the HTTP status, Twilio's error
// code and message. Returned (wrapped or as is) for every 4xx answer so callers can show
// the message to the user; 5xx, connection failures and auth failures use the transport's existing error
// classification (t.classify) or a plain wrapped error.
type RegistrationError struct {
	Status  int
	Code    int
	Message string
}

func (e *RegistrationError) Error() string {
	if e.Code == 0 {
		return fmt.Sprintf("Twilio refused the registration (HTTP %d): %s", e.Status, e.Message)
	}
	return fmt.Sprintf("Twilio refused the registration (HTTP %d, code %d): %s", e.Status, e.Code, e.Message)
}

// registrar makes the SDK calls of one registration method over one request handler.
type registrar struct {
	t   *Transport
	ctx context.Context
	ex  *exchange
	th  *trusthub.ApiService
	msg *messaging.ApiService
	api *api.ApiService
}

func (t *Transport) registrar(ctx context.Context) (*registrar, error) {
	h, ex, err := t.handler(ctx)
	if err != nil {
		return nil, err
	}
	return &registrar{t: t, ctx: ctx, ex: ex, th: trusthub.NewApiService(h),
		msg: messaging.NewApiService(h), api: api.NewApiService(h)}, nil
}

// do runs one SDK call. The exchange keeps the last answer, so it is cleared first: a call the
// SDK refuses before sending must not be read as the previous call's answer.
func (r *registrar) do(op string, call func() error) error {
	r.ex.mu.Lock()
	r.ex.status, r.ex.header = 0, nil
	r.ex.mu.Unlock()
	if err := call(); err != nil {
		return r.t.registrationError(r.ctx, op, err, r.ex)
	}
	return nil
}

// registrationError is a wrapped *RegistrationError for Twilio's 4xx refusals, which callers
// show to the user; bad credentials, 429, 5xx and the network go through classify as sends do.
func (t *Transport) registrationError(ctx context.Context, op string, err error, ex *exchange) error {
	if ctx.Err() != nil {
		return t.classify(ctx, op, err, ex, false, "")
	}
	status, _ := ex.get()
	code, message := 0, ""
	var re *client.TwilioRestError
	var v1 *client.RestErrorV1
	switch {
	case errors.As(err, &re):
		code, message = re.Code, re.Message
		if status == 0 {
			status = re.Status
		}
	case errors.As(err, &v1):
		code, message = v1.Code, v1.Message
		if status == 0 {
			status = v1.HttpStatusCode
		}
	}
	switch {
	case status >= 200 && status < 300:
		// Twilio made it but its answer is unreadable; acceptedUnreadable speaks of messages.
		return fmt.Errorf("twilio: %s: Twilio accepted the request but its answer could not be read", op)
	case status < 400 || status >= 500, status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == http.StatusTooManyRequests, errorTable[code].code == CodeProviderAuthFailed:
		return t.classify(ctx, op, err, ex, false, "")
	}
	if message == "" {
		message = fmt.Sprintf("Twilio answered HTTP %d without an error message.", status)
	}
	return fmt.Errorf("twilio: %s: %w", op, &RegistrationError{Status: status, Code: code,
		Message: scrub(message, t.cfg.AuthToken)})
}

// sidOf is the sid of a made resource; Twilio's answer without one is an error.
func sidOf(op string, sid *string) (string, error) {
	if sid == nil || *sid == "" {
		return "", fmt.Errorf("twilio: %s: Twilio's answer has no sid", op)
	}
	return *sid, nil
}

// RegisterBrand registers b's Standard brand (or Sole Proprietor brand) through Twilio's ISV
// flow: a Secondary Customer Profile with the business, its authorized representative and
// address, an A2P Trust Product over it, both submitted for review, then the BrandRegistration.
//
// A failed step returns its error and leaves the Trust Hub objects made before it: Twilio
// bills nothing for them, a draft bundle is harmless, and deleting half-reviewed bundles can
// fail as well; a retry makes new ones.
func (t *Transport) RegisterBrand(ctx context.Context, b BrandRegistration) (BrandRef, error) {
	kind, ok := entityTypes[b.EntityType]
	if !ok {
		return BrandRef{}, fmt.Errorf("twilio: register brand: unknown entity type %q", b.EntityType)
	}
	r, err := t.registrar(ctx)
	if err != nil {
		return BrandRef{}, err
	}
	businessName := b.CompanyName
	if businessName == "" {
		businessName = b.DisplayName
	}
	name := func(what string) string { return "Switchboard " + b.ID + " " + what }

	// 1. The Secondary Customer Profile.
	profile, err := r.createCustomerProfile(name("customer profile"), b.Email)
	if err != nil {
		return BrandRef{}, err
	}
	ref := BrandRef{CustomerProfileSid: profile}

	// 2 and 3. The business and its authorized representative, assigned to the profile.
	business := map[string]any{
		"business_name":                    businessName,
		"business_identity":                "direct_customer",
		"business_type":                    kind.businessType,
		"business_industry":                b.Vertical,
		"business_registration_identifier": "EIN",
		"business_registration_number":     b.EIN,
		"business_regions_of_operation":    "USA_AND_CANADA",
		"website_url":                      b.Website,
	}
	rep := map[string]any{
		"first_name":     b.FirstName,
		"last_name":      b.LastName,
		"email":          b.Email,
		"phone_number":   b.Phone,
		"business_title": "Authorized representative",
		"job_position":   "Director",
	}
	for _, eu := range []struct {
		typ, what string
		attrs     map[string]any
	}{
		{"customer_profile_business_information", "business information", business},
		{"authorized_representative_1", "authorized representative", rep},
	} {
		sid, err := r.createEndUser(name(eu.what), eu.typ, eu.attrs)
		if err != nil {
			return ref, err
		}
		if err := r.assignToProfile(profile, sid); err != nil {
			return ref, err
		}
	}

	// 4. The business's address, as a supporting document of the profile.
	country := b.Country
	if country == "" {
		country = "US" // 10DLC is for US numbers; the address is the business's US one
	}
	addr := &api.CreateAddressParams{}
	addr.SetFriendlyName(name("address")).SetCustomerName(businessName).SetStreet(b.Street).SetCity(b.City).
		SetRegion(b.State).SetPostalCode(b.PostalCode).SetIsoCountry(country)
	var addressSid string
	if err := r.do("create address", func() error {
		a, err := r.api.CreateAddress(addr)
		if err == nil {
			addressSid, err = sidOf("create address", a.Sid)
		}
		return err
	}); err != nil {
		return ref, err
	}
	doc := &trusthub.CreateSupportingDocumentParams{}
	doc.SetFriendlyName(name("address document")).SetType("customer_profile_address").
		SetAttributes(map[string]any{"address_sids": addressSid})
	var docSid string
	if err := r.do("create supporting document", func() error {
		d, err := r.th.CreateSupportingDocument(doc)
		if err == nil {
			docSid, err = sidOf("create supporting document", d.Sid)
		}
		return err
	}); err != nil {
		return ref, err
	}
	if err := r.assignToProfile(profile, docSid); err != nil {
		return ref, err
	}

	// 5. Submit the profile.
	if err := r.do("submit customer profile", func() error {
		_, err := r.th.UpdateCustomerProfile(profile, (&trusthub.UpdateCustomerProfileParams{}).SetStatus(bundleSubmitted))
		return err
	}); err != nil {
		return ref, err
	}

	// 6. The A2P Trust Product: the messaging profile and the customer profile, submitted.
	product, err := r.createTrustProduct(name("A2P trust product"), b.Email)
	if err != nil {
		return ref, err
	}
	ref.TrustProductSid = product
	a2p := map[string]any{"company_type": kind.companyType}
	if kind.companyType == "public" {
		a2p["stock_exchange"] = b.StockExchange
		a2p["stock_ticker"] = b.StockSymbol
	}
	a2pSid, err := r.createEndUser(name("A2P messaging profile"), "us_a2p_messaging_profile_information", a2p)
	if err != nil {
		return ref, err
	}
	for _, obj := range []string{a2pSid, profile} {
		if err := r.do("assign to trust product", func() error {
			_, err := r.th.CreateTrustProductEntityAssignment(product,
				(&trusthub.CreateTrustProductEntityAssignmentParams{}).SetObjectSid(obj))
			return err
		}); err != nil {
			return ref, err
		}
	}
	if err := r.do("submit trust product", func() error {
		_, err := r.th.UpdateTrustProduct(product, (&trusthub.UpdateTrustProductParams{}).SetStatus(bundleSubmitted))
		return err
	}); err != nil {
		return ref, err
	}

	// 7. The brand registration over both bundles.
	brand := &messaging.CreateBrandRegistrationsParams{}
	brand.SetCustomerProfileBundleSid(profile).SetA2PProfileBundleSid(product)
	if b.EntityType == "SOLE_PROPRIETOR" {
		brand.SetBrandType("SOLE_PROPRIETOR")
	}
	if err := r.do("create brand registration", func() error {
		bn, err := r.msg.CreateBrandRegistrations(brand)
		if err == nil {
			ref.BrandSid, err = sidOf("create brand registration", bn.Sid)
		}
		return err
	}); err != nil {
		return ref, err
	}
	return ref, nil
}

func (r *registrar) createCustomerProfile(friendlyName, email string) (string, error) {
	p := &trusthub.CreateCustomerProfileParams{}
	p.SetFriendlyName(friendlyName).SetEmail(email).SetPolicySid(secondaryCustomerProfilePolicy)
	var sid string
	err := r.do("create customer profile", func() error {
		cp, err := r.th.CreateCustomerProfile(p)
		if err == nil {
			sid, err = sidOf("create customer profile", cp.Sid)
		}
		return err
	})
	return sid, err
}

func (r *registrar) createTrustProduct(friendlyName, email string) (string, error) {
	p := &trusthub.CreateTrustProductParams{}
	p.SetFriendlyName(friendlyName).SetEmail(email).SetPolicySid(a2pTrustProductPolicy)
	var sid string
	err := r.do("create trust product", func() error {
		tp, err := r.th.CreateTrustProduct(p)
		if err == nil {
			sid, err = sidOf("create trust product", tp.Sid)
		}
		return err
	})
	return sid, err
}

func (r *registrar) createEndUser(friendlyName, typ string, attrs map[string]any) (string, error) {
	p := &trusthub.CreateEndUserParams{}
	p.SetFriendlyName(friendlyName).SetType(typ).SetAttributes(attrs) // sent as JSON
	var sid string
	err := r.do("create end user "+typ, func() error {
		eu, err := r.th.CreateEndUser(p)
		if err == nil {
			sid, err = sidOf("create end user "+typ, eu.Sid)
		}
		return err
	})
	return sid, err
}

func (r *registrar) assignToProfile(profile, objectSid string) error {
	return r.do("assign to customer profile", func() error {
		_, err := r.th.CreateCustomerProfileEntityAssignment(profile,
			(&trusthub.CreateCustomerProfileEntityAssignmentParams{}).SetObjectSid(objectSid))
		return err
	})
}

// BrandStatus fetches the brand registration (GET /v1/a2p/BrandRegistrations/{sid}).
func (t *Transport) BrandStatus(ctx context.Context, brandSid string) (BrandState, error) {
	r, err := t.registrar(ctx)
	if err != nil {
		return BrandState{}, err
	}
	var st BrandState
	err = r.do("fetch brand registration", func() error {
		bn, err := r.msg.FetchBrandRegistrations(brandSid)
		if err != nil {
			return err
		}
		st = BrandState{Status: deref(bn.Status), IdentityStatus: deref(bn.IdentityStatus), Score: bn.BrandScore,
			FailureReason: deref(bn.FailureReason)}
		if st.FailureReason == "" && bn.Errors != nil {
			st.FailureReason = describeErrors(*bn.Errors)
		}
		return nil
	})
	return st, err
}

// RegisterCampaign makes the campaign's own Messaging Service (Twilio ties a campaign to one
// service, and the numbers that send under it to that service) and registers the campaign on
// it. As with RegisterBrand, a failed campaign leaves the service it made.
func (t *Transport) RegisterCampaign(ctx context.Context, c CampaignRegistration) (CampaignRef, error) {
	r, err := t.registrar(ctx)
	if err != nil {
		return CampaignRef{}, err
	}
	var ref CampaignRef
	svc := (&messaging.CreateServiceParams{}).SetFriendlyName("Switchboard campaign " + c.ID)
	if err := r.do("create messaging service", func() error {
		s, err := r.msg.CreateService(svc)
		if err == nil {
			ref.MessagingServiceSid, err = sidOf("create messaging service", s.Sid)
		}
		return err
	}); err != nil {
		return CampaignRef{}, err
	}
	p := &messaging.CreateUsAppToPersonParams{}
	p.SetBrandRegistrationSid(c.BrandSid).SetDescription(c.Description).SetMessageFlow(c.MessageFlow).
		SetMessageSamples(c.SampleMessages).SetUsAppToPersonUsecase(c.UseCase).
		SetHasEmbeddedLinks(c.HasEmbeddedLinks).SetHasEmbeddedPhone(c.HasEmbeddedPhone).
		SetSubscriberOptIn(c.SubscriberOptIn).SetAgeGated(c.AgeGated).SetDirectLending(c.DirectLending)
	if c.HelpMessage != "" {
		p.SetHelpMessage(c.HelpMessage)
	}
	if len(c.OptInKeywords) > 0 {
		p.SetOptInKeywords(c.OptInKeywords)
	}
	if len(c.OptOutKeywords) > 0 {
		p.SetOptOutKeywords(c.OptOutKeywords)
	}
	if err := r.do("create campaign", func() error {
		qe, err := r.msg.CreateUsAppToPerson(ref.MessagingServiceSid, p)
		if err == nil {
			ref.CampaignSid, err = sidOf("create campaign", qe.Sid)
		}
		return err
	}); err != nil {
		return ref, err
	}
	return ref, nil
}

// CampaignStatus fetches the campaign (GET /v1/Services/{MG}/Compliance/Usa2p/{QE}).
func (t *Transport) CampaignStatus(ctx context.Context, ref CampaignRef) (CampaignState, error) {
	r, err := t.registrar(ctx)
	if err != nil {
		return CampaignState{}, err
	}
	var st CampaignState
	err = r.do("fetch campaign", func() error {
		qe, err := r.msg.FetchUsAppToPerson(ref.MessagingServiceSid, ref.CampaignSid, nil)
		if err != nil {
			return err
		}
		st.Status = deref(qe.CampaignStatus)
		if qe.Errors != nil {
			list := make([]any, 0, len(*qe.Errors))
			for _, e := range *qe.Errors {
				list = append(list, e)
			}
			st.FailureReason = describeErrors(list)
		}
		return nil
	})
	return st, err
}

// DeleteCampaign deletes the campaign (its Messaging Service stays).
func (t *Transport) DeleteCampaign(ctx context.Context, ref CampaignRef) error {
	r, err := t.registrar(ctx)
	if err != nil {
		return err
	}
	return r.do("delete campaign", func() error {
		return r.msg.DeleteUsAppToPerson(ref.MessagingServiceSid, ref.CampaignSid)
	})
}

// AssignNumber finds the account's IncomingPhoneNumber of an E.164 number and adds it to the
// campaign's messaging service; it returns the PN sid.
func (t *Transport) AssignNumber(ctx context.Context, messagingServiceSid, number string) (string, error) {
	r, err := t.registrar(ctx)
	if err != nil {
		return "", err
	}
	in, found, err := r.findIncomingNumber(number)
	if err != nil {
		return "", err
	}
	pn := in.SID
	if !found {
		return "", fmt.Errorf("twilio: find incoming number: %w", &RegistrationError{Status: http.StatusNotFound, Code: 20404,
			Message: fmt.Sprintf("%s is not a phone number of this Twilio account.", number)})
	}
	if err := r.do("add number to messaging service", func() error {
		_, err := r.msg.CreatePhoneNumber(messagingServiceSid, (&messaging.CreatePhoneNumberParams{}).SetPhoneNumberSid(pn))
		return err
	}); err != nil {
		return "", err
	}
	return pn, nil
}

// UnassignNumber removes the number from the messaging service (it stays the account's).
func (t *Transport) UnassignNumber(ctx context.Context, messagingServiceSid, phoneNumberSid string) error {
	r, err := t.registrar(ctx)
	if err != nil {
		return err
	}
	return r.do("remove number from messaging service", func() error {
		return r.msg.DeletePhoneNumber(messagingServiceSid, phoneNumberSid)
	})
}

// describeErrors joins the descriptions of a registration's errors (objects with description
// or message, and a code).
func describeErrors(list []any) string {
	var out []string
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		d, _ := m["description"].(string)
		if d == "" {
			d, _ = m["message"].(string)
		}
		if d == "" {
			for _, k := range []string{"error_code", "code"} {
				if c, ok := m[k].(float64); ok {
					d = fmt.Sprintf("Twilio error %d", int(c))
					break
				}
			}
		}
		if d != "" {
			out = append(out, d)
		}
	}
	return strings.Join(out, "; ")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
