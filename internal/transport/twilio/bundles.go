package twilio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twilio/twilio-go/client"
	api "github.com/twilio/twilio-go/rest/api/v2010"
	numbers "github.com/twilio/twilio-go/rest/numbers/v2"
)

// Regulatory bundles: what a country's regulation (NumberRequirements) asks of a buyer, made in
// Twilio's Regulatory Compliance API (numbers.twilio.com/v2/RegulatoryCompliance) and submitted
// for Twilio's review. An approved bundle's sid is the BundleSID that buys the country's numbers
// (BuyNumber). Errors are the registration calls' (registration.go): Twilio's 4xx a wrapped
// *RegistrationError, bad credentials PROVIDER_AUTH_FAILED, 429, 5xx and the network a
// *transport.Temporary.

// Bundle statuses, Twilio's. A submitted bundle is pending-review, then in-review while Twilio
// looks at it, and ends twilio-approved (it buys numbers) or twilio-rejected;
// provisionally-approved buys numbers in some countries while the review goes on.
const (
	BundleDraft                 = "draft"
	BundlePendingReview         = bundleSubmitted // "pending-review"
	BundleInReview              = "in-review"
	BundleApproved              = "twilio-approved"
	BundleRejected              = "twilio-rejected"
	BundleProvisionallyApproved = "provisionally-approved"
)

// End user types of a regulation (BundleRequest.EndUserType).
const (
	EndUserIndividual = "individual"
	EndUserBusiness   = "business"
)

// documentTypeAddress is the supporting document type that carries an Address (address_sids),
// as Twilio's regulations accept it.
const documentTypeAddress = "address"

// uploadBaseURL is where supporting documents with a file go: the SDK's CreateSupportingDocument
// posts a form, without the file. Its path goes to the base URL as numbers.twilio.com's do.
const uploadBaseURL = "https://numbers-upload.twilio.com"

// Evaluations of a bundle fit a page or two; the bound only stops a runaway next page.
const (
	evaluationPageSize = 50
	maxEvaluationPages = 5
)

// BundleRequest is a regulatory bundle to make for the numbers of Country and NumberType.
type BundleRequest struct {
	// EndUserType is individual or business: the regulation's end user, and EndUser's type.
	EndUserType string
	// Country is an ISO 3166-1 alpha-2 code; NumberType local (""), mobile or tollFree.
	Country, NumberType string
	// Email is told of the bundle's status (Twilio requires it); StatusCallback is posted to
	// (Twilio's bundle status callback) when the status changes, "" for none.
	Email, StatusCallback string
	// EndUser is who the numbers are for, its Attributes the regulation's end user fields
	// (business_name… or first_name, last_name…).
	EndUser EndUser
	// Address, when not nil, is made an Address of the account and named in address_sids of
	// the documents that ask for it: those of type "address" and those whose Attributes have
	// address_sids set to "" (one set to a sid keeps it). Without such a document, one of type
	// "address" is made for it, as Twilio's regulations accept an address.
	Address *AddressInput
	// Documents are the regulation's supporting documents.
	Documents []SupportingDocumentInput
}

// EndUser is a regulatory end user: an individual or a business.
type EndUser struct {
	// FriendlyName names the end user, and the bundle's other resources after it ("" is
	// "Switchboard").
	FriendlyName string
	Attributes   map[string]string
}

// AddressInput is an Address of the account (the 2010-04-01 API's Addresses).
type AddressInput struct {
	CustomerName, Street, StreetSecondary, City, Region, PostalCode string
	// ISOCountry is an ISO 3166-1 alpha-2 code.
	ISOCountry string
}

// Address is an Address Twilio made.
type Address struct {
	SID string
	// Validated: Twilio found the address; Verified: Twilio verified it (emergency addresses).
	Validated, Verified bool
}

// SupportingDocumentInput is a supporting document of a bundle.
type SupportingDocumentInput struct {
	// FriendlyName "" names it after the end user and its type.
	FriendlyName string
	// Type is Twilio's supporting document type: commercial_registrar_excerpt, passport,
	// government_issued_document, utility_bill…
	Type string
	// Attributes are the type's fields (business_name, first_name, document_number…).
	Attributes map[string]string
	// File is the document itself (a scan or a PDF); empty for a document without one. MimeType
	// is its type (application/pdf, image/jpeg, image/png); "" is guessed from File.
	File     []byte
	MimeType string
}

// Bundle is a regulatory bundle as Twilio reports it.
type Bundle struct {
	// SID is its BU sid: the BundleSID of a Purchase once the bundle is approved.
	SID, Status string
	// FailureReason is why Twilio rejected it (from its latest evaluation), "" otherwise.
	FailureReason string
}

// CreateAddress makes an Address of the account (POST /2010-04-01/Accounts/{sid}/Addresses.json).
func (t *Transport) CreateAddress(ctx context.Context, a AddressInput) (Address, error) {
	r, err := t.registrar(ctx)
	if err != nil {
		return Address{}, err
	}
	return r.createAddress(a, "")
}

func (r *registrar) createAddress(a AddressInput, friendlyName string) (Address, error) {
	cc := strings.ToUpper(a.ISOCountry)
	if !isoCountry.MatchString(cc) {
		return Address{}, fmt.Errorf("twilio: create address: %q is not an ISO 3166-1 alpha-2 country code", a.ISOCountry)
	}
	p := &api.CreateAddressParams{}
	p.SetCustomerName(a.CustomerName).SetStreet(a.Street).SetCity(a.City).SetRegion(a.Region).
		SetPostalCode(a.PostalCode).SetIsoCountry(cc)
	if a.StreetSecondary != "" {
		p.SetStreetSecondary(a.StreetSecondary)
	}
	if friendlyName != "" {
		p.SetFriendlyName(friendlyName)
	}
	var out Address
	err := r.do("create address", func() error {
		ad, err := r.api.CreateAddress(p)
		if err != nil {
			return err
		}
		if out.SID, err = sidOf("create address", ad.Sid); err != nil {
			return err
		}
		out.Validated = ad.Validated != nil && *ad.Validated
		out.Verified = ad.Verified != nil && *ad.Verified
		return nil
	})
	return out, err
}

// bundleNumberType is the regulation number type of a client's number type ("" is local).
func bundleNumberType(typ string) (string, bool) {
	if typ == "" {
		return regulationTypes[NumberTypeLocal], true
	}
	t, ok := regulationTypes[strings.ToLower(typ)]
	return t, ok
}

// CreateBundle makes the bundle b asks for and submits it for Twilio's review: the end user
// (POST /v2/RegulatoryCompliance/EndUsers), the address (if any) and each supporting document
// (POST /v2/RegulatoryCompliance/SupportingDocuments; a document with a file is uploaded to
// numbers-upload.twilio.com as multipart), the bundle for the regulation of b's country, number
// type and end user type (POST /v2/RegulatoryCompliance/Bundles), each item assigned to it
// (POST …/Bundles/{sid}/ItemAssignments), and the bundle moved to pending-review
// (POST …/Bundles/{sid} with Status). Twilio evaluates the bundle when it is submitted and
// refuses one its regulation does not accept (a *RegistrationError). BundleStatus tells how the
// review ends.
//
// A failed step returns its error and leaves what was made before it: end users, documents and
// addresses cost nothing, and a half-made draft bundle is harmless (Twilio reviews nothing until
// it is submitted, and no number can be bought with it), so nothing is deleted; a retry makes new
// ones. Once the bundle is made, the Bundle returned with an error carries its sid.
func (t *Transport) CreateBundle(ctx context.Context, b BundleRequest) (Bundle, error) {
	cc := strings.ToUpper(b.Country)
	if !isoCountry.MatchString(cc) {
		return Bundle{}, fmt.Errorf("twilio: create bundle: %q is not an ISO 3166-1 alpha-2 country code", b.Country)
	}
	numberType, ok := bundleNumberType(b.NumberType)
	if !ok {
		return Bundle{}, fmt.Errorf("twilio: create bundle: unknown number type %q (local, mobile or tollFree)", b.NumberType)
	}
	r, err := t.registrar(ctx)
	if err != nil {
		return Bundle{}, err
	}
	svc := numbers.NewApiService(r.api.RequestHandler())
	base := b.EndUser.FriendlyName
	if base == "" {
		base = "Switchboard"
	}

	// 1. The end user. Its type is the regulation's end user type: Twilio refuses a missing one.
	eu := (&numbers.CreateEndUserParams{}).SetFriendlyName(base).SetType(b.EndUserType)
	if b.EndUser.Attributes != nil {
		eu.SetAttributes(anyAttributes(b.EndUser.Attributes))
	}
	var items []string
	if err := r.do("create end user", func() error {
		e, err := svc.CreateEndUser(eu)
		if err == nil {
			var sid string
			sid, err = sidOf("create end user", e.Sid)
			items = append(items, sid)
		}
		return err
	}); err != nil {
		return Bundle{}, err
	}

	// 2. The address, given to the documents that carry it.
	docs := make([]SupportingDocumentInput, len(b.Documents))
	copy(docs, b.Documents)
	var addressSids []string
	if b.Address != nil {
		a, err := r.createAddress(*b.Address, base+" address")
		if err != nil {
			return Bundle{}, err
		}
		addressSids = []string{a.SID}
		carried := false
		for i, d := range docs {
			v, named := d.Attributes["address_sids"]
			if v != "" || (!named && d.Type != documentTypeAddress) {
				continue // an address of its own, or none asked for
			}
			carried = true
			attrs := make(map[string]string, len(d.Attributes)+1)
			for k, v := range d.Attributes {
				attrs[k] = v
			}
			attrs["address_sids"] = "" // the address, below
			docs[i].Attributes = attrs
		}
		if !carried {
			docs = append(docs, SupportingDocumentInput{FriendlyName: base + " address", Type: documentTypeAddress,
				Attributes: map[string]string{"address_sids": ""}})
		}
	}

	// 3. The supporting documents.
	for _, d := range docs {
		if d.FriendlyName == "" {
			d.FriendlyName = base + " " + d.Type
		}
		attrs := anyAttributes(d.Attributes)
		if v, ok := attrs["address_sids"]; ok && v == "" {
			if len(addressSids) > 0 {
				attrs["address_sids"] = addressSids
			} else {
				delete(attrs, "address_sids") // named empty, and no Address to give it
			}
		}
		sid, err := r.createDocument(svc, d, attrs)
		if err != nil {
			return Bundle{}, err
		}
		items = append(items, sid)
	}

	// 4. The bundle, for the regulation of the country, number type and end user type.
	bp := (&numbers.CreateBundleParams{}).SetFriendlyName(fmt.Sprintf("%s %s %s", base, cc, numberType)).
		SetEmail(b.Email).SetIsoCountry(cc).SetNumberType(numberType)
	if b.EndUserType != "" {
		bp.SetEndUserType(b.EndUserType)
	}
	if b.StatusCallback != "" {
		bp.SetStatusCallback(b.StatusCallback)
	}
	var out Bundle
	if err := r.do("create bundle", func() error {
		bu, err := svc.CreateBundle(bp)
		if err == nil {
			out.SID, err = sidOf("create bundle", bu.Sid)
			out.Status = deref(bu.Status)
		}
		return err
	}); err != nil {
		return Bundle{}, bundleError(err, b.StatusCallback)
	}

	// 5. Its items. From here on a failure leaves a draft bundle (harmless, as said above); the
	// error names it.
	for _, obj := range items {
		if err := r.do("assign to bundle", func() error {
			_, err := svc.CreateItemAssignment(out.SID, (&numbers.CreateItemAssignmentParams{}).SetObjectSid(obj))
			return err
		}); err != nil {
			return out, fmt.Errorf("%w (bundle %s stays a draft)", err, out.SID)
		}
	}

	// 6. Submitted for review.
	if err := r.do("submit bundle", func() error {
		bu, err := svc.UpdateBundle(out.SID, (&numbers.UpdateBundleParams{}).SetStatus(BundlePendingReview))
		if err == nil {
			out.Status = deref(bu.Status)
			if out.Status == "" {
				out.Status = BundlePendingReview
			}
		}
		return err
	}); err != nil {
		return out, fmt.Errorf("%w (bundle %s: a draft unless the submission went through; BundleStatus tells)", err, out.SID)
	}
	return out, nil
}

// bundleError keeps the status callback URL (which may carry credentials) out of Twilio's message.
func bundleError(err error, statusCallback string) error {
	var re *RegistrationError
	if errors.As(err, &re) {
		re.Message = scrub(re.Message, statusCallback)
	}
	return err
}

func anyAttributes(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// createDocument makes a supporting document: through the SDK without a file, uploaded with one.
func (r *registrar) createDocument(svc *numbers.ApiService, d SupportingDocumentInput, attrs map[string]any) (string, error) {
	op := "create supporting document " + d.Type
	var sid string
	err := r.do(op, func() error {
		var doc *numbers.NumbersV2SupportingDocument
		var err error
		if len(d.File) == 0 {
			p := (&numbers.CreateSupportingDocumentParams{}).SetFriendlyName(d.FriendlyName).SetType(d.Type)
			if len(attrs) > 0 {
				p.SetAttributes(attrs)
			}
			doc, err = svc.CreateSupportingDocument(p)
		} else {
			doc, err = r.uploadDocument(svc.RequestHandler(), d, attrs)
		}
		if err == nil {
			sid, err = sidOf(op, doc.Sid)
		}
		return err
	})
	return sid, err
}

// uploadDocument posts a supporting document with its file as Twilio's API reference does
// (multipart/form-data to numbers-upload.twilio.com/v2/RegulatoryCompliance/SupportingDocuments:
// FriendlyName, Type, Attributes as JSON, and File), over the request handler's HTTP client, so
// it goes to the base URL with the call's context and leaves its answer in the exchange as the
// SDK's calls do. Its errors are the SDK's: a *client.TwilioRestError for Twilio's error body.
func (r *registrar) uploadDocument(h *client.RequestHandler, d SupportingDocumentInput, attrs map[string]any) (*numbers.NumbersV2SupportingDocument, error) {
	c, ok := h.Client.(*client.Client)
	if !ok || c.HTTPClient == nil {
		return nil, fmt.Errorf("twilio: upload supporting document: no HTTP client")
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("FriendlyName", d.FriendlyName)
	_ = w.WriteField("Type", d.Type)
	if len(attrs) > 0 {
		a, err := json.Marshal(attrs)
		if err != nil {
			return nil, err
		}
		_ = w.WriteField("Attributes", string(a))
	}
	mimeType := d.MimeType
	if mimeType == "" {
		mimeType = http.DetectContentType(d.File)
	}
	part := textproto.MIMEHeader{}
	part.Set("Content-Disposition", fmt.Sprintf(`form-data; name="File"; filename=%q`, documentFileName(d.Type, mimeType)))
	part.Set("Content-Type", mimeType)
	fw, err := w.CreatePart(part)
	if err != nil {
		return nil, err
	}
	if _, err := fw.Write(d.File); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	target, err := h.BuildUrl(uploadBaseURL + "/v2/RegulatoryCompliance/SupportingDocuments")
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(r.ctx, http.MethodPost, target, &body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "twilio-go/"+client.LibraryVersion+" switchboard")
	req.SetBasicAuth(c.Username, c.Password)
	resp, err := c.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		re := &client.TwilioRestError{}
		if err := json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(re); err != nil {
			return nil, fmt.Errorf("error decoding the response for an HTTP error code: %d", resp.StatusCode)
		}
		return nil, re
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	doc := &numbers.NumbersV2SupportingDocument{}
	if err := json.NewDecoder(resp.Body).Decode(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// documentFileName is the file name a document is uploaded under.
func documentFileName(typ, mimeType string) string {
	ext := ".bin"
	switch strings.ToLower(strings.TrimSpace(strings.Split(mimeType, ";")[0])) {
	case "application/pdf":
		ext = ".pdf"
	case "image/jpeg":
		ext = ".jpg"
	case "image/png":
		ext = ".png"
	}
	if typ == "" {
		typ = "document"
	}
	return typ + ext
}

// BundleStatus fetches the bundle (GET /v2/RegulatoryCompliance/Bundles/{sid}). A rejected
// bundle's FailureReason is read from its latest evaluation
// (GET …/Bundles/{sid}/Evaluations): the failure reasons of the requirements it did not pass.
func (t *Transport) BundleStatus(ctx context.Context, sid string) (Bundle, error) {
	if !bundleSID.MatchString(sid) {
		return Bundle{}, fmt.Errorf("twilio: bundle status: %q is not a bundle sid (BU…)", sid)
	}
	r, err := t.registrar(ctx)
	if err != nil {
		return Bundle{}, err
	}
	svc := numbers.NewApiService(r.api.RequestHandler())
	out := Bundle{SID: sid}
	if err := r.do("fetch bundle", func() error {
		bu, err := svc.FetchBundle(sid)
		if err == nil {
			out.Status = deref(bu.Status)
		}
		return err
	}); err != nil {
		return Bundle{}, err
	}
	if out.Status != BundleRejected {
		return out, nil
	}
	latest, err := r.latestEvaluation(svc, sid)
	if err != nil {
		return Bundle{}, err
	}
	if latest != nil && latest.Results != nil {
		out.FailureReason = evaluationFailures(*latest.Results)
	}
	return out, nil
}

var bundleSID = regexp.MustCompile(`^BU[0-9a-fA-F]{32}$`)

// latestEvaluation is the bundle's newest evaluation, following the pages; nil when it has none.
func (r *registrar) latestEvaluation(svc *numbers.ApiService, sid string) (*numbers.NumbersV2Evaluation, error) {
	params := (&numbers.ListEvaluationParams{}).SetPageSize(evaluationPageSize)
	var latest *numbers.NumbersV2Evaluation
	var latestAt time.Time
	token, page := "", ""
	for range maxEvaluationPages {
		var resp *numbers.ListEvaluationResponse
		err := r.do("list bundle evaluations", func() error {
			var err error
			resp, err = svc.PageEvaluation(sid, params, token, page)
			return err
		})
		if isNotFound(err) {
			return latest, nil
		}
		if err != nil {
			return nil, err
		}
		for i := range resp.Results {
			e := &resp.Results[i]
			var at time.Time
			if e.DateCreated != nil {
				at = *e.DateCreated
			}
			// Of evaluations made in the same second, the one listed last.
			if latest == nil || !at.Before(latestAt) {
				latest, latestAt = e, at
			}
		}
		next := deref(resp.Meta.NextPageUrl)
		if next == "" {
			return latest, nil
		}
		u, err := url.Parse(next)
		if err != nil {
			return nil, fmt.Errorf("twilio: list bundle evaluations: next page %q: %w", next, err)
		}
		token, page = u.Query().Get("PageToken"), u.Query().Get("Page")
		if token == "" && page == "" {
			return nil, fmt.Errorf("twilio: list bundle evaluations: next page %q names no page", next)
		}
	}
	return nil, fmt.Errorf("twilio: list bundle evaluations: more than %d pages for %s", maxEvaluationPages, sid)
}

// evaluationFailures joins the failure reasons of an evaluation's results that did not pass: the
// requirement's own, then those of its invalid fields.
func evaluationFailures(results []any) string {
	var out []string
	add := func(v any) {
		if s, ok := v.(string); ok && s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, r := range results {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		if passed, ok := m["passed"].(bool); ok && passed {
			continue
		}
		add(m["failure_reason"])
		if invalid, ok := m["invalid"].([]any); ok {
			for _, f := range invalid {
				if fm, ok := f.(map[string]any); ok {
					add(fm["failure_reason"])
				}
			}
		}
	}
	return strings.Join(out, "; ")
}
