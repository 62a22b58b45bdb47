package twiliotest

// The peer's A2P 10DLC registration: the Trust Hub bundles, end users, supporting documents and
// v2010 addresses of a secondary customer's brand, Messaging's BrandRegistrations, Services,
// UsAppToPerson campaigns and service PhoneNumbers, and the account's IncomingPhoneNumbers.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Policy sids of the Trust Hub bundles an ISV makes for a secondary customer's A2P 10DLC brand.
const (
	// CustomerProfilePolicySID is the policy of a Secondary Customer Profile.
	CustomerProfilePolicySID = "RNdfbf3fae0e1107f8aded0e7cead80bf5"
	// A2PTrustProductPolicySID is the policy of an A2P Messaging Profile (a Trust Product).
	A2PTrustProductPolicySID = "RNb0d4771c2c98518d916a3d4cd70a8f8b"
)

// End user types and the supporting document type the two policies take.
const (
	EndUserBusinessInformation  = "customer_profile_business_information"
	EndUserAuthorizedRep        = "authorized_representative_1"
	EndUserA2PMessagingProfile  = "us_a2p_messaging_profile_information"
	DocumentCustomerProfileAddr = "customer_profile_address"
)

// Bundle statuses: a bundle is made in draft and submitted with Status=pending-review.
const (
	BundleDraft         = "draft"
	BundlePendingReview = "pending-review"
)

// Bundle is a Customer Profile or a Trust Product.
type Bundle struct {
	SID, FriendlyName, Email, PolicySID string
	// Status is draft or pending-review.
	Status string
	// Assigned are the ObjectSids of its EntityAssignments, in order.
	Assigned []string
}

// EndUser is a Trust Hub EndUser.
type EndUser struct {
	SID, FriendlyName, Type string
	Attributes              map[string]any
}

// SupportingDocument is a Trust Hub SupportingDocument.
type SupportingDocument struct {
	SID, FriendlyName, Type string
	Attributes              map[string]any
}

// Address is an Address of the account (API v2010).
type Address struct {
	SID, FriendlyName, CustomerName, Street, City, Region, PostalCode, IsoCountry string
}

// Brand is an A2P BrandRegistration.
type Brand struct {
	SID, CustomerProfileBundleSID, A2PProfileBundleSID, BrandType string
	// Status is PENDING until DecideBrand.
	Status, IdentityStatus string
	Score                  *int
	FailureReason          string
}

// Service is a Messaging Service.
type Service struct {
	SID, FriendlyName string
	// PhoneNumberSIDs are the PN sids in the service, in order.
	PhoneNumberSIDs []string
}

// Campaign is a UsAppToPerson (an A2P campaign) of a Messaging Service.
type Campaign struct {
	SID, ServiceSID, BrandSID                string
	Description, MessageFlow, Usecase        string
	MessageSamples                           []string
	HasEmbeddedLinks, HasEmbeddedPhone       bool
	SubscriberOptIn, AgeGated, DirectLending bool
	HelpMessage                              string
	OptInKeywords, OptOutKeywords            []string
	// Status is IN_PROGRESS until DecideCampaign.
	Status, FailureReason string
}

// RegistrationsSnapshot is what the peer holds of A2P 10DLC registration, each list in the
// order it was made; deleted campaigns are gone from it.
type RegistrationsSnapshot struct {
	CustomerProfiles    []Bundle
	TrustProducts       []Bundle
	EndUsers            []EndUser
	SupportingDocuments []SupportingDocument
	Addresses           []Address
	Brands              []Brand
	Services            []Service
	Campaigns           []Campaign
	IncomingNumbers     []IncomingNumber
}

// injected is an answer FailNext queued for a path.
type injected struct {
	status, code int
	message      string
}

// registry is the registration state of a Server, guarded by its mu.
type registry struct {
	customerProfiles []*Bundle
	trustProducts    []*Bundle
	endUsers         []*EndUser
	documents        []*SupportingDocument
	addresses        []*Address
	brands           []*Brand
	services         []*Service
	campaigns        []*Campaign
	numbers          []*IncomingNumber
	numberLists      int // requests to the IncomingPhoneNumbers list (numbers.go)
	// created is when each sid was made, for date_created in answers.
	created  map[string]time.Time
	failNext map[string][]injected
}

func (g *registry) made(sid string) {
	if g.created == nil {
		g.created = map[string]time.Time{}
	}
	g.created[sid] = time.Now().UTC()
}

func find[T any](list []*T, match func(*T) bool) *T {
	for _, v := range list {
		if match(v) {
			return v
		}
	}
	return nil
}

// DecideBrand sets what the brand registration reports: status (APPROVED, FAILED, SUSPENDED…),
// identity status (VERIFIED, UNVERIFIED… or ""), score (a negative one leaves brand_score null)
// and failure reason (also reported as the brand's one error).
func (s *Server) DecideBrand(brandSid, status, identityStatus string, score int, failureReason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := find(s.reg.brands, func(b *Brand) bool { return b.SID == brandSid })
	if b == nil {
		panic("twiliotest: DecideBrand: unknown brand " + brandSid)
	}
	b.Status, b.IdentityStatus, b.FailureReason, b.Score = status, identityStatus, failureReason, nil
	if score >= 0 {
		b.Score = &score
	}
}

// DecideCampaign sets what the campaign reports: status (VERIFIED, FAILED, SUSPENDED…) and a
// failure reason, reported as the campaign's one error (campaigns have no failure_reason).
func (s *Server) DecideCampaign(campaignSid, status string, failureReason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := find(s.reg.campaigns, func(c *Campaign) bool { return c.SID == campaignSid })
	if c == nil {
		panic("twiliotest: DecideCampaign: unknown campaign " + campaignSid)
	}
	c.Status, c.FailureReason = status, failureReason
}

// FailNext makes the next request to path (any of the peer's paths, such as
// "/v1/a2p/BrandRegistrations") answer status with Twilio's error code and message. Calls queue:
// each request to path takes one.
func (s *Server) FailNext(path string, status, code int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reg.failNext == nil {
		s.reg.failNext = map[string][]injected{}
	}
	s.reg.failNext[path] = append(s.reg.failNext[path], injected{status, code, message})
}

// Registrations is a copy of what the peer holds of A2P 10DLC registration.
func (s *Server) Registrations() RegistrationsSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &s.reg
	var out RegistrationsSnapshot
	for _, b := range g.customerProfiles {
		c := *b
		c.Assigned = slices.Clone(b.Assigned)
		out.CustomerProfiles = append(out.CustomerProfiles, c)
	}
	for _, b := range g.trustProducts {
		c := *b
		c.Assigned = slices.Clone(b.Assigned)
		out.TrustProducts = append(out.TrustProducts, c)
	}
	for _, e := range g.endUsers {
		c := *e
		c.Attributes = cloneMap(e.Attributes)
		out.EndUsers = append(out.EndUsers, c)
	}
	for _, d := range g.documents {
		c := *d
		c.Attributes = cloneMap(d.Attributes)
		out.SupportingDocuments = append(out.SupportingDocuments, c)
	}
	for _, a := range g.addresses {
		out.Addresses = append(out.Addresses, *a)
	}
	for _, b := range g.brands {
		c := *b
		if b.Score != nil {
			v := *b.Score
			c.Score = &v
		}
		out.Brands = append(out.Brands, c)
	}
	for _, sv := range g.services {
		c := *sv
		c.PhoneNumberSIDs = slices.Clone(sv.PhoneNumberSIDs)
		out.Services = append(out.Services, c)
	}
	for _, cp := range g.campaigns {
		c := *cp
		c.MessageSamples = slices.Clone(cp.MessageSamples)
		c.OptInKeywords = slices.Clone(cp.OptInKeywords)
		c.OptOutKeywords = slices.Clone(cp.OptOutKeywords)
		out.Campaigns = append(out.Campaigns, c)
	}
	for _, n := range g.numbers {
		out.IncomingNumbers = append(out.IncomingNumbers, *n)
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// apiError is a refusal a handler answers: Twilio's error body.
type apiError struct {
	status, code int
	message      string
}

func badParam(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, 20001, fmt.Sprintf(format, args...)}
}

func missing(name string) *apiError {
	return badParam("Missing required parameter %s in the post body", name)
}

func resourceNotFound(path string) *apiError {
	return &apiError{http.StatusNotFound, 20404, fmt.Sprintf("The requested resource %s was not found", path)}
}

// noContent is the answer of a DELETE.
type noContent struct{}

// regHandler answers one request under s.mu: a JSON body, noContent or an *apiError.
type regHandler func(r *http.Request, f url.Values, args []string) (int, any)

type regRoute struct {
	method  string
	pattern string // path segments; * matches one segment, passed in args
	handle  regHandler
}

// serveRegistration answers the Trust Hub, Messaging and v2010 resources of A2P 10DLC
// registration, the number shop's (buy.go), and what FailNext queued for any path; false leaves
// the request to serve.
func (s *Server) serveRegistration(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	if q := s.reg.failNext[r.URL.Path]; len(q) > 0 {
		s.reg.failNext[r.URL.Path] = q[1:]
		s.mu.Unlock()
		writeError(w, q[0].status, q[0].code, q[0].message)
		return true
	}
	s.mu.Unlock()

	acct := "2010-04-01/Accounts/" + AccountSID + "/"
	routes := []regRoute{
		{http.MethodPost, "v1/CustomerProfiles", s.createBundle(false)},
		{http.MethodPost, "v1/CustomerProfiles/*", s.updateBundle(false)},
		{http.MethodPost, "v1/CustomerProfiles/*/EntityAssignments", s.assignEntity(false)},
		{http.MethodPost, "v1/TrustProducts", s.createBundle(true)},
		{http.MethodPost, "v1/TrustProducts/*", s.updateBundle(true)},
		{http.MethodPost, "v1/TrustProducts/*/EntityAssignments", s.assignEntity(true)},
		{http.MethodPost, "v1/EndUsers", s.createEndUser},
		{http.MethodPost, "v1/SupportingDocuments", s.createDocument},
		{http.MethodPost, acct + "Addresses.json", s.createAddress},
		{http.MethodGet, acct + "IncomingPhoneNumbers.json", s.listIncomingNumbers},
		{http.MethodPost, "v1/a2p/BrandRegistrations", s.createBrand},
		{http.MethodGet, "v1/a2p/BrandRegistrations/*", s.fetchBrand},
		{http.MethodPost, "v1/Services", s.createService},
		{http.MethodPost, "v1/Services/*/Compliance/Usa2p", s.createCampaign},
		{http.MethodGet, "v1/Services/*/Compliance/Usa2p/*", s.fetchCampaign},
		{http.MethodDelete, "v1/Services/*/Compliance/Usa2p/*", s.deleteCampaign},
		{http.MethodPost, "v1/Services/*/PhoneNumbers", s.addServiceNumber},
		{http.MethodDelete, "v1/Services/*/PhoneNumbers/*", s.removeServiceNumber},
	}
	routes = append(routes, s.buyRoutes(acct)...)
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	pathKnown := false
	for _, rt := range routes {
		args, ok := matchPath(rt.pattern, segs)
		if !ok {
			continue
		}
		pathKnown = true
		if rt.method != r.Method {
			continue
		}
		if err := r.ParseForm(); err != nil {
			writeError(w, http.StatusBadRequest, 20001, "Invalid form body")
			return true
		}
		f := r.PostForm
		if r.Method == http.MethodGet || r.Method == http.MethodDelete {
			f = r.URL.Query()
		}
		s.mu.Lock()
		status, body := rt.handle(r, f, args)
		s.mu.Unlock()
		switch b := body.(type) {
		case *apiError:
			writeError(w, b.status, b.code, b.message)
		case noContent:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, status, body)
		}
		return true
	}
	switch {
	case pathKnown:
		methodNotAllowed(w)
	case segs[0] == "v1":
		notFound(w, r)
	default:
		return false
	}
	return true
}

func matchPath(pattern string, segs []string) ([]string, bool) {
	ps := strings.Split(pattern, "/")
	if len(ps) != len(segs) {
		return nil, false
	}
	var args []string
	for i, p := range ps {
		switch {
		case p == "*" && segs[i] != "":
			args = append(args, segs[i])
		case p != segs[i]:
			return nil, false
		}
	}
	return args, true
}

// Formats of answers: Trust Hub and Messaging v1 write ISO 8601, v2010 RFC 1123.
func (s *Server) iso(sid string) string {
	return s.reg.created[sid].Format(time.RFC3339)
}

func (s *Server) rfc1123(sid string) string {
	return s.reg.created[sid].Format(time.RFC1123Z)
}

// required reads the form's required parameters in order; the first one missing is refused.
func required(f url.Values, names ...string) *apiError {
	for _, n := range names {
		if strings.TrimSpace(f.Get(n)) == "" {
			return missing(n)
		}
	}
	return nil
}

// attributes reads Attributes: a JSON object when present.
func attributes(f url.Values) (map[string]any, *apiError) {
	raw := f.Get("Attributes")
	if raw == "" {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil, badParam("Invalid Attributes: not a JSON object")
	}
	return m, nil
}

func (s *Server) bundles(trust bool) *[]*Bundle {
	if trust {
		return &s.reg.trustProducts
	}
	return &s.reg.customerProfiles
}

func (s *Server) bundleJSON(b *Bundle, trust bool) map[string]any {
	kind, prefix := "CustomerProfiles", "customer_profiles"
	if trust {
		kind, prefix = "TrustProducts", "trust_products"
	}
	u := s.URL + "/v1/" + kind + "/" + b.SID
	return map[string]any{
		"sid": b.SID, "account_sid": AccountSID, "policy_sid": b.PolicySID, "friendly_name": b.FriendlyName,
		"status": b.Status, "valid_until": nil, "email": b.Email, "status_callback": nil,
		"date_created": s.iso(b.SID), "date_updated": s.iso(b.SID), "url": u, "errors": nil,
		"links": map[string]string{
			prefix + "_entity_assignments":          u + "/EntityAssignments",
			prefix + "_evaluations":                 u + "/Evaluations",
			prefix + "_channel_endpoint_assignment": u + "/ChannelEndpointAssignments",
		},
	}
}

// createBundle: POST /v1/CustomerProfiles, POST /v1/TrustProducts.
func (s *Server) createBundle(trust bool) regHandler {
	return func(_ *http.Request, f url.Values, _ []string) (int, any) {
		if err := required(f, "FriendlyName", "Email", "PolicySid"); err != nil {
			return 0, err
		}
		policy := CustomerProfilePolicySID
		if trust {
			policy = A2PTrustProductPolicySID
		}
		if f.Get("PolicySid") != policy {
			return 0, badParam("Invalid PolicySid %s for this resource", f.Get("PolicySid"))
		}
		b := &Bundle{SID: sid("BU"), FriendlyName: f.Get("FriendlyName"), Email: f.Get("Email"), PolicySID: policy, Status: BundleDraft}
		list := s.bundles(trust)
		*list = append(*list, b)
		s.reg.made(b.SID)
		return http.StatusCreated, s.bundleJSON(b, trust)
	}
}

// updateBundle: POST /v1/CustomerProfiles/{sid}, POST /v1/TrustProducts/{sid}. Submitting
// (Status=pending-review) evaluates the bundle against its policy, as Twilio does.
func (s *Server) updateBundle(trust bool) regHandler {
	return func(r *http.Request, f url.Values, args []string) (int, any) {
		b := find(*s.bundles(trust), func(b *Bundle) bool { return b.SID == args[0] })
		if b == nil {
			return 0, resourceNotFound(r.URL.Path)
		}
		if st := f.Get("Status"); st != "" {
			if st != BundlePendingReview {
				return 0, badParam("Invalid Status %s: a bundle can only be submitted (pending-review)", st)
			}
			if b.Status != BundleDraft {
				return 0, badParam("Bundle %s is %s, not draft: it cannot be submitted again", b.SID, b.Status)
			}
			if missingItem := s.evaluate(b, trust); missingItem != "" {
				return 0, badParam("Bundle %s is not compliant with its policy: %s", b.SID, missingItem)
			}
			b.Status = st
		}
		if v := f.Get("FriendlyName"); v != "" {
			b.FriendlyName = v
		}
		if v := f.Get("Email"); v != "" {
			b.Email = v
		}
		return http.StatusOK, s.bundleJSON(b, trust)
	}
}

// evaluate is what the bundle lacks for its policy ("" when nothing).
func (s *Server) evaluate(b *Bundle, trust bool) string {
	has := func(kind string) bool {
		for _, o := range b.Assigned {
			if e := find(s.reg.endUsers, func(e *EndUser) bool { return e.SID == o }); e != nil && e.Type == kind {
				return true
			}
			if d := find(s.reg.documents, func(d *SupportingDocument) bool { return d.SID == o }); d != nil && d.Type == kind {
				return true
			}
			if p := find(s.reg.customerProfiles, func(p *Bundle) bool { return p.SID == o }); p != nil && kind == "customer_profile" {
				return true
			}
		}
		return false
	}
	need := []string{EndUserBusinessInformation, EndUserAuthorizedRep, DocumentCustomerProfileAddr}
	if trust {
		need = []string{EndUserA2PMessagingProfile, "customer_profile"}
	}
	for _, k := range need {
		if !has(k) {
			return "no " + k + " is assigned"
		}
	}
	return ""
}

// assignEntity: POST /v1/{CustomerProfiles|TrustProducts}/{sid}/EntityAssignments.
func (s *Server) assignEntity(trust bool) regHandler {
	return func(r *http.Request, f url.Values, args []string) (int, any) {
		b := find(*s.bundles(trust), func(b *Bundle) bool { return b.SID == args[0] })
		if b == nil {
			return 0, resourceNotFound(r.URL.Path)
		}
		if err := required(f, "ObjectSid"); err != nil {
			return 0, err
		}
		obj := f.Get("ObjectSid")
		// What each policy takes: the business's end users and address for a customer profile; the
		// A2P messaging profile end user and the customer profile for a trust product.
		allowed := false
		if e := find(s.reg.endUsers, func(e *EndUser) bool { return e.SID == obj }); e != nil {
			allowed = (e.Type == EndUserA2PMessagingProfile) == trust
		} else if d := find(s.reg.documents, func(d *SupportingDocument) bool { return d.SID == obj }); d != nil {
			allowed = !trust
		} else if p := find(s.reg.customerProfiles, func(p *Bundle) bool { return p.SID == obj }); p != nil {
			allowed = trust
		} else {
			return 0, badParam("Invalid ObjectSid %s: no such EndUser, SupportingDocument or CustomerProfile", obj)
		}
		switch {
		case !allowed:
			return 0, badParam("ObjectSid %s cannot be assigned to %s under its policy", obj, b.SID)
		case b.Status != BundleDraft:
			return 0, badParam("Bundle %s is %s: only a draft bundle takes assignments", b.SID, b.Status)
		case slices.Contains(b.Assigned, obj):
			return 0, badParam("ObjectSid %s is already assigned to %s", obj, b.SID)
		}
		b.Assigned = append(b.Assigned, obj)
		a := sid("BV")
		s.reg.made(a)
		owner, kind := "customer_profile_sid", "CustomerProfiles"
		if trust {
			owner, kind = "trust_product_sid", "TrustProducts"
		}
		return http.StatusCreated, map[string]any{
			"sid": a, owner: b.SID, "account_sid": AccountSID, "object_sid": obj, "date_created": s.iso(a),
			"url": s.URL + "/v1/" + kind + "/" + b.SID + "/EntityAssignments/" + a,
		}
	}
}

// createEndUser: POST /v1/EndUsers.
func (s *Server) createEndUser(_ *http.Request, f url.Values, _ []string) (int, any) {
	if err := required(f, "FriendlyName", "Type"); err != nil {
		return 0, err
	}
	typ := f.Get("Type")
	if typ != EndUserBusinessInformation && typ != EndUserAuthorizedRep && typ != EndUserA2PMessagingProfile {
		return 0, badParam("Invalid Type %s", typ)
	}
	attrs, bad := attributes(f)
	if bad != nil {
		return 0, bad
	}
	e := &EndUser{SID: sid("IT"), FriendlyName: f.Get("FriendlyName"), Type: typ, Attributes: attrs}
	s.reg.endUsers = append(s.reg.endUsers, e)
	s.reg.made(e.SID)
	return http.StatusCreated, map[string]any{
		"sid": e.SID, "account_sid": AccountSID, "friendly_name": e.FriendlyName, "type": e.Type,
		"attributes": e.Attributes, "date_created": s.iso(e.SID), "date_updated": s.iso(e.SID),
		"url": s.URL + "/v1/EndUsers/" + e.SID,
	}
}

// createDocument: POST /v1/SupportingDocuments (the address document only).
func (s *Server) createDocument(_ *http.Request, f url.Values, _ []string) (int, any) {
	if err := required(f, "FriendlyName", "Type"); err != nil {
		return 0, err
	}
	if typ := f.Get("Type"); typ != DocumentCustomerProfileAddr {
		return 0, badParam("Invalid Type %s", typ)
	}
	attrs, bad := attributes(f)
	if bad != nil {
		return 0, bad
	}
	var sids []string
	switch v := attrs["address_sids"].(type) {
	case string:
		sids = []string{v}
	case []any:
		for _, x := range v {
			if str, ok := x.(string); ok {
				sids = append(sids, str)
			}
		}
	}
	if len(sids) == 0 {
		return 0, badParam("Attributes of a %s need address_sids", DocumentCustomerProfileAddr)
	}
	for _, a := range sids {
		if find(s.reg.addresses, func(x *Address) bool { return x.SID == a }) == nil {
			return 0, badParam("Invalid address_sids: %s is not an Address of the account", a)
		}
	}
	d := &SupportingDocument{SID: sid("RD"), FriendlyName: f.Get("FriendlyName"), Type: f.Get("Type"), Attributes: attrs}
	s.reg.documents = append(s.reg.documents, d)
	s.reg.made(d.SID)
	return http.StatusCreated, map[string]any{
		"sid": d.SID, "account_sid": AccountSID, "friendly_name": d.FriendlyName, "mime_type": nil,
		"status": "draft", "type": d.Type, "attributes": d.Attributes, "date_created": s.iso(d.SID),
		"date_updated": s.iso(d.SID), "url": s.URL + "/v1/SupportingDocuments/" + d.SID,
	}
}

// createAddress: POST /2010-04-01/Accounts/{sid}/Addresses.json.
func (s *Server) createAddress(_ *http.Request, f url.Values, _ []string) (int, any) {
	if err := required(f, "CustomerName", "Street", "City", "Region", "PostalCode", "IsoCountry"); err != nil {
		return 0, err
	}
	if c := f.Get("IsoCountry"); len(c) != 2 || strings.ToUpper(c) != c {
		return 0, badParam("Invalid IsoCountry %s: not an ISO 3166-1 alpha-2 code", c)
	}
	a := &Address{SID: sid("AD"), FriendlyName: f.Get("FriendlyName"), CustomerName: f.Get("CustomerName"), Street: f.Get("Street"),
		City: f.Get("City"), Region: f.Get("Region"), PostalCode: f.Get("PostalCode"), IsoCountry: f.Get("IsoCountry")}
	s.reg.addresses = append(s.reg.addresses, a)
	s.reg.made(a.SID)
	return http.StatusCreated, map[string]any{
		"account_sid": AccountSID, "city": a.City, "customer_name": a.CustomerName, "date_created": s.rfc1123(a.SID),
		"date_updated": s.rfc1123(a.SID), "friendly_name": a.FriendlyName, "iso_country": a.IsoCountry,
		"postal_code": a.PostalCode, "region": a.Region, "sid": a.SID, "street": a.Street, "street_secondary": nil,
		"emergency_enabled": false, "validated": false, "verified": false,
		"uri": fmt.Sprintf("/%s/Accounts/%s/Addresses/%s.json", apiVersion, AccountSID, a.SID),
	}
}

// createBrand: POST /v1/a2p/BrandRegistrations. Both bundles must exist and be submitted.
func (s *Server) createBrand(_ *http.Request, f url.Values, _ []string) (int, any) {
	if err := required(f, "CustomerProfileBundleSid", "A2PProfileBundleSid"); err != nil {
		return 0, err
	}
	cp := find(s.reg.customerProfiles, func(b *Bundle) bool { return b.SID == f.Get("CustomerProfileBundleSid") })
	if cp == nil {
		return 0, badParam("Invalid CustomerProfileBundleSid %s: no such Customer Profile", f.Get("CustomerProfileBundleSid"))
	}
	tp := find(s.reg.trustProducts, func(b *Bundle) bool { return b.SID == f.Get("A2PProfileBundleSid") })
	if tp == nil {
		return 0, badParam("Invalid A2PProfileBundleSid %s: no such Trust Product", f.Get("A2PProfileBundleSid"))
	}
	for _, b := range []*Bundle{cp, tp} {
		if b.Status != BundlePendingReview {
			return 0, badParam("Bundle %s is %s: submit it (pending-review) before registering the brand", b.SID, b.Status)
		}
	}
	brandType := f.Get("BrandType")
	switch brandType {
	case "":
		brandType = "STANDARD"
	case "STANDARD", "SOLE_PROPRIETOR":
	default:
		return 0, badParam("Invalid BrandType %s", brandType)
	}
	b := &Brand{SID: sid("BN"), CustomerProfileBundleSID: cp.SID, A2PProfileBundleSID: tp.SID, BrandType: brandType, Status: "PENDING"}
	s.reg.brands = append(s.reg.brands, b)
	s.reg.made(b.SID)
	return http.StatusCreated, s.brandJSON(b)
}

// fetchBrand: GET /v1/a2p/BrandRegistrations/{sid}.
func (s *Server) fetchBrand(r *http.Request, _ url.Values, args []string) (int, any) {
	b := find(s.reg.brands, func(b *Brand) bool { return b.SID == args[0] })
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	return http.StatusOK, s.brandJSON(b)
}

func (s *Server) brandJSON(b *Brand) map[string]any {
	u := s.URL + "/v1/a2p/BrandRegistrations/" + b.SID
	var reason, identity, tcr any
	errs := []map[string]any{}
	if b.FailureReason != "" {
		reason = b.FailureReason
		errs = append(errs, map[string]any{"code": 30794, "description": b.FailureReason, "fields": []string{}})
	}
	if b.IdentityStatus != "" {
		identity = b.IdentityStatus
	}
	if b.Status == "APPROVED" {
		tcr = "B" + strings.ToUpper(b.SID[2:8])
	}
	var score any
	if b.Score != nil {
		score = *b.Score
	}
	return map[string]any{
		"sid": b.SID, "account_sid": AccountSID, "customer_profile_bundle_sid": b.CustomerProfileBundleSID,
		"a2p_profile_bundle_sid": b.A2PProfileBundleSID, "date_created": s.iso(b.SID), "date_updated": s.iso(b.SID),
		"brand_type": b.BrandType, "status": b.Status, "tcr_id": tcr, "failure_reason": reason, "errors": errs,
		"url": u, "brand_score": score, "brand_feedback": nil, "identity_status": identity, "russell_3000": false,
		"government_entity": false, "tax_exempt_status": nil, "skip_automatic_sec_vet": false, "mock": false,
		"links": map[string]string{"brand_vettings": u + "/Vettings", "brand_registration_otps": u + "/SmsOtp"},
	}
}

// createService: POST /v1/Services.
func (s *Server) createService(_ *http.Request, f url.Values, _ []string) (int, any) {
	if err := required(f, "FriendlyName"); err != nil {
		return 0, err
	}
	if len(f.Get("FriendlyName")) > 64 {
		return 0, badParam("Invalid FriendlyName: longer than 64 characters")
	}
	sv := &Service{SID: sid("MG"), FriendlyName: f.Get("FriendlyName")}
	s.reg.services = append(s.reg.services, sv)
	s.reg.made(sv.SID)
	u := s.URL + "/v1/Services/" + sv.SID
	return http.StatusCreated, map[string]any{
		"sid": sv.SID, "account_sid": AccountSID, "friendly_name": sv.FriendlyName, "date_created": s.iso(sv.SID),
		"date_updated": s.iso(sv.SID), "inbound_request_url": nil, "inbound_method": "POST", "fallback_url": nil,
		"fallback_method": "POST", "status_callback": nil, "sticky_sender": true, "mms_converter": true,
		"smart_encoding": true, "scan_message_content": "inherit", "fallback_to_long_code": true,
		"area_code_geomatch": true, "synchronous_validation": true, "validity_period": 14400, "url": u,
		"usecase": "undeclared", "us_app_to_person_registered": false, "use_inbound_webhook_on_number": false,
		"links": map[string]string{
			"phone_numbers": u + "/PhoneNumbers", "short_codes": u + "/ShortCodes", "alpha_senders": u + "/AlphaSenders",
			"us_app_to_person": u + "/Compliance/Usa2p", "us_app_to_person_usecases": u + "/Compliance/Usa2p/Usecases",
		},
	}
}

func (s *Server) service(sid string) *Service {
	return find(s.reg.services, func(sv *Service) bool { return sv.SID == sid })
}

// createCampaign: POST /v1/Services/{sid}/Compliance/Usa2p.
func (s *Server) createCampaign(r *http.Request, f url.Values, args []string) (int, any) {
	sv := s.service(args[0])
	if sv == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	if err := required(f, "BrandRegistrationSid", "Description", "MessageFlow", "MessageSamples",
		"UsAppToPersonUsecase", "HasEmbeddedLinks", "HasEmbeddedPhone"); err != nil {
		return 0, err
	}
	if find(s.reg.brands, func(b *Brand) bool { return b.SID == f.Get("BrandRegistrationSid") }) == nil {
		return 0, badParam("Invalid BrandRegistrationSid %s: no such brand registration", f.Get("BrandRegistrationSid"))
	}
	flags := map[string]bool{}
	for _, name := range []string{"HasEmbeddedLinks", "HasEmbeddedPhone", "SubscriberOptIn", "AgeGated", "DirectLending"} {
		if v := f.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return 0, badParam("Invalid %s %s: not a boolean", name, v)
			}
			flags[name] = b
		}
	}
	c := &Campaign{SID: sid("QE"), ServiceSID: sv.SID, BrandSID: f.Get("BrandRegistrationSid"),
		Description: f.Get("Description"), MessageFlow: f.Get("MessageFlow"), Usecase: f.Get("UsAppToPersonUsecase"),
		MessageSamples: f["MessageSamples"], HasEmbeddedLinks: flags["HasEmbeddedLinks"], HasEmbeddedPhone: flags["HasEmbeddedPhone"],
		SubscriberOptIn: flags["SubscriberOptIn"], AgeGated: flags["AgeGated"], DirectLending: flags["DirectLending"],
		HelpMessage: f.Get("HelpMessage"), OptInKeywords: f["OptInKeywords"], OptOutKeywords: f["OptOutKeywords"],
		Status: "IN_PROGRESS"}
	s.reg.campaigns = append(s.reg.campaigns, c)
	s.reg.made(c.SID)
	return http.StatusCreated, s.campaignJSON(c)
}

func (s *Server) campaign(r *http.Request, args []string) (*Campaign, *apiError) {
	c := find(s.reg.campaigns, func(c *Campaign) bool { return c.SID == args[1] && c.ServiceSID == args[0] })
	if c == nil {
		return nil, resourceNotFound(r.URL.Path)
	}
	return c, nil
}

// fetchCampaign: GET /v1/Services/{sid}/Compliance/Usa2p/{sid}.
func (s *Server) fetchCampaign(r *http.Request, _ url.Values, args []string) (int, any) {
	c, err := s.campaign(r, args)
	if err != nil {
		return 0, err
	}
	return http.StatusOK, s.campaignJSON(c)
}

// deleteCampaign: DELETE /v1/Services/{sid}/Compliance/Usa2p/{sid}.
func (s *Server) deleteCampaign(r *http.Request, _ url.Values, args []string) (int, any) {
	c, err := s.campaign(r, args)
	if err != nil {
		return 0, err
	}
	s.reg.campaigns = slices.DeleteFunc(s.reg.campaigns, func(x *Campaign) bool { return x == c })
	return http.StatusNoContent, noContent{}
}

func (s *Server) campaignJSON(c *Campaign) map[string]any {
	errs := []map[string]any{}
	if c.FailureReason != "" {
		// Twilio's campaign errors carry a 308xx code; the peer uses one for any reason.
		errs = append(errs, map[string]any{"error_code": 30886, "description": c.FailureReason,
			"fields": []string{}, "url": "https://www.twilio.com/docs/errors/30886"})
	}
	var campaignID any
	if c.Status == "VERIFIED" {
		campaignID = "C" + strings.ToUpper(c.SID[2:8])
	}
	nilIfEmpty := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	return map[string]any{
		"sid": c.SID, "account_sid": AccountSID, "brand_registration_sid": c.BrandSID, "messaging_service_sid": c.ServiceSID,
		"description": c.Description, "message_samples": c.MessageSamples, "us_app_to_person_usecase": c.Usecase,
		"has_embedded_links": c.HasEmbeddedLinks, "has_embedded_phone": c.HasEmbeddedPhone,
		"subscriber_opt_in": c.SubscriberOptIn, "age_gated": c.AgeGated, "direct_lending": c.DirectLending,
		"campaign_status": c.Status, "campaign_id": campaignID, "is_externally_registered": false,
		"rate_limits": map[string]any{}, "message_flow": c.MessageFlow, "opt_in_message": nil, "opt_out_message": nil,
		"help_message": nilIfEmpty(c.HelpMessage), "opt_in_keywords": c.OptInKeywords, "opt_out_keywords": c.OptOutKeywords,
		"help_keywords": nil, "date_created": s.iso(c.SID), "date_updated": s.iso(c.SID),
		"url": s.URL + "/v1/Services/" + c.ServiceSID + "/Compliance/Usa2p/" + c.SID, "mock": false, "errors": errs,
		"privacy_policy_url": nil, "terms_and_conditions_url": nil,
	}
}

// addServiceNumber: POST /v1/Services/{sid}/PhoneNumbers. A number is in one service at most.
func (s *Server) addServiceNumber(r *http.Request, f url.Values, args []string) (int, any) {
	sv := s.service(args[0])
	if sv == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	if err := required(f, "PhoneNumberSid"); err != nil {
		return 0, err
	}
	pn := f.Get("PhoneNumberSid")
	n := find(s.reg.numbers, func(n *IncomingNumber) bool { return n.SID == pn })
	if n == nil {
		return 0, badParam("Invalid PhoneNumberSid %s: not an IncomingPhoneNumber of the account", pn)
	}
	for _, other := range s.reg.services {
		if slices.Contains(other.PhoneNumberSIDs, pn) {
			return 0, &apiError{http.StatusBadRequest, 21712,
				fmt.Sprintf("Phone Number %s is already associated with Messaging Service %s", n.PhoneNumber, other.SID)}
		}
	}
	sv.PhoneNumberSIDs = append(sv.PhoneNumberSIDs, pn)
	return http.StatusCreated, map[string]any{
		"sid": pn, "account_sid": AccountSID, "service_sid": sv.SID, "date_created": s.iso(pn), "date_updated": s.iso(pn),
		"phone_number": n.PhoneNumber, "country_code": "US", "capabilities": []string{"MMS", "SMS", "Voice"},
		"url": s.URL + "/v1/Services/" + sv.SID + "/PhoneNumbers/" + pn,
	}
}

// removeServiceNumber: DELETE /v1/Services/{sid}/PhoneNumbers/{sid}.
func (s *Server) removeServiceNumber(r *http.Request, _ url.Values, args []string) (int, any) {
	sv := s.service(args[0])
	if sv == nil || !slices.Contains(sv.PhoneNumberSIDs, args[1]) {
		return 0, resourceNotFound(r.URL.Path)
	}
	sv.PhoneNumberSIDs = slices.DeleteFunc(sv.PhoneNumberSIDs, func(p string) bool { return p == args[1] })
	return http.StatusNoContent, noContent{}
}
