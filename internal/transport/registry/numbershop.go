package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/numbers"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// A project buys numbers from the twilio account its SMS resolves to: its own default Provider,
// else the installation's.

var _ numbers.Shops = (*Registry)(nil)

// ShopOf implements numbers.Shops.
func (r *Registry) ShopOf(ctx context.Context, project string) (numbers.Shop, error) {
	p, reason, err := r.providerIn(ctx, project, v1alpha1.ChannelSMS, "")
	if err != nil {
		return nil, err
	}
	if p == nil || p.Spec.Type != v1alpha1.ProviderTwilio {
		if p != nil {
			reason = fmt.Sprintf("numbers are bought through a twilio Provider; %s is %s", p.Name, p.Spec.Type)
		}
		return nil, apperror.New(apperror.Invalid, "invalid_request", "This project has no telephony account to buy numbers from: "+reason)
	}
	if f := unusable(p); f != nil {
		return nil, apperror.New(apperror.Unavailable, "provider_unavailable", f.Message)
	}
	t, err := r.twilioOf(ctx, p)
	if err != nil {
		return nil, err
	}
	return twilioShop{t}, nil
}

type twilioShop struct{ t *twilio.Transport }

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
		rule := numbers.Rule{EndUserType: r.EndUserType, Name: r.Name, Description: r.Description}
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
