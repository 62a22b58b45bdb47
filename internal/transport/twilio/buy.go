package twilio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	api "github.com/twilio/twilio-go/rest/api/v2010"
	numbers "github.com/twilio/twilio-go/rest/numbers/v2"
)

// Buying numbers: what Twilio sells (AvailablePhoneNumbers), buying and releasing a number
// (IncomingPhoneNumbers), and what a country's regulations ask of the buyer (the Regulatory
// Compliance API on numbers.twilio.com, whose path goes to the base URL as Lookup's does).
// Errors are the registration calls' (registration.go): Twilio's 4xx a wrapped
// *RegistrationError, bad credentials PROVIDER_AUTH_FAILED, 429, 5xx and the network a
// *transport.Temporary.

// Number types, the client's names. Twilio's AvailablePhoneNumbers subresources are Local,
// Mobile and TollFree; its regulations say local, mobile and toll-free.
const (
	NumberTypeLocal    = "local"
	NumberTypeMobile   = "mobile"
	NumberTypeTollFree = "tollFree"
)

// Requirement types (Requirement.Type).
const (
	RequirementText     = "text"     // details of the end user, given as fields
	RequirementDocument = "document" // a supporting document of one of the accepted types
	RequirementAddress  = "address"  // an address of the account (an Address resource)
)

// Twilio's refusals of a purchase, each wrapped with the *RegistrationError it came as.
var (
	// ErrNumberUnavailable: the number is no longer for sale (code 21422). After a purchase
	// that failed as a *transport.Temporary it may be the account's own: FindIncomingNumber
	// tells.
	ErrNumberUnavailable = errors.New("twilio: the phone number is not available to buy")
	// ErrNumberNeedsAddress: the number needs an Address (AddressSID) or a bundle (code 21631).
	ErrNumberNeedsAddress = errors.New("twilio: the phone number needs an address")
	// ErrNumberNeedsBundle: the number needs an approved regulatory bundle (BundleSID, code 21649).
	ErrNumberNeedsBundle = errors.New("twilio: the phone number needs a regulatory bundle")
)

// Twilio's error codes of a purchase and of a resource it does not have.
const (
	codeNotFound          = 20404
	codeNumberUnavailable = 21422
	codeNeedsAddress      = 21631
	codeNeedsBundle       = 21649
)

// Search limits: a page is all a search reads, and Twilio answers a few dozen numbers at most.
const (
	defaultSearchLimit = 20
	maxSearchLimit     = 100
)

// Regulations of one country and type fit one page; the bound only stops a runaway next page.
const (
	regulationPageSize = 50
	maxRegulationPages = 10
)

var (
	isoCountry     = regexp.MustCompile(`^[A-Z]{2}$`)
	nanpAreaCode   = regexp.MustCompile(`^[2-9][0-9]{2}$`)
	e164Number     = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	phoneNumberSID = regexp.MustCompile(`^PN[0-9a-fA-F]{32}$`)
)

// AvailableNumber is a number Twilio offers to buy.
type AvailableNumber struct {
	PhoneNumber, FriendlyName, Locality, Region, PostalCode, ISOCountry string
	// AddressRequirements is none, any, local or foreign: the Address the number needs.
	AddressRequirements string
	// Beta: the number is new to Twilio.
	Beta                 bool
	Voice, SMS, MMS, Fax bool
}

// NumberSearch is what SearchNumbers looks for.
type NumberSearch struct {
	// Country is an ISO 3166-1 alpha-2 code.
	Country string
	// Type is local (""), mobile or tollFree.
	Type string
	// Contains is Twilio's pattern: digits, letters (as on a keypad) and * for any digit.
	Contains string
	// AreaCode applies to +1 numbers (the US and Canada) only.
	AreaCode string
	// SMS, Voice and MMS are capabilities every number found must have.
	SMS, Voice, MMS bool
	// Limit is the most numbers answered: 20 when 0, at most 100.
	Limit int
}

// SearchNumbers lists numbers Twilio sells that match s
// (GET /2010-04-01/Accounts/{sid}/AvailablePhoneNumbers/{country}/{Local|Mobile|TollFree}.json),
// one page of at most s.Limit. A country or type Twilio has no numbers for is an empty list.
func (t *Transport) SearchNumbers(ctx context.Context, s NumberSearch) ([]AvailableNumber, error) {
	country := strings.ToUpper(s.Country)
	if !isoCountry.MatchString(country) {
		return nil, fmt.Errorf("twilio: search numbers: %q is not an ISO 3166-1 alpha-2 country code", s.Country)
	}
	typ, ok := availableType(s.Type)
	if !ok {
		return nil, fmt.Errorf("twilio: search numbers: unknown number type %q (local, mobile or tollFree)", s.Type)
	}
	limit := s.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	limit = min(limit, maxSearchLimit)
	// The three subresources take the same filters; nil leaves one out.
	var contains *string
	if s.Contains != "" {
		contains = &s.Contains
	}
	var area *int
	if s.AreaCode != "" {
		if !nanpAreaCode.MatchString(s.AreaCode) {
			return nil, fmt.Errorf("twilio: search numbers: %q is not a North American area code", s.AreaCode)
		}
		n, _ := strconv.Atoi(s.AreaCode)
		area = &n
	}
	yes := true
	only := func(want bool) *bool {
		if want {
			return &yes
		}
		return nil // false would ask for numbers without the capability
	}
	sms, voice, mms := only(s.SMS), only(s.Voice), only(s.MMS)

	r, err := t.registrar(ctx)
	if err != nil {
		return nil, err
	}
	var found []api.ApiV2010AvailablePhoneNumberLocal
	err = r.do("search numbers", func() error {
		switch typ {
		case "Mobile":
			resp, err := r.api.PageAvailablePhoneNumberMobile(country, &api.ListAvailablePhoneNumberMobileParams{
				AreaCode: area, Contains: contains, SmsEnabled: sms, VoiceEnabled: voice, MmsEnabled: mms, PageSize: &limit}, "", "")
			if err != nil {
				return err
			}
			for _, n := range resp.AvailablePhoneNumbers {
				found = append(found, api.ApiV2010AvailablePhoneNumberLocal(n))
			}
		case "TollFree":
			resp, err := r.api.PageAvailablePhoneNumberTollFree(country, &api.ListAvailablePhoneNumberTollFreeParams{
				AreaCode: area, Contains: contains, SmsEnabled: sms, VoiceEnabled: voice, MmsEnabled: mms, PageSize: &limit}, "", "")
			if err != nil {
				return err
			}
			for _, n := range resp.AvailablePhoneNumbers {
				found = append(found, api.ApiV2010AvailablePhoneNumberLocal(n))
			}
		default:
			resp, err := r.api.PageAvailablePhoneNumberLocal(country, &api.ListAvailablePhoneNumberLocalParams{
				AreaCode: area, Contains: contains, SmsEnabled: sms, VoiceEnabled: voice, MmsEnabled: mms, PageSize: &limit}, "", "")
			if err != nil {
				return err
			}
			found = resp.AvailablePhoneNumbers
		}
		return nil
	})
	if isNotFound(err) {
		// Twilio answers 404 for a country it does not sell, or a type it has none of there.
		return []AvailableNumber{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]AvailableNumber, 0, min(len(found), limit))
	for _, n := range found {
		if deref(n.PhoneNumber) == "" {
			continue
		}
		a := AvailableNumber{PhoneNumber: *n.PhoneNumber, FriendlyName: deref(n.FriendlyName), Locality: deref(n.Locality),
			Region: deref(n.Region), PostalCode: deref(n.PostalCode), ISOCountry: deref(n.IsoCountry),
			AddressRequirements: deref(n.AddressRequirements)}
		if n.Beta != nil {
			a.Beta = *n.Beta
		}
		if c := n.Capabilities; c != nil {
			a.Voice, a.SMS, a.MMS, a.Fax = c.Voice, c.Sms, c.Mms, c.Fax
		}
		out = append(out, a)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// availableType is Twilio's AvailablePhoneNumbers subresource of a client's number type.
func availableType(typ string) (string, bool) {
	switch {
	case typ == "" || strings.EqualFold(typ, NumberTypeLocal):
		return "Local", true
	case strings.EqualFold(typ, NumberTypeMobile):
		return "Mobile", true
	case strings.EqualFold(typ, NumberTypeTollFree):
		return "TollFree", true
	}
	return "", false
}

// isNotFound: Twilio answered that it has no such resource (code 20404).
func isNotFound(err error) bool {
	var re *RegistrationError
	return errors.As(err, &re) && re.Code == codeNotFound
}

// Purchase is a number to buy and how to set it up.
type Purchase struct {
	// PhoneNumber is an E.164 number SearchNumbers found.
	PhoneNumber, FriendlyName string
	// SMSURL, VoiceURL and StatusCallback are posted to (POST) for inbound messages, inbound
	// calls and the calls' status; "" leaves one unset.
	SMSURL, VoiceURL, StatusCallback string
	// BundleSID is an approved regulatory bundle (BU…), AddressSID an Address (AD…), for the
	// numbers whose country asks for them.
	BundleSID, AddressSID string
}

// BoughtNumber is a number the account bought.
type BoughtNumber struct {
	// SID is its IncomingPhoneNumber's PN sid.
	SID, PhoneNumber string
	Voice, SMS, MMS  bool
	// AddressRequirements is none, any, local or foreign, as Twilio reports it.
	AddressRequirements string
}

// BuyNumber buys p.PhoneNumber for the account (POST /2010-04-01/Accounts/{sid}/IncomingPhoneNumbers.json).
// Twilio bills the number from then on. Its refusals that a caller acts on wrap
// ErrNumberUnavailable, ErrNumberNeedsAddress and ErrNumberNeedsBundle.
func (t *Transport) BuyNumber(ctx context.Context, p Purchase) (BoughtNumber, error) {
	if !e164Number.MatchString(p.PhoneNumber) {
		return BoughtNumber{}, fmt.Errorf("twilio: buy number: %q is not an E.164 number", p.PhoneNumber)
	}
	params := &api.CreateIncomingPhoneNumberParams{}
	params.SetPhoneNumber(p.PhoneNumber)
	if p.FriendlyName != "" {
		params.SetFriendlyName(p.FriendlyName)
	}
	// The methods are set as well: a number's webhooks keep whatever method they were given.
	if p.SMSURL != "" {
		params.SetSmsUrl(p.SMSURL).SetSmsMethod(http.MethodPost)
	}
	if p.VoiceURL != "" {
		params.SetVoiceUrl(p.VoiceURL).SetVoiceMethod(http.MethodPost)
	}
	if p.StatusCallback != "" {
		params.SetStatusCallback(p.StatusCallback).SetStatusCallbackMethod(http.MethodPost)
	}
	if p.BundleSID != "" {
		params.SetBundleSid(p.BundleSID)
	}
	if p.AddressSID != "" {
		params.SetAddressSid(p.AddressSID)
	}
	r, err := t.registrar(ctx)
	if err != nil {
		return BoughtNumber{}, err
	}
	var n *api.ApiV2010IncomingPhoneNumber
	if err := r.do("buy number", func() error {
		var err error
		n, err = r.api.CreateIncomingPhoneNumber(params)
		return err
	}); err != nil {
		return BoughtNumber{}, purchaseError(err, p)
	}
	// Twilio answered 201, so the number is the account's even if the answer lacks its sid.
	sid, err := sidOf("buy number", n.Sid)
	if err != nil {
		return BoughtNumber{}, fmt.Errorf("%w (the number may be the account's now: find it with FindIncomingNumber)", err)
	}
	b := BoughtNumber{SID: sid, PhoneNumber: deref(n.PhoneNumber), AddressRequirements: deref(n.AddressRequirements)}
	if b.PhoneNumber == "" {
		b.PhoneNumber = p.PhoneNumber
	}
	if c := n.Capabilities; c != nil {
		b.Voice, b.SMS, b.MMS = c.Voice, c.Sms, c.Mms
	}
	return b, nil
}

// purchaseError tells Twilio's refusals of a purchase apart, and keeps the webhook URLs (which
// may carry credentials) out of Twilio's message.
func purchaseError(err error, p Purchase) error {
	var re *RegistrationError
	if !errors.As(err, &re) {
		return err
	}
	re.Message = scrub(re.Message, p.SMSURL, p.VoiceURL, p.StatusCallback)
	var why error
	switch re.Code {
	case codeNumberUnavailable:
		why = ErrNumberUnavailable
	case codeNeedsAddress:
		why = ErrNumberNeedsAddress
	case codeNeedsBundle:
		why = ErrNumberNeedsBundle
	default:
		return fmt.Errorf("twilio: buy number: %w", re)
	}
	return fmt.Errorf("twilio: buy number: %w: %w", why, re)
}

// ReleaseNumber releases the account's number sid (DELETE
// /2010-04-01/Accounts/{sid}/IncomingPhoneNumbers/{sid}.json): Twilio stops billing it and it
// leaves any Messaging Service. A number Twilio does not know is released already: no error.
func (t *Transport) ReleaseNumber(ctx context.Context, sid string) error {
	if !phoneNumberSID.MatchString(sid) {
		return fmt.Errorf("twilio: release number: %q is not a phone number sid (PN…)", sid)
	}
	r, err := t.registrar(ctx)
	if err != nil {
		return err
	}
	err = r.do("release number", func() error { return r.api.DeleteIncomingPhoneNumber(sid, nil) })
	if isNotFound(err) {
		return nil
	}
	return err
}

// Requirement is one thing a country's regulation asks of whoever buys its numbers.
type Requirement struct {
	Name string
	// Type is text (the end user's details: Fields), document (a supporting document of one of
	// AcceptedDocuments) or address (an Address of the account).
	Type, Description string
	// AcceptedDocuments are Twilio's supporting document types that satisfy a document or
	// address requirement ("commercial_registrar_excerpt", "address"…).
	AcceptedDocuments []string
	// Fields are the end user's fields of a text requirement (business_name…), or the fields
	// of the accepted documents.
	Fields []string
	// EndUserType is the regulation's: individual or business. A country may have one
	// regulation for each, with requirements of their own.
	EndUserType string
}

// regulationTypes are Twilio's regulation number types of the client's number types.
var regulationTypes = map[string]string{
	strings.ToLower(NumberTypeLocal):    "local",
	strings.ToLower(NumberTypeMobile):   "mobile",
	strings.ToLower(NumberTypeTollFree): "toll-free",
}

// NumberRequirements lists what Twilio's regulations ask of a buyer of country's numbers of
// numberType ("" for every type) (GET https://numbers.twilio.com/v2/RegulatoryCompliance/Regulations),
// following its pages. Each regulation's end user becomes a text requirement, each of its
// supporting documents a document requirement (an address one when the documents it accepts
// are addresses). None is an empty list.
func (t *Transport) NumberRequirements(ctx context.Context, country, numberType string) ([]Requirement, error) {
	cc := strings.ToUpper(country)
	if !isoCountry.MatchString(cc) {
		return nil, fmt.Errorf("twilio: number requirements: %q is not an ISO 3166-1 alpha-2 country code", country)
	}
	params := (&numbers.ListRegulationParams{}).SetIsoCountry(cc).SetIncludeConstraints(true).SetPageSize(regulationPageSize)
	if numberType != "" {
		typ, ok := regulationTypes[strings.ToLower(numberType)]
		if !ok {
			return nil, fmt.Errorf("twilio: number requirements: unknown number type %q (local, mobile or tollFree)", numberType)
		}
		params.SetNumberType(typ)
	}
	r, err := t.registrar(ctx)
	if err != nil {
		return nil, err
	}
	svc := numbers.NewApiService(r.api.RequestHandler())
	out := []Requirement{}
	token, page := "", ""
	for range maxRegulationPages {
		var resp *numbers.ListRegulationResponse
		err := r.do("list regulations", func() error {
			var err error
			resp, err = svc.PageRegulation(params, token, page)
			return err
		})
		if isNotFound(err) {
			return []Requirement{}, nil
		}
		if err != nil {
			return nil, err
		}
		for _, reg := range resp.Results {
			reqs, err := requirementsOf(reg)
			if err != nil {
				return nil, err
			}
			out = append(out, reqs...)
		}
		next := deref(resp.Meta.NextPageUrl)
		if next == "" {
			return out, nil
		}
		u, err := url.Parse(next)
		if err != nil {
			return nil, fmt.Errorf("twilio: list regulations: next page %q: %w", next, err)
		}
		token, page = u.Query().Get("PageToken"), u.Query().Get("Page")
		if token == "" && page == "" {
			return nil, fmt.Errorf("twilio: list regulations: next page %q names no page", next)
		}
	}
	return nil, fmt.Errorf("twilio: list regulations: more than %d pages for %s", maxRegulationPages, cc)
}

// regulationRequirements is a regulation's requirements object, which the SDK leaves untyped.
type regulationRequirements struct {
	EndUser []struct {
		Name            string     `json:"name"`
		Type            string     `json:"type"`
		RequirementName string     `json:"requirement_name"`
		Fields          fieldNames `json:"fields"`
		DetailedFields  fieldNames `json:"detailed_fields"`
	} `json:"end_user"`
	// SupportingDocument is a list of alternatives each: any one document of a group will do.
	SupportingDocument [][]struct {
		Name              string `json:"name"`
		RequirementName   string `json:"requirement_name"`
		Description       string `json:"description"`
		AcceptedDocuments []struct {
			Type   string     `json:"type"`
			Fields fieldNames `json:"fields"`
		} `json:"accepted_documents"`
	} `json:"supporting_document"`
}

// fieldNames reads a list of field names: strings, or objects naming one with machine_name
// (detailed_fields, and fields with their constraints).
type fieldNames []string

func (f *fieldNames) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*f = (*f)[:0]
	for _, r := range raw {
		var name string
		if json.Unmarshal(r, &name) != nil {
			var obj struct {
				MachineName string `json:"machine_name"`
				Name        string `json:"name"`
			}
			if err := json.Unmarshal(r, &obj); err != nil {
				return err
			}
			name = obj.MachineName
			if name == "" {
				name = obj.Name
			}
		}
		if name != "" {
			*f = append(*f, name)
		}
	}
	return nil
}

func requirementsOf(reg numbers.NumbersV2Regulation) ([]Requirement, error) {
	if reg.Requirements == nil || *reg.Requirements == nil {
		return nil, nil
	}
	raw, err := json.Marshal(*reg.Requirements)
	if err != nil {
		return nil, fmt.Errorf("twilio: list regulations: requirements of %s: %w", deref(reg.Sid), err)
	}
	var rr regulationRequirements
	if err := json.Unmarshal(raw, &rr); err != nil {
		return nil, fmt.Errorf("twilio: list regulations: requirements of %s: %w", deref(reg.Sid), err)
	}
	endUserType := deref(reg.EndUserType)
	var out []Requirement
	for _, e := range rr.EndUser {
		name := e.Name
		if name == "" {
			name = e.RequirementName
		}
		fields := []string(e.Fields)
		if len(fields) == 0 {
			fields = e.DetailedFields
		}
		out = append(out, Requirement{Name: name, Type: RequirementText, Fields: fields, EndUserType: endUserType})
	}
	for _, group := range rr.SupportingDocument {
		if len(group) == 0 {
			continue
		}
		// A group is one requirement: its alternatives' names joined, their documents pooled.
		req := Requirement{Type: RequirementAddress, Description: group[0].Description, EndUserType: endUserType}
		var names []string
		for _, d := range group {
			name := d.Name
			if name == "" {
				name = d.RequirementName
			}
			names = append(names, name)
			for _, a := range d.AcceptedDocuments {
				if !slices.Contains(req.AcceptedDocuments, a.Type) {
					req.AcceptedDocuments = append(req.AcceptedDocuments, a.Type)
				}
				for _, f := range a.Fields {
					if !slices.Contains(req.Fields, f) {
						req.Fields = append(req.Fields, f)
					}
				}
				if a.Type != RequirementAddress {
					req.Type = RequirementDocument
				}
			}
		}
		if len(req.AcceptedDocuments) == 0 {
			req.Type = RequirementDocument
		}
		req.Name = strings.Join(names, " or ")
		out = append(out, req)
	}
	return out, nil
}
