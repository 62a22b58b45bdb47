// Package numbers is the phone numbers projects buy through the API (docs/numbers-wire.md):
// what a telephony account has for sale, priced by the project's PriceList. Live keys search the
// twilio account the project's SMS resolves to (its own, else the installation's); test keys the
// sandbox's documented numbers, which reach nobody.
package numbers

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
)

// The number types (the client's PhoneNumberType).
const (
	TypeLocal    = "local"
	TypeNational = "national"
	TypeMobile   = "mobile"
	TypeTollFree = "tollFree"
)

// Types are the number types, in the client's order.
var Types = []string{TypeLocal, TypeNational, TypeTollFree, TypeMobile}

// Query is GET /v1/phone-numbers/available.
type Query struct {
	Country, Type, Contains string
	// SMS, Voice and MMS are the capabilities a number must all have.
	SMS, Voice, MMS bool
	Limit           int
}

// Offer is a number for sale, as the telephony account lists it.
type Offer struct {
	PhoneNumber, FriendlyName, Locality, Region string
	SMS, Voice, MMS                             bool
}

// Shop is a telephony account's numbers for sale.
type Shop interface {
	Search(ctx context.Context, q Query) ([]Offer, error)
}

// Shops finds the account a project buys numbers from (the transport registry).
type Shops interface {
	// ShopOf is the account of project's live numbers; an error the caller should see is an
	// *apperror.Error.
	ShopOf(ctx context.Context, project string) (Account, error)
	// ShopAt is the account of the Provider namespace/name (a purchase to settle).
	ShopAt(ctx context.Context, namespace, name string) (Shop, error)
}

// Service is the API's numbers.
type Service struct {
	Shops  Shops
	Prices *billing.Prices
	// Sandbox is the shop of test keys.
	Sandbox Shop

	// Pool keeps the purchases and their money; Money is the projects' billing accounts.
	Pool  *pgxpool.Pool
	Money *billing.Service
	// Kube writes PhoneNumbers; Reader reads them, and Senders, from the informer cache.
	Kube   client.Client
	Reader client.Reader
	// Senders gives numbers to senders.
	Senders Senders
	// Records are the project's addresses and documents, which bundles are made of.
	Records Records
	// InstallationNamespace is where the PhoneNumbers of numbers bought with the installation's
	// account are (assigned to their projects).
	InstallationNamespace string
	// Month is how long a paid month lasts (tests shorten it); 0 is a calendar month.
	Month time.Duration
	Clock func() time.Time
	Log   logr.Logger
}

// Available is a number for sale as the API shows it.
type Available struct {
	PhoneNumber  string       `json:"phoneNumber"`
	FriendlyName string       `json:"friendlyName,omitempty"`
	Locality     string       `json:"locality,omitempty"`
	Region       string       `json:"region,omitempty"`
	Capabilities Capabilities `json:"capabilities"`
	Pricing      Pricing      `json:"pricing"`
}

// Capabilities are what an available number can do.
type Capabilities struct {
	SMS   bool `json:"sms"`
	Voice bool `json:"voice"`
	MMS   bool `json:"mms"`
}

// Pricing is what an available number costs the project, in USD.
type Pricing struct {
	MonthlyPrice float64 `json:"monthlyPrice"`
	UpfrontPrice float64 `json:"upfrontPrice"`
	// IsFreeEligible is the hosted service's included number; Switchboard includes none.
	IsFreeEligible bool `json:"isFreeEligible"`
}

// DefaultLimit and MaxLimit bound a search.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

var countryCode = regexp.MustCompile(`^[A-Za-z]{2}$`)

// ParseCapabilities reads the comma-joined capabilities of a search into q.
func ParseCapabilities(q *Query, list string) error {
	for _, c := range strings.Split(list, ",") {
		switch strings.TrimSpace(strings.ToLower(c)) {
		case "":
		case "sms":
			q.SMS = true
		case "voice":
			q.Voice = true
		case "mms":
			q.MMS = true
		default:
			return apperror.InvalidFields(apperror.FieldError{Path: "capabilities", Message: "must list sms, voice and mms, separated by commas"})
		}
	}
	return nil
}

// Search lists the numbers for sale that match q, priced by the project's PriceList; a number the
// PriceList does not price is not for sale (the list is empty).
func (s *Service) Search(ctx context.Context, key apikey.Key, q Query) ([]Available, error) {
	var errs []apperror.FieldError
	if !countryCode.MatchString(q.Country) {
		errs = append(errs, apperror.FieldError{Path: "countryCode", Message: "must be a two-letter ISO country code such as US or DE"})
	}
	if q.Type == "" {
		q.Type = TypeLocal
	} else if !slices.Contains(Types, q.Type) {
		errs = append(errs, apperror.FieldError{Path: "type", Message: "must be one of " + strings.Join(Types, ", ")})
	}
	if q.Contains != "" && strings.Trim(q.Contains, "+0123456789*") != "" {
		errs = append(errs, apperror.FieldError{Path: "contains", Message: "must be digits, optionally with * for any digit"})
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultLimit
	case q.Limit < 1 || q.Limit > MaxLimit:
		errs = append(errs, apperror.FieldError{Path: "limit", Message: fmt.Sprintf("must be from 1 to %d", MaxLimit)})
	}
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(errs...)
	}
	q.Country = strings.ToUpper(q.Country)
	q.Contains = strings.TrimPrefix(q.Contains, "+")
	var monthly, upfront billing.Micros
	if !key.TestMode() {
		list, err := s.Prices.For(ctx, key.Project)
		if err != nil {
			return nil, err
		}
		var ok bool
		if monthly, upfront, ok, err = billing.NumberQuote(list, q.Country, q.Type); err != nil || !ok {
			return []Available{}, err
		}
	}
	shop := s.Sandbox
	if !key.TestMode() {
		var err error
		acct, err := s.Shops.ShopOf(ctx, key.Project)
		if err != nil {
			return nil, err
		}
		shop = acct.Shop
	}
	offers, err := shop.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]Available, 0, len(offers))
	for _, o := range offers {
		if (q.SMS && !o.SMS) || (q.Voice && !o.Voice) || (q.MMS && !o.MMS) {
			continue // the account's filter is a hint: the capabilities asked for are all required
		}
		out = append(out, Available{PhoneNumber: o.PhoneNumber, FriendlyName: o.FriendlyName, Locality: o.Locality, Region: o.Region,
			Capabilities: Capabilities{SMS: o.SMS, Voice: o.Voice, MMS: o.MMS},
			Pricing:      Pricing{MonthlyPrice: monthly.USD(), UpfrontPrice: upfront.USD()}})
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

// Rule is one thing a country's regulations ask of a number's buyer, as a telephony account
// lists it.
type Rule struct {
	// EndUserType is who the rule is for: business or individual.
	EndUserType string
	Name        string
	// Kind is textual (details given as values), address or document.
	Kind        string
	Description string
	// Accepted are the document types that meet a document rule.
	Accepted []string
	// Fields are the details a textual rule asks for, and those a document carries, by their
	// machine names (business_name…).
	Fields []string
}

// Regulator lists what a country's regulations ask of a number's buyer.
type Regulator interface {
	Rules(ctx context.Context, country, numberType string) ([]Rule, error)
}

// Requirement is a group of requirements (the client's), one per kind of end user.
type Requirement struct {
	ID               string            `json:"id"`
	Action           string            `json:"action"`
	CountryCode      string            `json:"countryCode"`
	PhoneNumberType  string            `json:"phoneNumberType"`
	RequirementTypes []RequirementType `json:"requirementTypes"`
}

// RequirementType is one requirement of a group.
type RequirementType struct {
	ID                 string              `json:"id"`
	Name               string              `json:"name"`
	Description        string              `json:"description"`
	Type               string              `json:"type"`
	AcceptanceCriteria *AcceptanceCriteria `json:"acceptanceCriteria,omitempty"`
	Example            *string             `json:"example"`
}

// AcceptanceCriteria are what a requirement's value must be.
type AcceptanceCriteria struct {
	AllowedValues []string `json:"allowedValues"`
}

// Requirements lists what buying a number of country and numberType asks of the project: one
// group per kind of end user (business, individual) the regulations know; none when they ask
// nothing.
func (s *Service) Requirements(ctx context.Context, key apikey.Key, country, numberType string) ([]Requirement, error) {
	var errs []apperror.FieldError
	if !countryCode.MatchString(country) {
		errs = append(errs, apperror.FieldError{Path: "countryCode", Message: "must be a two-letter ISO country code such as US or DE"})
	}
	if numberType == "" {
		numberType = TypeLocal
	} else if !slices.Contains(Types, numberType) {
		errs = append(errs, apperror.FieldError{Path: "type", Message: "must be one of " + strings.Join(Types, ", ")})
	}
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(errs...)
	}
	country = strings.ToUpper(country)
	var reg Regulator = SandboxRegulator{}
	if !key.TestMode() {
		acct, err := s.Shops.ShopOf(ctx, key.Project)
		if err != nil {
			return nil, err
		}
		r, ok := acct.Shop.(Regulator)
		if !ok {
			return []Requirement{}, nil
		}
		reg = r
	}
	rules, err := reg.Rules(ctx, country, numberType)
	if err != nil {
		return nil, err
	}
	out := []Requirement{}
	byUser := map[string]int{}
	for _, r := range rules {
		i, seen := byUser[r.EndUserType]
		if !seen {
			i = len(out)
			byUser[r.EndUserType] = i
			out = append(out, Requirement{ID: slug("req", country, numberType, r.EndUserType), Action: "ordering", CountryCode: country,
				PhoneNumberType: numberType, RequirementTypes: []RequirementType{}})
		}
		t := RequirementType{ID: slug("rt", country, numberType, r.EndUserType, r.Name), Name: r.Name, Description: r.Description, Type: r.Kind}
		if len(r.Accepted) > 0 {
			t.AcceptanceCriteria = &AcceptanceCriteria{AllowedValues: r.Accepted}
		}
		out[i].RequirementTypes = append(out[i].RequirementTypes, t)
	}
	return out, nil
}

// slug joins parts into an id: lower case, letters and digits, words by underscores.
func slug(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('_')
		}
		last := byte('_')
		for _, c := range strings.ToLower(p) {
			switch {
			case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				b.WriteRune(c)
				last = byte(c)
			case last != '_':
				b.WriteByte('_')
				last = '_'
			}
		}
	}
	return strings.TrimRight(b.String(), "_")
}
