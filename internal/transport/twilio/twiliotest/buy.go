package twiliotest

// The peer's number shop, as Twilio's API reference documents it: the numbers for sale
// (AvailablePhoneNumbers), buying one (POST IncomingPhoneNumbers) and releasing it (DELETE), and
// the Regulatory Compliance API's Regulations (numbers.twilio.com, served on the peer's URL as
// every other host's paths are).
//
// The peer starts with these numbers for sale (AddAvailableNumber adds more):
//
//	US Local    +14155550100 … +14155550104  San Francisco, CA; voice, SMS and MMS; no address
//	US TollFree +18005550100                 voice and SMS; no address
//	GB Mobile   +447700900100                voice and SMS; no address
//	DE Local    +4930900100                  Berlin; voice only; a local address and a bundle
//
// and these regulations (any other country, type or end user type has none):
//
//	DE local, business:   end user "Business" (business_name, business_website); documents
//	                      "Commercial Registry Excerpt" (commercial_registrar_excerpt) and
//	                      "Business Address" (an address)
//	GB mobile, individual: end user "Individual" (first_name, last_name); document "Proof of
//	                      Identity" (passport or government_issued_document)

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// AvailableNumberSpec is a number the peer sells (AddAvailableNumber).
type AvailableNumberSpec struct {
	PhoneNumber, Locality, Region string
	Voice, SMS, MMS               bool
	// AddressRequirements is none (""), any, local or foreign: buying the number without an
	// AddressSid (or a BundleSid) is refused with 21631 unless none.
	AddressRequirements string
	// NeedsBundle: buying the number without a BundleSid is refused with 21649.
	NeedsBundle bool
}

// forSale is a number of the shop: for sale while the account does not hold it.
type forSale struct {
	country string // ISO 3166-1 alpha-2
	typ     string // Local, Mobile or TollFree: Twilio's subresource
	AvailableNumberSpec
}

// shop is the numbers for sale of a Server, guarded by its mu.
type shop struct {
	pool   []*forSale
	bought []string // PN sids bought through IncomingPhoneNumbers, in order
}

func defaultShop() shop {
	var pool []*forSale
	for i := range 5 {
		pool = append(pool, &forSale{"US", "Local", AvailableNumberSpec{PhoneNumber: fmt.Sprintf("+1415555010%d", i),
			Locality: "San Francisco", Region: "CA", Voice: true, SMS: true, MMS: true, AddressRequirements: "none"}})
	}
	pool = append(pool,
		&forSale{"US", "TollFree", AvailableNumberSpec{PhoneNumber: "+18005550100", Voice: true, SMS: true, AddressRequirements: "none"}},
		&forSale{"GB", "Mobile", AvailableNumberSpec{PhoneNumber: "+447700900100", Voice: true, SMS: true, AddressRequirements: "none"}},
		&forSale{"DE", "Local", AvailableNumberSpec{PhoneNumber: "+4930900100", Locality: "Berlin", Voice: true,
			AddressRequirements: "local", NeedsBundle: true}},
	)
	return shop{pool: pool}
}

// subresources are Twilio's AvailablePhoneNumbers subresources by the names AddAvailableNumber takes.
var subresources = map[string]string{
	"local": "Local", "mobile": "Mobile", "tollfree": "TollFree", "toll-free": "TollFree",
}

var addressRequirements = []string{"none", "any", "local", "foreign"}

// AddAvailableNumber puts n up for sale as a number of country (ISO 3166-1 alpha-2) and typ
// (local, mobile or tollFree), replacing what the peer had for the same number. It panics on
// what Twilio could not sell.
func (s *Server) AddAvailableNumber(country, typ string, n AvailableNumberSpec) {
	sub, ok := subresources[strings.ToLower(typ)]
	country = strings.ToUpper(country)
	if n.AddressRequirements == "" {
		n.AddressRequirements = "none"
	}
	switch {
	case !ok:
		panic("twiliotest: AddAvailableNumber: unknown number type " + typ)
	case !isoCountry.MatchString(country):
		panic("twiliotest: AddAvailableNumber: not an ISO 3166-1 alpha-2 country: " + country)
	case !e164.MatchString(n.PhoneNumber):
		panic("twiliotest: AddAvailableNumber: not an E.164 number: " + n.PhoneNumber)
	case !slices.Contains(addressRequirements, n.AddressRequirements):
		panic("twiliotest: AddAvailableNumber: unknown address requirement " + n.AddressRequirements)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shop.pool = slices.DeleteFunc(s.shop.pool, func(p *forSale) bool { return p.PhoneNumber == n.PhoneNumber })
	s.shop.pool = append(s.shop.pool, &forSale{country, sub, n})
}

// Bought are the numbers bought through IncomingPhoneNumbers that the account still holds, in
// the order they were bought, with what they were bought with.
func (s *Server) Bought() []IncomingNumber {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []IncomingNumber
	for _, pn := range s.shop.bought {
		if n := find(s.reg.numbers, func(n *IncomingNumber) bool { return n.SID == pn }); n != nil {
			out = append(out, *n)
		}
	}
	return out
}

// buyRoutes are the shop's resources, served as registration's are (serveRegistration).
func (s *Server) buyRoutes(acct string) []regRoute {
	return []regRoute{
		{http.MethodGet, acct + "AvailablePhoneNumbers/*/*", s.listAvailable},
		{http.MethodPost, acct + "IncomingPhoneNumbers.json", s.buyNumber},
		{http.MethodGet, acct + "IncomingPhoneNumbers/*", s.fetchIncomingNumber},
		{http.MethodDelete, acct + "IncomingPhoneNumbers/*", s.releaseNumber},
		{http.MethodGet, "v2/RegulatoryCompliance/Regulations", s.listRegulations},
		{http.MethodGet, "v2/RegulatoryCompliance/Regulations/*", s.fetchRegulation},
		// Regulatory bundles (bundles.go).
		{http.MethodPost, "v2/RegulatoryCompliance/EndUsers", s.createRCEndUser},
		{http.MethodGet, "v2/RegulatoryCompliance/EndUsers", s.listRCEndUsers},
		{http.MethodGet, "v2/RegulatoryCompliance/EndUsers/*", s.fetchRCEndUser},
		{http.MethodPost, "v2/RegulatoryCompliance/SupportingDocuments", s.createRCDocument},
		{http.MethodGet, "v2/RegulatoryCompliance/SupportingDocuments", s.listRCDocuments},
		{http.MethodGet, "v2/RegulatoryCompliance/SupportingDocuments/*", s.fetchRCDocument},
		{http.MethodPost, "v2/RegulatoryCompliance/Bundles", s.createRCBundle},
		{http.MethodGet, "v2/RegulatoryCompliance/Bundles", s.listRCBundles},
		{http.MethodGet, "v2/RegulatoryCompliance/Bundles/*", s.fetchRCBundle},
		{http.MethodPost, "v2/RegulatoryCompliance/Bundles/*", s.updateRCBundle},
		{http.MethodPost, "v2/RegulatoryCompliance/Bundles/*/ItemAssignments", s.assignRCItem},
		{http.MethodGet, "v2/RegulatoryCompliance/Bundles/*/ItemAssignments", s.listRCItems},
		{http.MethodGet, "v2/RegulatoryCompliance/Bundles/*/ItemAssignments/*", s.fetchRCItem},
		{http.MethodPost, "v2/RegulatoryCompliance/Bundles/*/Evaluations", s.createRCEvaluation},
		{http.MethodGet, "v2/RegulatoryCompliance/Bundles/*/Evaluations", s.listRCEvaluations},
		{http.MethodGet, "v2/RegulatoryCompliance/Bundles/*/Evaluations/*", s.fetchRCEvaluation},
	}
}

var (
	isoCountry = regexp.MustCompile(`^[A-Z]{2}$`)
	bundleSID  = regexp.MustCompile(`^BU[0-9a-fA-F]{32}$`)
	addressSID = regexp.MustCompile(`^AD[0-9a-fA-F]{32}$`)
	areaCode   = regexp.MustCompile(`^[0-9]{3}$`)
	// contains is what Twilio's Contains takes: digits, letters and * (any one digit).
	contains = regexp.MustCompile(`^\+?[0-9A-Za-z*]+$`)
)

// available reports whether p is for sale: the account does not hold it.
func (s *Server) available(p *forSale) bool {
	return find(s.reg.numbers, func(n *IncomingNumber) bool { return n.PhoneNumber == p.PhoneNumber }) == nil
}

// keypad turns Twilio's Contains pattern into digits: letters as on a phone's keypad, * kept.
func keypad(pattern string) string {
	const keys = "22233344455566677778889999"
	var b strings.Builder
	for _, c := range strings.TrimPrefix(pattern, "+") {
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteByte(keys[c-'a'])
		case c >= 'A' && c <= 'Z':
			b.WriteByte(keys[c-'A'])
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// boolParam reads a boolean filter; only true filters (false is taken as not given).
func boolParam(f url.Values, name string) (bool, *apiError) {
	v := f.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badParam("Invalid %s %q: not a boolean", name, v)
	}
	return b, nil
}

// pageParams reads PageSize (1 to 1,000, default 50) and Page (from 0).
func pageParams(f url.Values) (size, page int, bad *apiError) {
	size = defaultPageSize
	if v := f.Get("PageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, 0, badParam("Invalid PageSize %q: it must be a positive integer", v)
		}
		size = min(n, maxPageSize)
	}
	if v := f.Get("Page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, 0, badParam("Invalid Page %q: it must be a non-negative integer", v)
		}
		page = n
	}
	return size, page, nil
}

// listAvailable: GET /2010-04-01/Accounts/{sid}/AvailablePhoneNumbers/{country}/{Local|Mobile|TollFree}.json.
// A country the peer sells nothing in, or a type it has none of there, is Twilio's 404 (20404).
// Contains matches anywhere in the number's digits (country code included), a letter as its
// keypad digit and * as any one digit; Twilio's own matching of letters is looser. AreaCode
// filters +1 numbers only, as Twilio's applies to the US and Canada; SmsEnabled, VoiceEnabled
// and MmsEnabled=true keep numbers with the capability. Numbers come in the order they were
// put up for sale, PageSize a page (Page-numbered).
func (s *Server) listAvailable(r *http.Request, f url.Values, args []string) (int, any) {
	country := args[0]
	typ, ok := strings.CutSuffix(args[1], ".json")
	if !ok || !slices.Contains([]string{"Local", "Mobile", "TollFree"}, typ) ||
		!slices.ContainsFunc(s.shop.pool, func(p *forSale) bool { return p.country == country && p.typ == typ }) {
		return 0, resourceNotFound(r.URL.Path)
	}
	pattern := f.Get("Contains")
	if pattern != "" && !contains.MatchString(pattern) {
		return 0, badParam("Invalid Contains %q: only digits, letters and * are allowed", pattern)
	}
	pattern = keypad(pattern)
	area := f.Get("AreaCode")
	if area != "" && !areaCode.MatchString(area) {
		return 0, badParam("Invalid AreaCode %q: it must be three digits", area)
	}
	var need [3]bool
	for i, name := range []string{"SmsEnabled", "VoiceEnabled", "MmsEnabled"} {
		v, bad := boolParam(f, name)
		if bad != nil {
			return 0, bad
		}
		need[i] = v
	}
	size, page, bad := pageParams(f)
	if bad != nil {
		return 0, bad
	}
	var matched []*forSale
	for _, p := range s.shop.pool {
		digits := strings.TrimPrefix(p.PhoneNumber, "+")
		switch {
		case p.country != country || p.typ != typ || !s.available(p):
		case pattern != "" && !matchesNumber(digits, pattern):
		case area != "" && strings.HasPrefix(p.PhoneNumber, "+1") && !strings.HasPrefix(p.PhoneNumber, "+1"+area):
		case need[0] && !p.SMS, need[1] && !p.Voice, need[2] && !p.MMS:
		default:
			matched = append(matched, p)
		}
	}
	start := min(page*size, len(matched))
	end := min(start+size, len(matched))
	list := []map[string]any{}
	for _, p := range matched[start:end] {
		list = append(list, availableJSON(p))
	}
	base := fmt.Sprintf("/%s/Accounts/%s/AvailablePhoneNumbers/%s/%s.json", apiVersion, AccountSID, country, typ)
	pageURI := func(p int) string {
		q := url.Values{"PageSize": {strconv.Itoa(size)}, "Page": {strconv.Itoa(p)}}
		for _, k := range []string{"Contains", "AreaCode", "SmsEnabled", "VoiceEnabled", "MmsEnabled"} {
			if v := f.Get(k); v != "" {
				q.Set(k, v)
			}
		}
		return base + "?" + q.Encode()
	}
	var next, previous any
	if end < len(matched) {
		next = pageURI(page + 1)
	}
	if page > 0 {
		previous = pageURI(page - 1)
	}
	return http.StatusOK, map[string]any{
		"available_phone_numbers": list, "end": max(start+len(list)-1, 0), "first_page_uri": pageURI(0),
		"next_page_uri": next, "page": page, "page_size": size, "previous_page_uri": previous, "start": start,
		"uri": pageURI(page),
	}
}

func availableJSON(p *forSale) map[string]any {
	nilIfEmpty := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	n := map[string]any{
		"friendly_name": friendlyNumber(p.PhoneNumber), "phone_number": p.PhoneNumber, "lata": nil,
		"locality": nilIfEmpty(p.Locality), "rate_center": nil, "latitude": nil, "longitude": nil,
		"region": nilIfEmpty(p.Region), "postal_code": nil, "iso_country": p.country,
		"address_requirements": p.AddressRequirements, "beta": false,
		// Twilio spells these capabilities so.
		"capabilities": map[string]bool{"voice": p.Voice, "SMS": p.SMS, "MMS": p.MMS, "fax": false},
	}
	if p.country == "US" && p.Locality == "San Francisco" {
		n["lata"], n["rate_center"], n["latitude"], n["longitude"], n["postal_code"] = "722", "SNFC", "37.774900", "-122.419400", "94103"
	}
	return n
}

// friendlyNumber is Twilio's friendly name of a number: (415) 555-0100 for +1, else the number.
func friendlyNumber(number string) string {
	if len(number) == 12 && strings.HasPrefix(number, "+1") {
		return fmt.Sprintf("(%s) %s-%s", number[2:5], number[5:8], number[8:])
	}
	return number
}

// buyNumber: POST /2010-04-01/Accounts/{sid}/IncomingPhoneNumbers.json. PhoneNumber is bought
// when for sale (else 21422); without it, AreaCode buys the first +1 local number of the area
// code (else 21452). A number that needs a bundle is refused without BundleSid, or with a
// regulatory bundle that is not approved or is of another country or type (21649: bundles.go's
// bundleCovers); one that needs an address without AddressSid or BundleSid (21631).
func (s *Server) buyNumber(_ *http.Request, f url.Values, _ []string) (int, any) {
	number, area := f.Get("PhoneNumber"), f.Get("AreaCode")
	for _, name := range []string{"SmsMethod", "VoiceMethod", "StatusCallbackMethod"} {
		if v := f.Get(name); v != "" && v != http.MethodGet && v != http.MethodPost {
			return 0, badParam("Invalid %s %q: GET or POST", name, v)
		}
	}
	if v := f.Get("BundleSid"); v != "" && !bundleSID.MatchString(v) {
		return 0, badParam("Invalid BundleSid %q", v)
	}
	if v := f.Get("AddressSid"); v != "" && !addressSID.MatchString(v) {
		return 0, badParam("Invalid AddressSid %q", v)
	}
	var p *forSale
	switch {
	case number != "":
		p = find(s.shop.pool, func(p *forSale) bool { return p.PhoneNumber == number && s.available(p) })
		if p == nil {
			return 0, &apiError{http.StatusBadRequest, 21422, "PhoneNumber requested is not available"}
		}
	case area != "":
		p = find(s.shop.pool, func(p *forSale) bool {
			return (p.country == "US" || p.country == "CA") && p.typ == "Local" && strings.HasPrefix(p.PhoneNumber, "+1"+area) && s.available(p)
		})
		if p == nil {
			return 0, &apiError{http.StatusBadRequest, 21452, "No phone numbers found in area code " + area}
		}
	default:
		return 0, &apiError{http.StatusBadRequest, 21450, "Phone number or area code is required"}
	}
	bundle, address := f.Get("BundleSid"), f.Get("AddressSid")
	switch {
	case p.NeedsBundle && bundle == "":
		return 0, &apiError{http.StatusBadRequest, 21649, fmt.Sprintf("Phone Number %s requires a Bundle: give BundleSid", p.PhoneNumber)}
	case p.NeedsBundle:
		// A regulatory bundle of the peer's must be approved and of the number's country and type.
		if ok, why := s.bundleCovers(bundle, p); !ok {
			return 0, &apiError{http.StatusBadRequest, 21649, fmt.Sprintf("Phone Number %s requires an approved Bundle: %s", p.PhoneNumber, why)}
		}
	case p.AddressRequirements != "none" && address == "" && bundle == "":
		return 0, &apiError{http.StatusBadRequest, 21631, fmt.Sprintf("Phone Number %s requires an Address (%s): give AddressSid", p.PhoneNumber, p.AddressRequirements)}
	}
	n := &IncomingNumber{SID: sid("PN"), PhoneNumber: p.PhoneNumber, SMS: p.SMS, MMS: p.MMS, Voice: p.Voice,
		FriendlyName: f.Get("FriendlyName"), SMSURL: f.Get("SmsUrl"), SMSMethod: f.Get("SmsMethod"),
		VoiceURL: f.Get("VoiceUrl"), VoiceMethod: f.Get("VoiceMethod"), StatusCallback: f.Get("StatusCallback"),
		BundleSID: bundle, AddressSID: address, AddressRequirements: p.AddressRequirements}
	if n.FriendlyName == "" {
		n.FriendlyName = friendlyNumber(n.PhoneNumber)
	}
	s.reg.numbers = append(s.reg.numbers, n)
	s.reg.made(n.SID)
	s.shop.bought = append(s.shop.bought, n.SID)
	return http.StatusCreated, s.incomingNumberJSON(n)
}

func (s *Server) incomingNumber(r *http.Request, arg string) (*IncomingNumber, *apiError) {
	pn, ok := strings.CutSuffix(arg, ".json")
	n := find(s.reg.numbers, func(n *IncomingNumber) bool { return n.SID == pn })
	if !ok || n == nil {
		return nil, resourceNotFound(r.URL.Path)
	}
	return n, nil
}

// fetchIncomingNumber: GET /2010-04-01/Accounts/{sid}/IncomingPhoneNumbers/{sid}.json.
func (s *Server) fetchIncomingNumber(r *http.Request, _ url.Values, args []string) (int, any) {
	n, err := s.incomingNumber(r, args[0])
	if err != nil {
		return 0, err
	}
	return http.StatusOK, s.incomingNumberJSON(n)
}

// releaseNumber: DELETE /2010-04-01/Accounts/{sid}/IncomingPhoneNumbers/{sid}.json. The number
// leaves its Messaging Service, as Twilio's released numbers do, and is for sale again if the
// peer sells it.
func (s *Server) releaseNumber(r *http.Request, _ url.Values, args []string) (int, any) {
	n, err := s.incomingNumber(r, args[0])
	if err != nil {
		return 0, err
	}
	s.reg.numbers = slices.DeleteFunc(s.reg.numbers, func(x *IncomingNumber) bool { return x == n })
	for _, sv := range s.reg.services {
		sv.PhoneNumberSIDs = slices.DeleteFunc(sv.PhoneNumberSIDs, func(p string) bool { return p == n.SID })
	}
	return http.StatusNoContent, noContent{}
}

// Regulation sids of the peer's table.
const (
	RegulationDELocalBusiness    = "RN0f6a2bde5c0b4a7e8d5c3b2a1f0e9d8c"
	RegulationGBMobileIndividual = "RN1e7b3cef6d1c5b8f9e6d4c3b2a1f0e9d"
)

// regulationsTable is the peer's regulations as Twilio answers them; constraints adds the
// (empty) constraint of each end user and field, as IncludeConstraints=true does.
func (s *Server) regulationsTable(constraints bool) []map[string]any {
	types := s.URL + "/v2/RegulatoryCompliance/"
	field := func(machine, friendly, description string) map[string]any {
		f := map[string]any{"machine_name": machine, "friendly_name": friendly, "description": description}
		if constraints {
			f["constraint"] = nil
		}
		return f
	}
	endUser := func(name, typ string, fields ...map[string]any) map[string]any {
		var names []string
		for _, f := range fields {
			names = append(names, f["machine_name"].(string))
		}
		e := map[string]any{"name": name, "type": typ, "requirement_name": typ + "_info",
			"url": types + "EndUserTypes/" + typ, "fields": names, "detailed_fields": fields}
		if constraints {
			e["constraint"] = nil
		}
		return e
	}
	document := func(name, requirement, description string, accepted ...map[string]any) []map[string]any {
		return []map[string]any{{"name": name, "type": "document", "requirement_name": requirement,
			"description": description, "accepted_documents": accepted}}
	}
	accepted := func(name, typ string, fields ...string) map[string]any {
		return map[string]any{"name": name, "type": typ, "url": types + "SupportingDocumentTypes/" + typ, "fields": fields}
	}
	regulation := func(sid, friendly, country, numberType, endUserType string, requirements map[string]any) map[string]any {
		return map[string]any{"sid": sid, "friendly_name": friendly, "iso_country": country, "number_type": numberType,
			"end_user_type": endUserType, "requirements": requirements, "url": types + "Regulations/" + sid}
	}
	return []map[string]any{
		regulation(RegulationDELocalBusiness, "Germany: Local - Business", "DE", "local", "business", map[string]any{
			"end_user": []map[string]any{endUser("Business", "business",
				field("business_name", "Business Name", "The name of the business as registered."),
				field("business_website", "Business Website", "The business's website."))},
			"supporting_document": [][]map[string]any{
				document("Commercial Registry Excerpt", "proof_of_business",
					"An excerpt from the commercial register (Handelsregisterauszug) showing the business name.",
					accepted("Excerpt from the commercial register", "commercial_registrar_excerpt", "business_name")),
				document("Business Address", "business_address_info",
					"The business's address in the area of the number's area code.",
					accepted("Address", "address", "address_sids")),
			},
		}),
		regulation(RegulationGBMobileIndividual, "United Kingdom: Mobile - Individual", "GB", "mobile", "individual", map[string]any{
			"end_user": []map[string]any{endUser("Individual", "individual",
				field("first_name", "First Name", "First name of the individual."),
				field("last_name", "Last Name", "Last name of the individual."))},
			"supporting_document": [][]map[string]any{
				document("Proof of Identity", "proof_of_identity", "A government-issued document showing the individual's name.",
					accepted("Passport", "passport", "first_name", "last_name"),
					accepted("Government-issued ID", "government_issued_document", "first_name", "last_name")),
			},
		}),
	}
}

// listRegulations: GET /v2/RegulatoryCompliance/Regulations, filtered by IsoCountry (any case),
// NumberType and EndUserType, in pages of PageSize (Page-numbered) with Twilio's meta.
func (s *Server) listRegulations(_ *http.Request, f url.Values, _ []string) (int, any) {
	constraints, bad := boolParam(f, "IncludeConstraints")
	if bad != nil {
		return 0, bad
	}
	endUserType := f.Get("EndUserType")
	if endUserType != "" && endUserType != "individual" && endUserType != "business" {
		return 0, badParam("Invalid EndUserType %q: individual or business", endUserType)
	}
	size, page, bad := pageParams(f)
	if bad != nil {
		return 0, bad
	}
	var matched []map[string]any
	for _, reg := range s.regulationsTable(constraints) {
		switch {
		case f.Get("IsoCountry") != "" && !strings.EqualFold(f.Get("IsoCountry"), reg["iso_country"].(string)):
		case f.Get("NumberType") != "" && !strings.EqualFold(f.Get("NumberType"), reg["number_type"].(string)):
		case endUserType != "" && endUserType != reg["end_user_type"]:
		default:
			matched = append(matched, reg)
		}
	}
	start := min(page*size, len(matched))
	end := min(start+size, len(matched))
	results := append([]map[string]any{}, matched[start:end]...)
	pageURL := func(p int) string {
		q := url.Values{"PageSize": {strconv.Itoa(size)}, "Page": {strconv.Itoa(p)}}
		for _, k := range []string{"IsoCountry", "NumberType", "EndUserType", "IncludeConstraints"} {
			if v := f.Get(k); v != "" {
				q.Set(k, v)
			}
		}
		return s.URL + "/v2/RegulatoryCompliance/Regulations?" + q.Encode()
	}
	var next, previous any
	if end < len(matched) {
		next = pageURL(page + 1)
	}
	if page > 0 {
		previous = pageURL(page - 1)
	}
	return http.StatusOK, map[string]any{
		"results": results,
		"meta": map[string]any{"page": page, "page_size": size, "first_page_url": pageURL(0),
			"previous_page_url": previous, "url": pageURL(page), "next_page_url": next, "key": "results"},
	}
}

// fetchRegulation: GET /v2/RegulatoryCompliance/Regulations/{sid}.
func (s *Server) fetchRegulation(r *http.Request, f url.Values, args []string) (int, any) {
	constraints, bad := boolParam(f, "IncludeConstraints")
	if bad != nil {
		return 0, bad
	}
	for _, reg := range s.regulationsTable(constraints) {
		if reg["sid"] == args[0] {
			return http.StatusOK, reg
		}
	}
	return 0, resourceNotFound(r.URL.Path)
}
