package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/numbers"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// A project buys numbers from the twilio account its SMS resolves to: its own default Provider,
// else the installation's.

var _ numbers.Shops = (*Registry)(nil)

// ShopOf implements numbers.Shops.
func (r *Registry) ShopOf(ctx context.Context, project string) (numbers.Account, error) {
	p, reason, err := r.providerIn(ctx, project, v1alpha1.ChannelSMS, "")
	if err != nil {
		return numbers.Account{}, err
	}
	if p == nil || p.Spec.Type != v1alpha1.ProviderTwilio {
		if p != nil {
			reason = fmt.Sprintf("numbers are bought through a twilio Provider; %s is %s", p.Name, p.Spec.Type)
		}
		return numbers.Account{}, apperror.New(apperror.Invalid, "invalid_request", "This project has no telephony account to buy numbers from: "+reason)
	}
	if f := unusable(p); f != nil {
		return numbers.Account{}, apperror.New(apperror.Unavailable, "provider_unavailable", f.Message)
	}
	shop, err := r.shopOf(ctx, p)
	return numbers.Account{Shop: shop, Namespace: p.Namespace, Provider: p.Name}, err
}

// ShopAt implements numbers.Shops.
func (r *Registry) ShopAt(ctx context.Context, namespace, name string) (numbers.Shop, error) {
	var p v1alpha1.Provider
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
		return nil, fmt.Errorf("read provider %s/%s: %w", namespace, name, err)
	}
	if p.Spec.Type != v1alpha1.ProviderTwilio {
		return nil, fmt.Errorf("provider %s/%s is %s, not twilio", namespace, name, p.Spec.Type)
	}
	return r.shopOf(ctx, &p)
}

func (r *Registry) shopOf(ctx context.Context, p *v1alpha1.Provider) (twilioShop, error) {
	t, err := r.twilioOf(ctx, p)
	if err != nil {
		return twilioShop{}, err
	}
	shop := twilioShop{t: t}
	if r.PublicURL != "" {
		// A bought number's messages and calls come to the Provider's callbacks.
		shop.sms = CallbackURL(r.PublicURL, "twilio", p.Namespace, p.Name, "inbound")
		shop.voice = CallbackURL(r.PublicURL, "twilio", p.Namespace, p.Name, "voice")
		shop.status = CallbackURL(r.PublicURL, "twilio", p.Namespace, p.Name, "call-status")
	}
	return shop, nil
}

// twilioShop is a twilio account's numbers; sms, voice and status are the callbacks a number
// it buys is given.
type twilioShop struct {
	t                  *twilio.Transport
	sms, voice, status string
}

var _ numbers.Seller = twilioShop{}

// Buy implements numbers.Seller.
func (s twilioShop) Buy(ctx context.Context, number, name, bundleSID string) (numbers.Bought, error) {
	b, err := s.t.BuyNumber(ctx, twilio.Purchase{PhoneNumber: number, FriendlyName: name, SMSURL: s.sms, VoiceURL: s.voice, StatusCallback: s.status,
		BundleSID: bundleSID})
	switch {
	case errors.Is(err, twilio.ErrNumberUnavailable):
		return numbers.Bought{}, fmt.Errorf("%w: %w", numbers.ErrUnavailable, err)
	case errors.Is(err, twilio.ErrNumberNeedsAddress), errors.Is(err, twilio.ErrNumberNeedsBundle):
		return numbers.Bought{}, fmt.Errorf("%w: %w", numbers.ErrNeedsBundle, err)
	case err != nil:
		var re *twilio.RegistrationError
		if errors.As(err, &re) {
			// Any other refusal of Twilio's is the request's: the caller sees it.
			return numbers.Bought{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: "the provider refused the purchase: " + re.Message})
		}
		return numbers.Bought{}, err
	}
	return numbers.Bought{SID: b.SID, SMS: b.SMS, Voice: b.Voice, MMS: b.MMS}, nil
}

// Find implements numbers.Seller.
func (s twilioShop) Find(ctx context.Context, number string) (numbers.Bought, bool, error) {
	n, ok, err := s.t.FindIncomingNumber(ctx, number)
	if err != nil || !ok {
		return numbers.Bought{}, false, err
	}
	return numbers.Bought{SID: n.SID, SMS: n.SMS, Voice: n.Voice, MMS: n.MMS}, true, nil
}

func (s twilioShop) Search(ctx context.Context, q numbers.Query) ([]numbers.Offer, error) {
	if q.Type == numbers.TypeNational {
		return nil, nil // Twilio's local, mobile and toll-free numbers are what Switchboard sells
	}
	found, err := s.t.SearchNumbers(ctx, twilio.NumberSearch{Country: q.Country, Type: q.Type, Contains: q.Contains,
		SMS: q.SMS, Voice: q.Voice, MMS: q.MMS, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]numbers.Offer, len(found))
	for i, n := range found {
		out[i] = numbers.Offer{PhoneNumber: n.PhoneNumber, FriendlyName: n.FriendlyName, Locality: n.Locality, Region: n.Region,
			SMS: n.SMS, Voice: n.Voice, MMS: n.MMS}
	}
	return out, nil
}

// documentTypes reads Twilio's supporting document types as the client's documentType values.
var documentTypes = map[string]string{
	"passport": "passport", "government_issued_document": "national_id", "national_id": "national_id",
	"drivers_license": "drivers_license", "utility_bill": "utility_bill", "tax_document": "tax_id",
	"commercial_registrar_excerpt": "business_registration", "business_registration": "business_registration",
	"address": "proof_of_address", "proof_of_address": "proof_of_address",
}

// Rules implements numbers.Regulator: Twilio's regulations of the country and type.
func (s twilioShop) Rules(ctx context.Context, country, numberType string) ([]numbers.Rule, error) {
	if numberType == numbers.TypeNational {
		return nil, nil
	}
	reqs, err := s.t.NumberRequirements(ctx, country, numberType)
	if err != nil {
		return nil, err
	}
	out := make([]numbers.Rule, 0, len(reqs))
	for _, r := range reqs {
		rule := numbers.Rule{EndUserType: r.EndUserType, Name: r.Name, Description: r.Description, Fields: r.Fields}
		switch r.Type {
		case twilio.RequirementText:
			rule.Kind = "textual"
			if rule.Description == "" && len(r.Fields) > 0 {
				rule.Description = "Details: " + strings.Join(r.Fields, ", ") + "."
			}
		case twilio.RequirementAddress:
			rule.Kind = "address"
		default:
			rule.Kind = "document"
			for _, d := range r.AcceptedDocuments {
				t, ok := documentTypes[d]
				if !ok {
					t = "other"
				}
				if !slices.Contains(rule.Accepted, t) {
					rule.Accepted = append(rule.Accepted, t)
				}
			}
		}
		out = append(out, rule)
	}
	return out, nil
}

// twilioDocumentTypes are Twilio's supporting document types of the client's documentType values
// (the reverse of documentTypes).
var twilioDocumentTypes = map[string]string{
	"passport": "passport", "national_id": "government_issued_document", "drivers_license": "drivers_license",
	"utility_bill": "utility_bill", "tax_id": "tax_document", "business_registration": "commercial_registrar_excerpt",
	"proof_of_address": "utility_bill",
}

var _ numbers.Bundler = twilioShop{}

// SubmitBundle implements numbers.Bundler: the bundle made in Twilio's Regulatory Compliance and
// submitted for review, its status posted to no callback (the renewer polls it).
func (s twilioShop) SubmitBundle(ctx context.Context, b numbers.BundleRequest) (string, error) {
	req := twilio.BundleRequest{EndUserType: b.EndUserType, Country: b.Country, NumberType: b.Type, Email: "compliance@switchboard.invalid",
		EndUser: twilio.EndUser{FriendlyName: b.EndUserName, Attributes: b.Attributes}}
	if a := b.Address; a != nil {
		name := cmp.Or(deref(a.BusinessName), strings.TrimSpace(deref(a.FirstName)+" "+deref(a.LastName)))
		req.Address = &twilio.AddressInput{CustomerName: name, Street: a.StreetAddress, StreetSecondary: deref(a.ExtendedAddress),
			City: a.Locality, Region: cmp.Or(deref(a.AdministrativeArea), a.Locality), PostalCode: a.PostalCode, ISOCountry: a.CountryCode}
	}
	for _, d := range b.Documents {
		typ, ok := twilioDocumentTypes[d.Type]
		if !ok {
			return "", apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: "a document of type " + d.Type + " cannot go in a regulatory bundle"})
		}
		req.Documents = append(req.Documents, twilio.SupportingDocumentInput{FriendlyName: d.Name, Type: typ, Attributes: d.Attributes,
			File: d.File, MimeType: d.MimeType})
	}
	out, err := s.t.CreateBundle(ctx, req)
	var re *twilio.RegistrationError
	if errors.As(err, &re) {
		return "", apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: "Twilio refused the regulatory bundle: " + re.Message})
	}
	return out.SID, err
}

// BundleStatus implements numbers.Bundler.
func (s twilioShop) BundleStatus(ctx context.Context, sid string) (string, string, error) {
	b, err := s.t.BundleStatus(ctx, sid)
	if err != nil {
		return "", "", err
	}
	switch b.Status {
	case twilio.BundleApproved, twilio.BundleProvisionallyApproved:
		return numbers.BundleApproved, "", nil
	case twilio.BundleRejected:
		return numbers.BundleRejected, b.FailureReason, nil
	}
	return numbers.BundlePending, "", nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
