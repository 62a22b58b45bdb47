package twiliotest

// The peer's Regulatory Compliance resources (numbers.twilio.com/v2/RegulatoryCompliance, served
// on the peer's URL as every other host's paths are), as Twilio's API reference documents them:
// EndUsers (IT…), SupportingDocuments (RD…, with a file when posted as multipart/form-data, as
// numbers-upload.twilio.com takes them), Bundles (BU…) with their ItemAssignments (BV…) and
// Evaluations (EL…). Addresses (AD…) are the 2010-04-01 API's (registration.go).
//
// A bundle is made for a regulation of the peer's table (buy.go): RegulationSid, or IsoCountry,
// NumberType and EndUserType. Submitting it (Status=pending-review) evaluates it against the
// regulation: an end user of the regulation's type with every field, and for each supporting
// document requirement a document of an accepted type with every field (address_sids naming
// Addresses of the account) and, unless it is an address, a file. A bundle that fails is refused
// (400, code 20001) and the failing evaluation kept. A submitted bundle is reviewed after it is
// read once (GET): the first read answers pending-review, later ones twilio-approved, or
// twilio-rejected after RejectBundles, with an evaluation whose results give the reason. The
// review's outcome is posted, signed, to the bundle's StatusCallback (loopback URLs only).
//
// An approved bundle buys the numbers of its regulation's country and type (buyNumber).

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Bundle statuses a review ends in (BundleDraft and BundlePendingReview are registration.go's).
const (
	BundleTwilioApproved = "twilio-approved"
	BundleTwilioRejected = "twilio-rejected"
)

// MaxDocumentFile is the largest file the peer takes with a supporting document.
const MaxDocumentFile = 10 << 20

// documentMimeTypes are the files a supporting document may carry.
var documentMimeTypes = []string{"application/pdf", "image/jpeg", "image/png"}

// otherDocumentTypes are supporting document types the peer takes besides its regulations'.
var otherDocumentTypes = []string{"utility_bill", "business_registration", "tax_document", "power_of_attorney"}

// BundleSnapshot is a regulatory bundle as the peer holds it (Bundles).
type BundleSnapshot struct {
	SID, FriendlyName, Email, StatusCallback string
	// Status is draft, pending-review, twilio-approved or twilio-rejected; FailureReason is
	// the rejection's.
	Status, FailureReason string
	// The regulation: its sid, country, number type (local, mobile, toll-free) and end user type.
	RegulationSID, ISOCountry, NumberType, EndUserType string
	// The assigned end user (the first, if several): its sid, type and attributes.
	EndUserSID, EndUserKind string
	EndUserAttributes       map[string]any
	// AddressSID is the first Address the assigned documents name in address_sids.
	AddressSID string
	// Documents are the assigned supporting documents, in the order they were assigned.
	Documents []BundleDocument
}

// BundleDocument is a supporting document of a bundle.
type BundleDocument struct {
	SID, Type  string
	Attributes map[string]any
	// MimeType and FileSize are its file's ("" and 0 without one).
	MimeType string
	FileSize int
}

// compliance is a Server's Regulatory Compliance state, guarded by the server's mu.
type compliance struct {
	endUsers  []*rcEndUser
	documents []*rcDocument
	bundles   []*rcBundle
	// rejectWith: bundles submitted from now on are rejected with this reason (RejectBundles).
	rejectWith string
}

type rcEndUser struct {
	sid, friendlyName, typ string
	attrs                  map[string]any
}

type rcDocument struct {
	sid, friendlyName, typ string
	attrs                  map[string]any
	mimeType               string
	file                   []byte
}

type rcItem struct{ sid, object string }

type rcEvaluation struct {
	sid, status string
	results     []map[string]any
}

type rcBundle struct {
	sid, friendlyName, email, statusCallback string
	regulation                               map[string]any
	status                                   string
	// decision is what the review ends in, reason a rejection's: set when submitted.
	decision, reason string
	items            []rcItem
	evaluations      []*rcEvaluation
}

// rc is the server's Regulatory Compliance state; its content is guarded by s.mu.
func (s *Server) rc() *compliance {
	s.rcOnce.Do(func() { s.compliance = &compliance{} })
	return s.compliance
}

// RejectBundles makes Twilio's review reject the bundles submitted from now on, with reason as
// the failure reason of their evaluation; "" approves them again.
func (s *Server) RejectBundles(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rc().rejectWith = reason
}

// Bundles are copies of the regulatory bundles made so far, in order.
func (s *Server) Bundles() []BundleSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.rc()
	var out []BundleSnapshot
	for _, b := range c.bundles {
		snap := BundleSnapshot{SID: b.sid, FriendlyName: b.friendlyName, Email: b.email, StatusCallback: b.statusCallback,
			Status: b.status, RegulationSID: b.regulation["sid"].(string), ISOCountry: b.regulation["iso_country"].(string),
			NumberType: b.regulation["number_type"].(string), EndUserType: b.regulation["end_user_type"].(string)}
		if b.status == BundleTwilioRejected {
			snap.FailureReason = b.reason
		}
		for _, it := range b.items {
			if e := c.endUser(it.object); e != nil && snap.EndUserSID == "" {
				snap.EndUserSID, snap.EndUserKind, snap.EndUserAttributes = e.sid, e.typ, cloneMap(e.attrs)
			}
			if d := c.document(it.object); d != nil {
				snap.Documents = append(snap.Documents, BundleDocument{SID: d.sid, Type: d.typ, Attributes: cloneMap(d.attrs),
					MimeType: d.mimeType, FileSize: len(d.file)})
				if a := addressSids(d.attrs); len(a) > 0 && snap.AddressSID == "" {
					snap.AddressSID = a[0]
				}
			}
		}
		out = append(out, snap)
	}
	return out
}

func (c *compliance) endUser(sid string) *rcEndUser {
	return find(c.endUsers, func(e *rcEndUser) bool { return e.sid == sid })
}

func (c *compliance) document(sid string) *rcDocument {
	return find(c.documents, func(d *rcDocument) bool { return d.sid == sid })
}

// AddApprovedBundle makes a twilio-approved Regulatory Compliance bundle of the regulation of
// country, numberType (Twilio's: local, mobile, toll-free) and endUserType, as if one had been
// submitted and approved, and returns its sid: what buys the numbers that need one. It panics
// when the peer has no such regulation.
func (s *Server) AddApprovedBundle(country, numberType, endUserType string) string {
	for _, reg := range s.regulationsTable(false) {
		if reg["iso_country"] != country || reg["number_type"] != numberType || reg["end_user_type"] != endUserType {
			continue
		}
		b := &rcBundle{sid: sid("BU"), friendlyName: "approved", email: "compliance@example.com", regulation: reg,
			status: BundleTwilioApproved, decision: BundleTwilioApproved}
		s.mu.Lock()
		defer s.mu.Unlock()
		c := s.rc()
		c.bundles = append(c.bundles, b)
		return b.sid
	}
	panic(fmt.Sprintf("twiliotest: AddApprovedBundle: no regulation of %s %s numbers for %s end users", country, numberType, endUserType))
}

func (c *compliance) bundle(sid string) *rcBundle {
	return find(c.bundles, func(b *rcBundle) bool { return b.sid == sid })
}

// rcURL is the absolute URL of a Regulatory Compliance resource, as Twilio's answers give it.
func (s *Server) rcURL(path string) string {
	return s.URL + "/v2/RegulatoryCompliance/" + path
}

// rcPage answers one page of a v2 list, as listRegulations does: PageSize and Page, and the meta
// with the URLs of the first, previous and next pages (carrying the filters named).
func (s *Server) rcPage(f url.Values, path, key string, all []map[string]any, filters ...string) (int, any) {
	size, page, bad := pageParams(f)
	if bad != nil {
		return 0, bad
	}
	start := min(page*size, len(all))
	end := min(start+size, len(all))
	results := append([]map[string]any{}, all[start:end]...)
	pageURL := func(p int) string {
		q := url.Values{"PageSize": {strconv.Itoa(size)}, "Page": {strconv.Itoa(p)}}
		for _, k := range filters {
			if v := f.Get(k); v != "" {
				q.Set(k, v)
			}
		}
		return s.rcURL(path) + "?" + q.Encode()
	}
	var next, previous any
	if end < len(all) {
		next = pageURL(page + 1)
	}
	if page > 0 {
		previous = pageURL(page - 1)
	}
	return http.StatusOK, map[string]any{
		key: results,
		"meta": map[string]any{"page": page, "page_size": size, "first_page_url": pageURL(0),
			"previous_page_url": previous, "url": pageURL(page), "next_page_url": next, "key": key},
	}
}

var endUserTypes = []string{"individual", "business"}

// createRCEndUser: POST /v2/RegulatoryCompliance/EndUsers (FriendlyName, Type, Attributes).
func (s *Server) createRCEndUser(_ *http.Request, f url.Values, _ []string) (int, any) {
	if err := required(f, "FriendlyName", "Type"); err != nil {
		return 0, err
	}
	if typ := f.Get("Type"); !slices.Contains(endUserTypes, typ) {
		return 0, badParam("Invalid Type %s: individual or business", typ)
	}
	attrs, bad := attributes(f)
	if bad != nil {
		return 0, bad
	}
	e := &rcEndUser{sid: sid("IT"), friendlyName: f.Get("FriendlyName"), typ: f.Get("Type"), attrs: attrs}
	c := s.rc()
	c.endUsers = append(c.endUsers, e)
	s.reg.made(e.sid)
	return http.StatusCreated, s.rcEndUserJSON(e)
}

func (s *Server) rcEndUserJSON(e *rcEndUser) map[string]any {
	return map[string]any{
		"sid": e.sid, "account_sid": AccountSID, "friendly_name": e.friendlyName, "type": e.typ,
		"attributes": e.attrs, "date_created": s.iso(e.sid), "date_updated": s.iso(e.sid),
		"url": s.rcURL("EndUsers/" + e.sid),
	}
}

// listRCEndUsers: GET /v2/RegulatoryCompliance/EndUsers.
func (s *Server) listRCEndUsers(_ *http.Request, f url.Values, _ []string) (int, any) {
	var all []map[string]any
	for _, e := range s.rc().endUsers {
		all = append(all, s.rcEndUserJSON(e))
	}
	return s.rcPage(f, "EndUsers", "results", all)
}

// fetchRCEndUser: GET /v2/RegulatoryCompliance/EndUsers/{sid}.
func (s *Server) fetchRCEndUser(r *http.Request, _ url.Values, args []string) (int, any) {
	e := s.rc().endUser(args[0])
	if e == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	return http.StatusOK, s.rcEndUserJSON(e)
}

// documentTypes are the supporting document types the peer takes: its regulations' accepted
// documents and otherDocumentTypes.
func (s *Server) documentTypes() []string {
	types := slices.Clone(otherDocumentTypes)
	for _, reg := range s.regulationsTable(false) {
		reqs := reg["requirements"].(map[string]any)
		for _, group := range reqs["supporting_document"].([][]map[string]any) {
			for _, d := range group {
				for _, a := range d["accepted_documents"].([]map[string]any) {
					if t := a["type"].(string); !slices.Contains(types, t) {
						types = append(types, t)
					}
				}
			}
		}
	}
	return types
}

// addressSids reads address_sids of a document's attributes: a sid or a list of them.
func addressSids(attrs map[string]any) []string {
	switch v := attrs["address_sids"].(type) {
	case string:
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, x := range v {
			if str, ok := x.(string); ok && str != "" {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// createRCDocument: POST /v2/RegulatoryCompliance/SupportingDocuments, form-encoded (FriendlyName,
// Type, Attributes), or multipart/form-data with the same fields and File, as
// numbers-upload.twilio.com takes a document with its file.
func (s *Server) createRCDocument(r *http.Request, f url.Values, _ []string) (int, any) {
	var file []byte
	var mimeType string
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
		var bad *apiError
		f, file, mimeType, bad = readUpload(r)
		if bad != nil {
			return 0, bad
		}
	}
	if err := required(f, "FriendlyName", "Type"); err != nil {
		return 0, err
	}
	if typ := f.Get("Type"); !slices.Contains(s.documentTypes(), typ) {
		return 0, badParam("Invalid Type %s: not a supporting document type", typ)
	}
	attrs, bad := attributes(f)
	if bad != nil {
		return 0, bad
	}
	if _, named := attrs["address_sids"]; named {
		sids := addressSids(attrs)
		if len(sids) == 0 {
			return 0, badParam("Invalid address_sids: a sid or a list of sids")
		}
		for _, a := range sids {
			if find(s.reg.addresses, func(x *Address) bool { return x.SID == a }) == nil {
				return 0, badParam("Invalid address_sids: %s is not an Address of the account", a)
			}
		}
	}
	d := &rcDocument{sid: sid("RD"), friendlyName: f.Get("FriendlyName"), typ: f.Get("Type"), attrs: attrs,
		mimeType: mimeType, file: file}
	c := s.rc()
	c.documents = append(c.documents, d)
	s.reg.made(d.sid)
	return http.StatusCreated, s.rcDocumentJSON(d)
}

// readUpload reads a multipart supporting document: its fields and its one File.
func readUpload(r *http.Request) (url.Values, []byte, string, *apiError) {
	r.Body = http.MaxBytesReader(nil, r.Body, MaxDocumentFile+1<<20)
	if err := r.ParseMultipartForm(MaxDocumentFile + 1<<20); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, nil, "", badParam("File is too large: at most %d bytes", MaxDocumentFile)
		}
		return nil, nil, "", badParam("Invalid multipart body")
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	f := url.Values(r.MultipartForm.Value)
	files := r.MultipartForm.File["File"]
	if len(files) != 1 {
		return nil, nil, "", missing("File")
	}
	mt, _, _ := mime.ParseMediaType(files[0].Header.Get("Content-Type"))
	if !slices.Contains(documentMimeTypes, mt) {
		return nil, nil, "", badParam("Invalid File: %q is not a PDF, JPEG or PNG file", mt)
	}
	if files[0].Size > MaxDocumentFile {
		return nil, nil, "", badParam("File is too large: at most %d bytes", MaxDocumentFile)
	}
	fh, err := files[0].Open()
	if err != nil {
		return nil, nil, "", badParam("Invalid File")
	}
	defer fh.Close()
	b, err := io.ReadAll(fh)
	if err != nil || len(b) == 0 {
		return nil, nil, "", badParam("Invalid File: empty")
	}
	return f, b, mt, nil
}

func (s *Server) rcDocumentJSON(d *rcDocument) map[string]any {
	var mimeType any
	if d.mimeType != "" {
		mimeType = d.mimeType
	}
	return map[string]any{
		"sid": d.sid, "account_sid": AccountSID, "friendly_name": d.friendlyName, "mime_type": mimeType,
		"status": BundleDraft, "failure_reason": nil, "errors": nil, "type": d.typ, "attributes": d.attrs,
		"date_created": s.iso(d.sid), "date_updated": s.iso(d.sid), "url": s.rcURL("SupportingDocuments/" + d.sid),
	}
}

// listRCDocuments: GET /v2/RegulatoryCompliance/SupportingDocuments.
func (s *Server) listRCDocuments(_ *http.Request, f url.Values, _ []string) (int, any) {
	var all []map[string]any
	for _, d := range s.rc().documents {
		all = append(all, s.rcDocumentJSON(d))
	}
	return s.rcPage(f, "SupportingDocuments", "results", all)
}

// fetchRCDocument: GET /v2/RegulatoryCompliance/SupportingDocuments/{sid}.
func (s *Server) fetchRCDocument(r *http.Request, _ url.Values, args []string) (int, any) {
	d := s.rc().document(args[0])
	if d == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	return http.StatusOK, s.rcDocumentJSON(d)
}

var (
	regulationSID = regexp.MustCompile(`^RN[0-9a-fA-F]{32}$`)
	numberTypes   = []string{"local", "mobile", "national", "toll-free"}
)

// createRCBundle: POST /v2/RegulatoryCompliance/Bundles. FriendlyName and Email are required, and
// the regulation: RegulationSid, or IsoCountry, NumberType and EndUserType.
func (s *Server) createRCBundle(_ *http.Request, f url.Values, _ []string) (int, any) {
	if err := required(f, "FriendlyName", "Email"); err != nil {
		return 0, err
	}
	callback := f.Get("StatusCallback")
	if bad := checkCallbackURL(callback); bad != nil {
		return 0, bad
	}
	var reg map[string]any
	if rn := f.Get("RegulationSid"); rn != "" {
		if !regulationSID.MatchString(rn) {
			return 0, badParam("Invalid RegulationSid %s", rn)
		}
		for _, r := range s.regulationsTable(false) {
			if r["sid"] == rn {
				reg = r
			}
		}
		if reg == nil {
			return 0, badParam("Invalid RegulationSid %s: no such regulation", rn)
		}
	} else {
		if err := required(f, "IsoCountry", "NumberType", "EndUserType"); err != nil {
			return 0, err
		}
		country, typ, endUser := f.Get("IsoCountry"), f.Get("NumberType"), f.Get("EndUserType")
		switch {
		case !isoCountry.MatchString(country):
			return 0, badParam("Invalid IsoCountry %s: an ISO 3166-1 alpha-2 code", country)
		case !slices.Contains(numberTypes, typ):
			return 0, badParam("Invalid NumberType %s: local, mobile, national or toll-free", typ)
		case !slices.Contains(endUserTypes, endUser):
			return 0, badParam("Invalid EndUserType %s: individual or business", endUser)
		}
		for _, r := range s.regulationsTable(false) {
			if r["iso_country"] == country && r["number_type"] == typ && r["end_user_type"] == endUser {
				reg = r
			}
		}
		if reg == nil {
			return 0, badParam("No regulation for IsoCountry %s, NumberType %s and EndUserType %s", country, typ, endUser)
		}
	}
	b := &rcBundle{sid: sid("BU"), friendlyName: f.Get("FriendlyName"), email: f.Get("Email"), statusCallback: callback,
		regulation: reg, status: BundleDraft}
	c := s.rc()
	c.bundles = append(c.bundles, b)
	s.reg.made(b.sid)
	return http.StatusCreated, s.rcBundleJSON(b)
}

// checkCallbackURL refuses a StatusCallback that is not an absolute http(s) URL.
func checkCallbackURL(raw string) *apiError {
	if raw == "" {
		return nil
	}
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badParam("Invalid StatusCallback %q: not an absolute http(s) URL", raw)
	}
	return nil
}

func (s *Server) rcBundleJSON(b *rcBundle) map[string]any {
	u := s.rcURL("Bundles/" + b.sid)
	var callback any
	if b.statusCallback != "" {
		callback = b.statusCallback
	}
	return map[string]any{
		"sid": b.sid, "account_sid": AccountSID, "regulation_sid": b.regulation["sid"], "friendly_name": b.friendlyName,
		"status": b.status, "valid_until": nil, "email": b.email, "status_callback": callback,
		"date_created": s.iso(b.sid), "date_updated": s.iso(b.sid), "url": u,
		"links": map[string]string{"evaluations": u + "/Evaluations", "item_assignments": u + "/ItemAssignments",
			"bundle_copies": u + "/Copies"},
	}
}

// listRCBundles: GET /v2/RegulatoryCompliance/Bundles, filtered by Status, FriendlyName,
// RegulationSid, IsoCountry, NumberType and EndUserType.
func (s *Server) listRCBundles(_ *http.Request, f url.Values, _ []string) (int, any) {
	filters := []string{"Status", "FriendlyName", "RegulationSid", "IsoCountry", "NumberType", "EndUserType"}
	var all []map[string]any
	for _, b := range s.rc().bundles {
		switch {
		case f.Get("Status") != "" && f.Get("Status") != b.status:
		case f.Get("FriendlyName") != "" && f.Get("FriendlyName") != b.friendlyName:
		case f.Get("RegulationSid") != "" && f.Get("RegulationSid") != b.regulation["sid"]:
		case f.Get("IsoCountry") != "" && !strings.EqualFold(f.Get("IsoCountry"), b.regulation["iso_country"].(string)):
		case f.Get("NumberType") != "" && f.Get("NumberType") != b.regulation["number_type"]:
		case f.Get("EndUserType") != "" && f.Get("EndUserType") != b.regulation["end_user_type"]:
		default:
			all = append(all, s.rcBundleJSON(b))
		}
	}
	return s.rcPage(f, "Bundles", "results", all, filters...)
}

// fetchRCBundle: GET /v2/RegulatoryCompliance/Bundles/{sid}. A bundle pending review is answered
// so, and then reviewed: the next read answers the review's outcome.
func (s *Server) fetchRCBundle(r *http.Request, _ url.Values, args []string) (int, any) {
	b := s.rc().bundle(args[0])
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	body := s.rcBundleJSON(b)
	if b.status == BundlePendingReview {
		s.review(b)
	}
	return http.StatusOK, body
}

// review ends b's review as decided when it was submitted: a rejection keeps an evaluation with
// its reason. The outcome goes to the status callback.
func (s *Server) review(b *rcBundle) {
	b.status = b.decision
	if b.status == BundleTwilioRejected {
		results := []map[string]any{{
			"friendly_name": "Twilio review", "object_type": "bundle", "passed": false, "failure_reason": b.reason,
			"error_code": nil, "valid": []any{}, "invalid": []any{},
			"requirement_friendly_name": "Twilio review", "requirement_name": "twilio_review",
		}}
		s.addEvaluation(b, "noncompliant", results)
	}
	if b.statusCallback == "" {
		return
	}
	p := url.Values{"AccountSid": {AccountSID}, "BundleSid": {b.sid}, "Status": {b.status}}
	if b.status == BundleTwilioRejected {
		p.Set("FailureReason", b.reason)
	}
	target := b.statusCallback
	// spawn under s.mu, which the handler holds.
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if s.wait() {
			s.post(target, p)
		}
	}()
}

// updateRCBundle: POST /v2/RegulatoryCompliance/Bundles/{sid} (Status, FriendlyName, Email,
// StatusCallback). Status=pending-review submits a draft: it is evaluated against its regulation
// and refused when it does not comply.
func (s *Server) updateRCBundle(r *http.Request, f url.Values, args []string) (int, any) {
	b := s.rc().bundle(args[0])
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	if bad := checkCallbackURL(f.Get("StatusCallback")); bad != nil {
		return 0, bad
	}
	if st := f.Get("Status"); st != "" && st != b.status {
		if st != BundlePendingReview {
			return 0, badParam("Invalid Status %s: a bundle can only be submitted (pending-review)", st)
		}
		if b.status != BundleDraft {
			return 0, badParam("Bundle %s is %s, not draft: it cannot be submitted again", b.sid, b.status)
		}
		ev := s.evaluateRC(b)
		if ev.status != "compliant" {
			var why []string
			for _, res := range ev.results {
				if res["passed"] == false {
					why = append(why, res["failure_reason"].(string))
					for _, f := range res["invalid"].([]map[string]any) {
						why = append(why, f["failure_reason"].(string))
					}
				}
			}
			return 0, badParam("Bundle %s does not comply with regulation %s: %s", b.sid, b.regulation["sid"], strings.Join(why, "; "))
		}
		b.status = BundlePendingReview
		b.decision, b.reason = BundleTwilioApproved, ""
		if reason := s.rc().rejectWith; reason != "" {
			b.decision, b.reason = BundleTwilioRejected, reason
		}
	}
	if v := f.Get("FriendlyName"); v != "" {
		b.friendlyName = v
	}
	if v := f.Get("Email"); v != "" {
		b.email = v
	}
	if v := f.Get("StatusCallback"); v != "" {
		b.statusCallback = v
	}
	return http.StatusOK, s.rcBundleJSON(b)
}

func (s *Server) rcItemJSON(b *rcBundle, it rcItem) map[string]any {
	return map[string]any{
		"sid": it.sid, "bundle_sid": b.sid, "account_sid": AccountSID, "object_sid": it.object,
		"date_created": s.iso(it.sid), "url": s.rcURL("Bundles/" + b.sid + "/ItemAssignments/" + it.sid),
	}
}

// assignRCItem: POST /v2/RegulatoryCompliance/Bundles/{sid}/ItemAssignments (ObjectSid: an end
// user or a supporting document of the account). Only a draft takes items.
func (s *Server) assignRCItem(r *http.Request, f url.Values, args []string) (int, any) {
	c := s.rc()
	b := c.bundle(args[0])
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	if err := required(f, "ObjectSid"); err != nil {
		return 0, err
	}
	obj := f.Get("ObjectSid")
	switch {
	case c.endUser(obj) == nil && c.document(obj) == nil:
		return 0, badParam("Invalid ObjectSid %s: no such EndUser or SupportingDocument", obj)
	case b.status != BundleDraft:
		return 0, badParam("Bundle %s is %s: only a draft bundle takes item assignments", b.sid, b.status)
	case slices.ContainsFunc(b.items, func(it rcItem) bool { return it.object == obj }):
		return 0, badParam("ObjectSid %s is already assigned to %s", obj, b.sid)
	}
	it := rcItem{sid: sid("BV"), object: obj}
	b.items = append(b.items, it)
	s.reg.made(it.sid)
	return http.StatusCreated, s.rcItemJSON(b, it)
}

// listRCItems: GET /v2/RegulatoryCompliance/Bundles/{sid}/ItemAssignments.
func (s *Server) listRCItems(r *http.Request, f url.Values, args []string) (int, any) {
	b := s.rc().bundle(args[0])
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	var all []map[string]any
	for _, it := range b.items {
		all = append(all, s.rcItemJSON(b, it))
	}
	return s.rcPage(f, "Bundles/"+b.sid+"/ItemAssignments", "results", all)
}

// fetchRCItem: GET /v2/RegulatoryCompliance/Bundles/{sid}/ItemAssignments/{sid}.
func (s *Server) fetchRCItem(r *http.Request, _ url.Values, args []string) (int, any) {
	b := s.rc().bundle(args[0])
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	i := slices.IndexFunc(b.items, func(it rcItem) bool { return it.sid == args[1] })
	if i < 0 {
		return 0, resourceNotFound(r.URL.Path)
	}
	return http.StatusOK, s.rcItemJSON(b, b.items[i])
}

// evaluateRC evaluates b's items against its regulation and keeps the evaluation, as Twilio's
// results give it: per requirement whether it passed, why not, and its invalid fields.
func (s *Server) evaluateRC(b *rcBundle) *rcEvaluation {
	c := s.rc()
	reqs := b.regulation["requirements"].(map[string]any)
	var results []map[string]any
	compliant := true
	result := func(friendly, objectType, requirement string, missingItem string, invalid []map[string]any) {
		passed := missingItem == "" && len(invalid) == 0
		var reason any
		switch {
		case missingItem != "":
			reason = missingItem
		case !passed:
			reason = fmt.Sprintf("The %s has invalid or missing fields.", friendly)
		}
		if invalid == nil {
			invalid = []map[string]any{}
		}
		compliant = compliant && passed
		results = append(results, map[string]any{
			"friendly_name": friendly, "object_type": objectType, "passed": passed, "failure_reason": reason,
			"error_code": nil, "valid": []any{}, "invalid": invalid,
			"requirement_friendly_name": friendly, "requirement_name": requirement,
		})
	}
	invalidField := func(field, reason string) map[string]any {
		return map[string]any{"friendly_name": field, "object_field": field, "failure_reason": reason, "error_code": nil}
	}
	hasValue := func(attrs map[string]any, field string) bool {
		switch v := attrs[field].(type) {
		case string:
			return strings.TrimSpace(v) != ""
		case []any:
			return len(v) > 0
		case nil:
			return false
		}
		return true
	}

	for _, e := range reqs["end_user"].([]map[string]any) {
		name, typ := e["name"].(string), e["type"].(string)
		var eu *rcEndUser
		for _, it := range b.items {
			if x := c.endUser(it.object); x != nil && x.typ == typ {
				eu = x
				break
			}
		}
		if eu == nil {
			result(name, typ, e["requirement_name"].(string),
				fmt.Sprintf("A %s End-User is missing. Please add one to the regulatory bundle.", name), nil)
			continue
		}
		var invalid []map[string]any
		for _, field := range e["fields"].([]string) {
			if !hasValue(eu.attrs, field) {
				invalid = append(invalid, invalidField(field, fmt.Sprintf("The %s is missing from the %s End-User.", field, name)))
			}
		}
		result(name, typ, e["requirement_name"].(string), "", invalid)
	}

	for _, group := range reqs["supporting_document"].([][]map[string]any) {
		if len(group) == 0 {
			continue
		}
		accepted := map[string][]string{} // type: fields
		for _, d := range group {
			for _, a := range d["accepted_documents"].([]map[string]any) {
				accepted[a["type"].(string)] = a["fields"].([]string)
			}
		}
		name, requirement := group[0]["name"].(string), group[0]["requirement_name"].(string)
		var doc *rcDocument
		for _, it := range b.items {
			if x := c.document(it.object); x != nil && accepted[x.typ] != nil {
				doc = x
				break
			}
		}
		if doc == nil {
			result(name, "document", requirement,
				fmt.Sprintf("A %s Supporting Document is missing. Please add one to the regulatory bundle.", name), nil)
			continue
		}
		var invalid []map[string]any
		for _, field := range accepted[doc.typ] {
			if !hasValue(doc.attrs, field) {
				invalid = append(invalid, invalidField(field, fmt.Sprintf("The %s is missing from the %s document.", field, doc.typ)))
			}
		}
		if doc.typ != "address" && len(doc.file) == 0 {
			invalid = append(invalid, invalidField("file", fmt.Sprintf("The %s document has no file.", doc.typ)))
		}
		result(name, doc.typ, requirement, "", invalid)
	}

	status := "compliant"
	if !compliant {
		status = "noncompliant"
	}
	return s.addEvaluation(b, status, results)
}

func (s *Server) addEvaluation(b *rcBundle, status string, results []map[string]any) *rcEvaluation {
	ev := &rcEvaluation{sid: sid("EL"), status: status, results: results}
	b.evaluations = append(b.evaluations, ev)
	s.reg.made(ev.sid)
	return ev
}

func (s *Server) rcEvaluationJSON(b *rcBundle, ev *rcEvaluation) map[string]any {
	return map[string]any{
		"sid": ev.sid, "account_sid": AccountSID, "regulation_sid": b.regulation["sid"], "bundle_sid": b.sid,
		"status": ev.status, "results": ev.results, "date_created": s.iso(ev.sid),
		"url": s.rcURL("Bundles/" + b.sid + "/Evaluations/" + ev.sid),
	}
}

// createRCEvaluation: POST /v2/RegulatoryCompliance/Bundles/{sid}/Evaluations: the bundle's items
// evaluated against its regulation now.
func (s *Server) createRCEvaluation(r *http.Request, _ url.Values, args []string) (int, any) {
	b := s.rc().bundle(args[0])
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	return http.StatusCreated, s.rcEvaluationJSON(b, s.evaluateRC(b))
}

// listRCEvaluations: GET /v2/RegulatoryCompliance/Bundles/{sid}/Evaluations, oldest first.
func (s *Server) listRCEvaluations(r *http.Request, f url.Values, args []string) (int, any) {
	b := s.rc().bundle(args[0])
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	var all []map[string]any
	for _, ev := range b.evaluations {
		all = append(all, s.rcEvaluationJSON(b, ev))
	}
	return s.rcPage(f, "Bundles/"+b.sid+"/Evaluations", "results", all)
}

// fetchRCEvaluation: GET /v2/RegulatoryCompliance/Bundles/{sid}/Evaluations/{sid}.
func (s *Server) fetchRCEvaluation(r *http.Request, _ url.Values, args []string) (int, any) {
	b := s.rc().bundle(args[0])
	if b == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	ev := find(b.evaluations, func(ev *rcEvaluation) bool { return ev.sid == args[1] })
	if ev == nil {
		return 0, resourceNotFound(r.URL.Path)
	}
	return http.StatusOK, s.rcEvaluationJSON(b, ev)
}

// regulationNumberTypes are the regulations' number types of the shop's subresources.
var regulationNumberTypes = map[string]string{"Local": "local", "Mobile": "mobile", "TollFree": "toll-free"}

// bundleCovers reports whether bundle (a BundleSid given to buy p) lets the account buy p: a
// regulatory bundle of the peer's must be approved and of p's country and type. A BU sid the
// peer never made passes (a bundle made outside the peer), as before bundles were served; a
// Trust Hub bundle (a Customer Profile or Trust Product) is no regulatory bundle.
func (s *Server) bundleCovers(bundle string, p *forSale) (bool, string) {
	b := s.rc().bundle(bundle)
	if b == nil {
		if find(s.reg.customerProfiles, func(x *Bundle) bool { return x.SID == bundle }) != nil ||
			find(s.reg.trustProducts, func(x *Bundle) bool { return x.SID == bundle }) != nil {
			return false, fmt.Sprintf("Bundle %s is a Trust Hub bundle, not a Regulatory Compliance bundle", bundle)
		}
		return false, fmt.Sprintf("Bundle %s was not found", bundle)
	}
	typ := regulationNumberTypes[p.typ]
	switch {
	case b.status != BundleTwilioApproved:
		return false, fmt.Sprintf("Bundle %s is %s, not twilio-approved", bundle, b.status)
	case b.regulation["iso_country"] != p.country || b.regulation["number_type"] != typ:
		return false, fmt.Sprintf("Bundle %s is for %s %s numbers, not %s %s", bundle,
			b.regulation["iso_country"], b.regulation["number_type"], p.country, typ)
	}
	return true, ""
}
