package metatest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The Graph API as the server answers it:
//
//	GET    /{v}/me                                   the token's user
//	POST   /{v}/{phone-number-id}/messages           a WhatsApp message, or a read receipt
//	GET    /{v}/{phone-number-id}                    the phone number
//	GET    /{v}/{phone-number-id}/whatsapp_business_profile, POST the same
//	POST   /{v}/{phone-number-id}/media              a media upload (multipart)
//	GET    /{v}/{media-id}, DELETE the same          a media file's URL, its removal
//	GET    /whatsapp_business/attachments/?mid=…     the file (with the token), as lookaside.fbsbx.com
//	GET    /{v}/{waba-id}                            the WhatsApp Business Account
//	POST   /{v}/{waba-id}/message_templates, GET, DELETE
//	POST   /{v}/{page-id}/messages                   a Send API message or sender action
//	GET    /{v}/{page-id}                            the Page
//
// A client's onboarding (the OAuth dialog, the code exchange, subscribed_apps…) is in oauth.go.
//
// Errors are the Graph API's {"error": {message, type, code, error_subcode, error_data:
// {messaging_product, details}, fbtrace_id}}.

const attachmentsPath = "/whatsapp_business/attachments/"

// maxBody bounds a JSON request body; maxUpload a media upload.
const (
	maxBody   = 1 << 20
	maxUpload = 100<<20 + 1<<20
)

var graphVersion = regexp.MustCompile(`^v[0-9]{1,3}\.[0-9]{1,2}$`)

// apiError is a Graph API error answer.
type apiError struct {
	status, code, subcode int
	// title is Meta's words after "(#code) "; details go in error_data.details.
	title, details string
	// kind is the error's type, OAuthException unless set.
	kind string
}

func badParam(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: 100, title: "Invalid parameter", details: fmt.Sprintf(format, args...)}
}

func badValue(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: 131009, title: "Parameter value is not valid", details: fmt.Sprintf(format, args...)}
}

func unsupportedRequest(method, id string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: 100, subcode: 33, kind: "GraphMethodException",
		title: fmt.Sprintf("Unsupported %s request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api", strings.ToLower(method), id)}
}

func (s *Server) writeError(w http.ResponseWriter, e *apiError) {
	msg := e.title
	if e.code != 190 && e.code != 104 && e.code != 2500 {
		msg = fmt.Sprintf("(#%d) %s", e.code, e.title)
	}
	body := map[string]any{"message": msg, "type": "OAuthException", "code": e.code, "fbtrace_id": "A" + randomHex(11)}
	if e.kind != "" {
		body["type"] = e.kind
	}
	if e.subcode != 0 {
		body["error_subcode"] = e.subcode
	}
	if e.status >= 500 {
		body["is_transient"] = true
	}
	if e.details != "" {
		body["error_data"] = map[string]any{"messaging_product": "whatsapp", "details": e.details}
	}
	if e.status == http.StatusTooManyRequests && s.opts.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.opts.RetryAfter/time.Second)))
	}
	writeJSON(w, e.status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// bearer is the request's access token: the Authorization header, else access_token.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	for _, scheme := range []string{"Bearer ", "OAuth "} {
		if len(h) > len(scheme) && strings.EqualFold(h[:len(scheme)], scheme) {
			return strings.TrimSpace(h[len(scheme):])
		}
	}
	return r.URL.Query().Get("access_token")
}

func (s *Server) knownToken(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[token]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == attachmentsPath {
		s.download(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, picturesPath) || strings.HasPrefix(r.URL.Path, cdnPath) {
		s.picture(w, r)
		return
	}
	// sdk.js, the OAuth dialog, the code exchange and debug_token take no token of a user (oauth.go).
	if s.serveOAuth(w, r) {
		return
	}
	token := bearer(r)
	switch {
	case token == "":
		s.writeError(w, &apiError{status: http.StatusBadRequest, code: 104, title: "An access token is required to request this resource."})
		return
	case token == ExpiredToken:
		s.writeError(w, &apiError{status: http.StatusUnauthorized, code: 190, subcode: 463,
			title: "Error validating access token: Session has expired on Monday, 01-Jan-24 00:00:00 PST."})
		return
	case !s.knownToken(token):
		s.writeError(w, &apiError{status: http.StatusUnauthorized, code: 190, title: "Invalid OAuth access token - Cannot parse access token"})
		return
	}
	if f, ok := s.takeFailure(); ok {
		s.writeError(w, &apiError{status: f.status, code: f.code, subcode: f.subcode, title: f.message, details: f.message})
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) < 2 || len(segs) > 3 || !graphVersion.MatchString(segs[0]) {
		s.writeError(w, &apiError{status: http.StatusBadRequest, code: 2500, title: "Unknown path components: " + r.URL.Path})
		return
	}
	id, edge := segs[1], ""
	if len(segs) == 3 {
		edge = segs[2]
	}
	if e := s.route(w, r, token, id, edge); e != nil {
		s.writeError(w, e)
	}
}

// route answers a request for node id (and its edge); an error it returns is written.
func (s *Server) route(w http.ResponseWriter, r *http.Request, token, id, edge string) *apiError {
	if handled, e := s.onboarding(w, r, token, id, edge); handled {
		return e
	}
	s.mu.Lock()
	phone, page := s.phones[id], s.pages[id]
	_, isWABA := s.wabas[id]
	_, isMedia := s.media[id]
	_, isSession := s.sessions[id]
	s.mu.Unlock()
	method := r.Method
	if edge == "messages" && method == http.MethodPost && (phone != nil || page != "") {
		if f, ok := s.takeMessageFailure(); ok {
			return &apiError{status: f.status, code: f.code, subcode: f.subcode, title: f.message, details: f.message}
		}
	}
	switch {
	case id == "me" && edge == "" && method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"id": UserID, "name": UserName})
	case phone != nil && edge == "messages" && method == http.MethodPost:
		return s.whatsappMessages(w, r, token, *phone)
	case phone != nil && edge == "smb_app_data" && method == http.MethodPost:
		return s.smbAppData(w, r, token, *phone)
	case phone != nil && edge == "" && method == http.MethodGet:
		writeJSON(w, http.StatusOK, pick(s.phoneNode(*phone), r.URL.Query().Get("fields"),
			"verified_name,code_verification_status,display_phone_number,quality_rating,platform_type,throughput,id"))
	case phone != nil && edge == "whatsapp_business_profile" && method == http.MethodGet:
		p := pick(s.Profile(id), r.URL.Query().Get("fields"), "about,address,description,email,profile_picture_url,websites,vertical")
		p["messaging_product"] = "whatsapp"
		writeJSON(w, http.StatusOK, map[string]any{"data": []any{p}})
	case phone != nil && edge == "whatsapp_business_profile" && method == http.MethodPost:
		return s.updateProfile(w, r, id)
	case phone != nil && edge == "media" && method == http.MethodPost:
		return s.upload(w, r)
	case page != "" && edge == "messages" && method == http.MethodPost:
		return s.pageMessages(w, r, token, id)
	case page != "" && edge == "" && method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "name": page})
	case isWABA && edge == "" && method == http.MethodGet:
		writeJSON(w, http.StatusOK, pick(s.wabaNode(id), r.URL.Query().Get("fields"), "id,name,timezone_id,message_template_namespace"))
	case isWABA && edge == "message_templates":
		return s.templates(w, r, id)
	case id == AppID && edge == "uploads" && method == http.MethodPost:
		return s.startUpload(w, r)
	case isSession && edge == "" && method == http.MethodPost:
		return s.uploadPart(w, r, id)
	case isSession && edge == "" && method == http.MethodGet:
		s.uploadOffset(w, id)
	case isMedia && edge == "" && method == http.MethodGet:
		s.mediaNode(w, id)
	case isMedia && edge == "" && method == http.MethodDelete:
		s.mu.Lock()
		delete(s.media, id)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"success": true})
	default:
		return unsupportedRequest(method, id)
	}
	return nil
}

// pick is node's fields named in fields (comma separated; defaults when empty), and its id.
func pick(node map[string]any, fields, defaults string) map[string]any {
	if fields == "" {
		fields = defaults
	}
	out := map[string]any{}
	if id, ok := node["id"]; ok {
		out["id"] = id
	}
	for _, f := range strings.Split(fields, ",") {
		if v, ok := node[strings.TrimSpace(f)]; ok {
			out[strings.TrimSpace(f)] = v
		}
	}
	return out
}

// readJSON decodes a JSON object body; an error is Meta's answer to a body it cannot read.
func readJSON(r *http.Request) ([]byte, map[string]any, *apiError) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(raw) > maxBody {
		return nil, nil, badParam("the request body is unreadable or larger than %d bytes", maxBody)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil || body == nil {
		return nil, nil, badParam("the request body is not a JSON object")
	}
	return raw, body, nil
}

func str(m map[string]any, k string) string { v, _ := m[k].(string); return v }

func object(m map[string]any, k string) map[string]any { v, _ := m[k].(map[string]any); return v }

func array(m map[string]any, k string) []any { v, _ := m[k].([]any); return v }

func runes(s string) int { return utf8.RuneCountInString(s) }

// tooLong is the error of a text field longer than max characters (error 100, as Meta).
func tooLong(param, value string, max int) *apiError {
	if runes(value) > max {
		return badParam("Param %s must be at most %d characters long.", param, max)
	}
	return nil
}

var (
	waNumber = regexp.MustCompile(`^[1-9][0-9]{6,14}$`)
	bsuid    = regexp.MustCompile(`^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}$`)
	link     = regexp.MustCompile(`^https?://[^\s/$.?#][^\s]*$`)
	variable = regexp.MustCompile(`\{\{\s*[A-Za-z0-9_]+\s*\}\}`)
)

var waTypes = []string{"audio", "contacts", "document", "image", "interactive", "location", "reaction", "sticker", "template", "text", "video"}

// whatsappMessages answers POST /{phone-number-id}/messages: a read receipt, or a message.
func (s *Server) whatsappMessages(w http.ResponseWriter, r *http.Request, token string, phone PhoneNumber) *apiError {
	raw, body, e := readJSON(r)
	if e != nil {
		return e
	}
	if str(body, "messaging_product") != "whatsapp" {
		return badParam("The parameter messaging_product is required and must be whatsapp.")
	}
	if body["status"] != nil {
		return s.markRead(w, body, phone.ID)
	}
	to, recipient := str(body, "to"), str(body, "recipient")
	switch {
	case to == "" && recipient == "":
		return badParam("The parameter to is required.")
	case to != "" && !waNumber.MatchString(strings.TrimPrefix(to, "+")):
		return badParam("Param to must be a phone number of digits, not %q.", to)
	case to == "" && !bsuid.MatchString(recipient):
		return badParam("Param recipient must be a business-scoped user ID, not %q.", recipient)
	}
	if rt := str(body, "recipient_type"); rt != "" && rt != "individual" {
		return badParam("Param recipient_type must be individual.")
	}
	typ := str(body, "type")
	if typ == "" {
		typ = "text"
	}
	if !slices.Contains(waTypes, typ) {
		return badParam("Param type must be one of {%s} - got %q.", strings.ToUpper(strings.Join(waTypes, ", ")), typ)
	}
	if body[typ] == nil {
		return badParam("The parameter %s is required for a message of type %s.", typ, typ)
	}
	if c := body["context"]; c != nil && str(object(body, "context"), "message_id") == "" {
		return badParam("Param context['message_id'] is required.")
	}
	if e := s.checkWhatsApp(typ, body, phone, to == ""); e != nil {
		return e
	}
	dest := to
	if dest == "" {
		dest = recipient
	}
	if typ != "template" && s.windowClosed(dest) {
		return &apiError{status: http.StatusBadRequest, code: 131047, title: "Re-engagement message",
			details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number."}
	}
	id := wamid(strings.TrimPrefix(dest, "+"))
	contact := map[string]any{"input": dest, "wa_id": strings.TrimPrefix(to, "+")}
	if to == "" {
		contact = map[string]any{"input": dest, "user_id": recipient}
	}
	answer := map[string]any{"id": id}
	if typ == "template" {
		answer["message_status"] = "accepted"
	}
	s.accept(Message{ID: id, PhoneNumberID: phone.ID, DisplayPhoneNumber: phone.Display, WABAID: phone.WABAID,
		To: dest, Type: typ, Body: body, Raw: raw, Token: token})
	writeJSON(w, http.StatusOK, map[string]any{"messaging_product": "whatsapp", "contacts": []any{contact}, "messages": []any{answer}})
	return nil
}

func (s *Server) markRead(w http.ResponseWriter, body map[string]any, phoneID string) *apiError {
	if str(body, "status") != "read" {
		return badParam("Param status must be read.")
	}
	if str(body, "message_id") == "" {
		return badParam("The parameter message_id is required.")
	}
	typing := false
	if ti := body["typing_indicator"]; ti != nil {
		if str(object(body, "typing_indicator"), "type") != "text" {
			return badParam("Param typing_indicator['type'] must be text.")
		}
		typing = true
	}
	s.mu.Lock()
	s.reads = append(s.reads, Read{PhoneNumberID: phoneID, MessageID: str(body, "message_id"), Typing: typing})
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

// checkWhatsApp validates the object of a message of type typ as the Cloud API does.
func (s *Server) checkWhatsApp(typ string, body map[string]any, phone PhoneNumber, toBSUID bool) *apiError {
	o := object(body, typ)
	if o == nil && typ != "contacts" {
		return badParam("Param %s must be an object.", typ)
	}
	switch typ {
	case "text":
		if str(o, "body") == "" {
			return badParam("The parameter text['body'] is required.")
		}
		return tooLong("text['body']", str(o, "body"), 4096)
	case "image", "video", "audio", "document", "sticker":
		return s.checkMedia(typ, o)
	case "location":
		_, lat := o["latitude"].(float64)
		_, lon := o["longitude"].(float64)
		if !lat || !lon {
			return badParam("The parameters location['latitude'] and location['longitude'] are required numbers.")
		}
	case "contacts":
		return checkContacts(array(body, "contacts"))
	case "interactive":
		return checkInteractive(o)
	case "reaction":
		if str(o, "message_id") == "" {
			return badParam("The parameter reaction['message_id'] is required.")
		}
		if _, ok := o["emoji"].(string); !ok {
			return badParam("The parameter reaction['emoji'] is required (empty to remove the reaction).")
		}
	case "template":
		return s.checkTemplate(o, phone.WABAID, toBSUID)
	}
	return nil
}

func (s *Server) checkMedia(typ string, o map[string]any) *apiError {
	id, l := str(o, "id"), str(o, "link")
	switch {
	case id == "" && l == "":
		return badParam("Param %s must have an id or a link.", typ)
	case id != "" && l != "":
		return badParam("Param %s must have an id or a link, not both.", typ)
	case l != "" && !link.MatchString(l):
		return badParam("Param %s['link'] is not a valid URL.", typ)
	case (typ == "audio" || typ == "sticker") && o["caption"] != nil:
		return badParam("Param %s['caption'] is not allowed for %s messages.", typ, typ)
	case typ != "document" && o["filename"] != nil:
		return badParam("Param %s['filename'] is only allowed for document messages.", typ)
	}
	if id != "" {
		s.mu.Lock()
		_, ok := s.media[id]
		s.mu.Unlock()
		if !ok {
			return badParam("Param %s['id'] is not a valid WhatsApp Business Account media attachment ID.", typ)
		}
	}
	return tooLong(typ+"['caption']", str(o, "caption"), 1024)
}

func checkContacts(cards []any) *apiError {
	if len(cards) == 0 {
		return badParam("The parameter contacts is required: an array of contacts.")
	}
	for i, c := range cards {
		card, _ := c.(map[string]any)
		name := object(card, "name")
		if str(name, "formatted_name") == "" {
			return badParam("The parameter contacts[%d]['name']['formatted_name'] is required.", i)
		}
		if str(name, "first_name") == "" && str(name, "last_name") == "" && str(name, "middle_name") == "" &&
			str(name, "prefix") == "" && str(name, "suffix") == "" {
			return badParam("contacts[%d]['name'] needs one of first_name, last_name, middle_name, prefix, suffix.", i)
		}
		for j, p := range array(card, "phones") {
			if pm, _ := p.(map[string]any); str(pm, "phone") == "" {
				return badParam("The parameter contacts[%d]['phones'][%d]['phone'] is required.", i, j)
			}
		}
	}
	return nil
}

func checkInteractive(in map[string]any) *apiError {
	typ := str(in, "type")
	body := str(object(in, "body"), "text")
	if body == "" {
		return badParam("The parameter interactive['body']['text'] is required.")
	}
	if e := tooLong("interactive['body']['text']", body, 1024); e != nil {
		return e
	}
	if f := object(in, "footer"); f != nil {
		if e := tooLong("interactive['footer']['text']", str(f, "text"), 60); e != nil {
			return e
		}
	}
	action := object(in, "action")
	if action == nil {
		return badParam("The parameter interactive['action'] is required.")
	}
	switch typ {
	case "button":
		return checkReplyButtons(array(action, "buttons"))
	case "list":
		return checkList(action)
	case "cta_url":
		p := object(action, "parameters")
		switch {
		case str(action, "name") != "cta_url":
			return badParam("Param interactive['action']['name'] must be cta_url.")
		case str(p, "display_text") == "" || !link.MatchString(str(p, "url")):
			return badParam("interactive['action']['parameters'] needs display_text and a valid url.")
		}
		if e := tooLong("interactive['action']['parameters']['display_text']", str(p, "display_text"), 20); e != nil {
			return e
		}
		return checkHeader(object(in, "header"))
	case "location_request_message", "request_contact_info":
		want := "send_location"
		if typ == "request_contact_info" {
			want = "request_contact_info"
		}
		if str(action, "name") != want {
			return badParam("Param interactive['action']['name'] must be %s.", want)
		}
		return nil
	}
	return badParam("Param interactive['type'] must be one of {BUTTON, LIST, CTA_URL, LOCATION_REQUEST_MESSAGE, REQUEST_CONTACT_INFO} - got %q.", typ)
}

func checkReplyButtons(buttons []any) *apiError {
	if len(buttons) == 0 || len(buttons) > 3 {
		return badValue("Invalid buttons count. Min allowed buttons: 1, Max allowed buttons: 3, got %d.", len(buttons))
	}
	seen := map[string]bool{}
	for i, b := range buttons {
		bm, _ := b.(map[string]any)
		reply := object(bm, "reply")
		id, title := str(reply, "id"), str(reply, "title")
		switch {
		case str(bm, "type") != "reply" || id == "" || title == "":
			return badParam("interactive['action']['buttons'][%d] must be of type reply with an id and a title.", i)
		case runes(title) > 20:
			return badValue("Button title length invalid. Max length allowed: 20, got %d.", runes(title))
		case runes(id) > 256:
			return badValue("Button id length invalid. Max length allowed: 256.")
		case seen[id]:
			return badValue("Duplicate button id %q: button ids must be unique.", id)
		}
		seen[id] = true
	}
	return nil
}

func checkList(action map[string]any) *apiError {
	button := str(action, "button")
	if button == "" {
		return badParam("The parameter interactive['action']['button'] is required.")
	}
	if e := tooLong("interactive['action']['button']", button, 20); e != nil {
		return e
	}
	sections := array(action, "sections")
	if len(sections) == 0 || len(sections) > 10 {
		return badValue("Invalid sections count. Min allowed sections: 1, Max allowed sections: 10, got %d.", len(sections))
	}
	rows, seen := 0, map[string]bool{}
	for i, sec := range sections {
		sm, _ := sec.(map[string]any)
		if len(sections) > 1 && str(sm, "title") == "" {
			return badParam("interactive['action']['sections'][%d]['title'] is required when there are several sections.", i)
		}
		if e := tooLong("section title", str(sm, "title"), 24); e != nil {
			return e
		}
		for _, row := range array(sm, "rows") {
			rows++
			rm, _ := row.(map[string]any)
			id, title := str(rm, "id"), str(rm, "title")
			switch {
			case id == "" || title == "":
				return badParam("Each row needs an id and a title.")
			case seen[id]:
				return badValue("Duplicate row id %q: row ids must be unique.", id)
			case runes(title) > 24 || runes(id) > 200 || runes(str(rm, "description")) > 72:
				return badValue("Row %q is too long: title at most 24, id 200, description 72 characters.", id)
			}
			seen[id] = true
		}
	}
	if rows == 0 || rows > 10 {
		return badValue("Total row count must be 1 to 10, got %d.", rows)
	}
	return nil
}

func checkHeader(h map[string]any) *apiError {
	if h == nil {
		return nil
	}
	switch t := str(h, "type"); t {
	case "text":
		if str(h, "text") == "" {
			return badParam("The parameter interactive['header']['text'] is required.")
		}
		return tooLong("interactive['header']['text']", str(h, "text"), 60)
	case "image", "video", "document":
		if !link.MatchString(str(object(h, t), "link")) && str(object(h, t), "id") == "" {
			return badParam("interactive['header'][%q] needs a link or an id.", t)
		}
		return nil
	default:
		return badParam("Param interactive['header']['type'] must be one of {TEXT, IMAGE, VIDEO, DOCUMENT} - got %q.", t)
	}
}

// checkTemplate looks the template up in the WABA (approved, in the language) and checks its
// parameters against its components, when the server knows them.
func (s *Server) checkTemplate(o map[string]any, wabaID string, toBSUID bool) *apiError {
	name, lang := str(o, "name"), str(object(o, "language"), "code")
	if name == "" || lang == "" {
		return badParam("The parameters template['name'] and template['language']['code'] are required.")
	}
	s.mu.Lock()
	var t *Template
	if w := s.wabas[wabaID]; w != nil {
		if found := w.template(name, lang); found != nil {
			c := *found
			t = &c
		}
	}
	s.mu.Unlock()
	notFound := &apiError{status: http.StatusNotFound, code: 132001, title: "Template name does not exist in the translation",
		details: fmt.Sprintf("template name (%s) does not exist in %s", name, lang)}
	switch {
	case t == nil:
		return notFound
	case t.Status == "PAUSED":
		return &apiError{status: http.StatusBadRequest, code: 132015, title: "Template is Paused", details: fmt.Sprintf("Template %s is paused due to low quality.", name)}
	case t.Status == "DISABLED":
		return &apiError{status: http.StatusBadRequest, code: 132016, title: "Template is Disabled", details: fmt.Sprintf("Template %s is disabled due to low quality.", name)}
	case t.Status != "APPROVED":
		return notFound
	case toBSUID && t.Category == "AUTHENTICATION":
		return &apiError{status: http.StatusBadRequest, code: 131062, title: "Business-scoped User ID recipients are not supported for this message.",
			details: "Authentication templates need the recipient's phone number."}
	}
	given := map[string][]any{}
	for _, c := range array(o, "components") {
		cm, _ := c.(map[string]any)
		given[str(cm, "type")] = append(given[str(cm, "type")], array(cm, "parameters")...)
	}
	for _, c := range t.Components {
		cm, _ := c.(map[string]any)
		part, text, format := strings.ToLower(str(cm, "type")), str(cm, "text"), strings.ToLower(str(cm, "format"))
		switch {
		case part == "header" && format != "" && format != "text":
			var p map[string]any
			if ps := given["header"]; len(ps) == 1 {
				p, _ = ps[0].(map[string]any)
			}
			if str(p, "type") != format {
				return &apiError{status: http.StatusBadRequest, code: 132012, title: "Parameter format does not match format in the created template",
					details: fmt.Sprintf("header: Format mismatch, expected %s", strings.ToUpper(format))}
			}
		case part == "header" || part == "body":
			want := len(variable.FindAllString(text, -1))
			if got := len(given[part]); got != want {
				return &apiError{status: http.StatusBadRequest, code: 132000, title: "Number of parameters does not match the expected number of params",
					details: fmt.Sprintf("%s: number of localizable_params (%d) does not match the expected number of params (%d)", part, got, want)}
			}
		}
	}
	return nil
}

var pageTags = []string{"HUMAN_AGENT", "ACCOUNT_UPDATE", "CONFIRMED_EVENT_UPDATE", "POST_PURCHASE_UPDATE"}

// pageMessages answers POST /{page-id}/messages: the Send API.
func (s *Server) pageMessages(w http.ResponseWriter, r *http.Request, token, pageID string) *apiError {
	raw, body, e := readJSON(r)
	if e != nil {
		return e
	}
	to := str(object(body, "recipient"), "id")
	if to == "" {
		return badParam("The parameter recipient is required: {id: <PSID or IGSID>}.")
	}
	m := Message{PageID: pageID, To: to, Body: body, Raw: raw, Token: token}
	if action := str(body, "sender_action"); action != "" {
		if e := checkSenderAction(action, object(body, "payload")); e != nil {
			return e
		}
		m.Type = action
		s.accept(m)
		writeJSON(w, http.StatusOK, map[string]any{"recipient_id": to})
		return nil
	}
	kind := str(body, "messaging_type")
	switch {
	case kind != "RESPONSE" && kind != "UPDATE" && kind != "MESSAGE_TAG":
		return badParam("Param messaging_type must be one of {RESPONSE, UPDATE, MESSAGE_TAG} - got %q.", kind)
	case kind == "MESSAGE_TAG" && !slices.Contains(pageTags, str(body, "tag")):
		return badParam("Param tag must be one of {%s} with messaging_type MESSAGE_TAG.", strings.Join(pageTags, ", "))
	}
	typ, e := checkPageMessage(object(body, "message"))
	if e != nil {
		return e
	}
	if kind != "MESSAGE_TAG" && s.windowClosed(to) {
		return &apiError{status: http.StatusBadRequest, code: 10, subcode: 2018278, title: "This message is sent outside of allowed window."}
	}
	m.ID, m.Type = mid(), typ
	s.accept(m)
	writeJSON(w, http.StatusOK, map[string]any{"recipient_id": to, "message_id": m.ID})
	return nil
}

func checkSenderAction(action string, payload map[string]any) *apiError {
	switch action {
	case "typing_on", "typing_off", "mark_seen":
		return nil
	case "react", "unreact":
		if str(payload, "message_id") == "" {
			return badParam("The parameter payload['message_id'] is required for %s.", action)
		}
		if action == "react" && str(payload, "reaction") == "" {
			return badParam("The parameter payload['reaction'] is required for react.")
		}
		return nil
	}
	return badParam("Param sender_action must be one of {TYPING_ON, TYPING_OFF, MARK_SEEN, REACT, UNREACT} - got %q.", action)
}

// checkPageMessage validates a Send API message and returns its type: text or the attachment's.
func checkPageMessage(msg map[string]any) (string, *apiError) {
	text, att := str(msg, "text"), object(msg, "attachment")
	switch {
	case text == "" && att == nil:
		return "", badParam("Message cannot be empty, must provide valid attachment or text.")
	case text != "" && att != nil:
		return "", badParam("Only one of text or attachment can be specified.")
	case runes(text) > 2000:
		return "", badParam("Length of param message[text] must be less than or equal to 2000.")
	}
	if qr := array(msg, "quick_replies"); qr != nil {
		if len(qr) > 13 {
			return "", badParam("param message[quick_replies] must have at most 13 items.")
		}
		for i, q := range qr {
			qm, _ := q.(map[string]any)
			title := str(qm, "title")
			if str(qm, "content_type") == "text" && (title == "" || str(qm, "payload") == "" || runes(title) > 20) {
				return "", badParam("message[quick_replies][%d] needs a title of at most 20 characters and a payload.", i)
			}
		}
	}
	if att == nil {
		return "text", nil
	}
	typ, payload := str(att, "type"), object(att, "payload")
	switch {
	case !slices.Contains([]string{"image", "video", "audio", "file", "template"}, typ):
		return "", badParam("Param message[attachment][type] must be one of {IMAGE, VIDEO, AUDIO, FILE, TEMPLATE} - got %q.", typ)
	case typ != "template" && !link.MatchString(str(payload, "url")) && str(payload, "attachment_id") == "":
		return "", badParam("message[attachment][payload] needs a valid url or an attachment_id.")
	}
	return typ, nil
}

var verticals = []string{"UNDEFINED", "OTHER", "AUTO", "BEAUTY", "APPAREL", "EDU", "ENTERTAIN", "EVENT_PLAN", "FINANCE",
	"GROCERY", "GOVT", "HOTEL", "HEALTH", "NONPROFIT", "PROF_SERVICES", "RETAIL", "TRAVEL", "RESTAURANT", "NOT_A_BIZ"}

// updateProfile answers POST /{phone-number-id}/whatsapp_business_profile.
func (s *Server) updateProfile(w http.ResponseWriter, r *http.Request, phoneID string) *apiError {
	_, body, e := readJSON(r)
	if e != nil {
		return e
	}
	if str(body, "messaging_product") != "whatsapp" {
		return badParam("The parameter messaging_product is required and must be whatsapp.")
	}
	update := map[string]any{}
	for k, v := range body {
		sv, isString := v.(string)
		switch k {
		case "messaging_product":
			continue
		case "about", "address", "description", "email", "vertical":
			limits := map[string]int{"about": 139, "address": 256, "description": 512, "email": 128, "vertical": 32}
			if !isString || runes(sv) > limits[k] {
				return badParam("Param %s must be a string of at most %d characters.", k, limits[k])
			}
			if k == "email" && sv != "" && !strings.Contains(sv, "@") {
				return badParam("Param email must be an email address.")
			}
			if k == "vertical" && !slices.Contains(verticals, sv) {
				return badParam("Param vertical must be one of {%s}.", strings.Join(verticals, ", "))
			}
		case "profile_picture_handle":
			url, e := s.setPicture(sv)
			if e != nil {
				return e
			}
			k, v = "profile_picture_url", url
		case "websites":
			sites, _ := v.([]any)
			if sites == nil || len(sites) > 2 {
				return badParam("Param websites must be an array of at most 2 URLs.")
			}
			for _, site := range sites {
				if ss, _ := site.(string); !link.MatchString(ss) || runes(ss) > 256 {
					return badParam("Param websites must hold http(s) URLs of at most 256 characters.")
				}
			}
		default:
			return badParam("Param %s is not a field of a business profile.", k)
		}
		update[k] = v
	}
	s.mu.Lock()
	for k, v := range update {
		s.profiles[phoneID][k] = v
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

// health is the health_status of a message through the phone number (when not nil) and WABA.
func (s *Server) health(phone *PhoneNumber, wabaID string, funded bool) map[string]any {
	wabaState := "AVAILABLE"
	if !funded {
		wabaState = "LIMITED"
	}
	var entities []any
	if phone != nil {
		entities = append(entities, map[string]any{"entity_type": "PHONE_NUMBER", "id": phone.ID, "can_send_message": "AVAILABLE"})
	}
	entities = append(entities,
		map[string]any{"entity_type": "WABA", "id": wabaID, "can_send_message": wabaState},
		map[string]any{"entity_type": "BUSINESS", "id": "100000000000007", "can_send_message": "AVAILABLE"},
		map[string]any{"entity_type": "APP", "id": AppID, "can_send_message": "AVAILABLE"})
	return map[string]any{"can_send_message": wabaState, "entities": entities}
}

func (s *Server) phoneNode(p PhoneNumber) map[string]any {
	s.mu.Lock()
	funded := s.wabas[p.WABAID] != nil && s.wabas[p.WABAID].fundingID != ""
	s.mu.Unlock()
	return map[string]any{"id": p.ID, "display_phone_number": p.Display, "verified_name": p.VerifiedName,
		"quality_rating": "GREEN", "code_verification_status": "VERIFIED", "name_status": "APPROVED",
		"status": "CONNECTED", "platform_type": "CLOUD_API", "throughput": map[string]any{"level": "STANDARD"},
		"health_status": s.health(&p, p.WABAID, funded)}
}

func (s *Server) wabaNode(id string) map[string]any {
	s.mu.Lock()
	funding := s.wabas[id].fundingID
	s.mu.Unlock()
	node := map[string]any{"id": id, "name": "Switchboard Test WABA", "currency": "USD", "timezone_id": "1",
		"message_template_namespace": "c2f1e0d9_8b7a_4c6d_9e5f_a4b3c2d1e0f9", "health_status": s.health(nil, id, funding != "")}
	if funding != "" {
		node["primary_funding_id"] = funding
	}
	return node
}

var templateName = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)

// templates answers /{waba-id}/message_templates: create (POST), list (GET), delete (DELETE).
func (s *Server) templates(w http.ResponseWriter, r *http.Request, wabaID string) *apiError {
	switch r.Method {
	case http.MethodPost:
		return s.createTemplate(w, r, wabaID)
	case http.MethodGet:
		s.listTemplates(w, r, wabaID)
		return nil
	case http.MethodDelete:
		return s.deleteTemplate(w, r, wabaID)
	}
	return unsupportedRequest(r.Method, wabaID)
}

func (s *Server) createTemplate(w http.ResponseWriter, r *http.Request, wabaID string) *apiError {
	_, body, e := readJSON(r)
	if e != nil {
		return e
	}
	name, lang, category := str(body, "name"), str(body, "language"), strings.ToUpper(str(body, "category"))
	switch {
	case !templateName.MatchString(name):
		return badParam("Param name must be lowercase letters, numbers and underscores, got %q.", name)
	case lang == "":
		return badParam("The parameter language is required.")
	case category != "AUTHENTICATION" && category != "MARKETING" && category != "UTILITY":
		return badParam("Param category must be one of {AUTHENTICATION, MARKETING, UTILITY} - got %q.", str(body, "category"))
	}
	components := array(body, "components")
	check := checkComponents
	if category == "AUTHENTICATION" {
		check = checkAuthComponents
	}
	if e := check(components); e != nil {
		return e
	}
	s.mu.Lock()
	wb := s.wabas[wabaID]
	if wb.template(name, lang) != nil {
		s.mu.Unlock()
		return &apiError{status: http.StatusBadRequest, code: 100, subcode: 2388024, title: "Invalid parameter",
			details: fmt.Sprintf("Message template %q already has content in %s.", name, lang)}
	}
	t := &Template{ID: numericID(), Name: name, Language: lang, Status: "PENDING", Category: category, Components: components}
	wb.templates = append(wb.templates, t)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": t.ID, "status": t.Status, "category": t.Category})
	return nil
}

// checkComponents validates the components of a utility or marketing template.
func checkComponents(components []any) *apiError {
	bodies := 0
	for _, c := range components {
		cm, _ := c.(map[string]any)
		text := str(cm, "text")
		switch strings.ToUpper(str(cm, "type")) {
		case "BODY":
			bodies++
			if text == "" || runes(text) > 1024 {
				return badParam("A template body needs text of at most 1024 characters.")
			}
			if variable.MatchString(text) && len(array(object(cm, "example"), "body_text")) == 0 {
				return badParam("Message template \"body_text\" param is missing expected field(s): the body has variables but no example.")
			}
		case "HEADER":
			switch f := strings.ToUpper(str(cm, "format")); f {
			case "TEXT":
				if text == "" || runes(text) > 60 {
					return badParam("A text header needs text of at most 60 characters.")
				}
			case "IMAGE", "VIDEO", "DOCUMENT", "LOCATION":
				if f != "LOCATION" && len(array(object(cm, "example"), "header_handle")) == 0 {
					return badParam("A %s header needs example.header_handle.", strings.ToLower(f))
				}
			default:
				return badParam("Param header format must be one of {TEXT, IMAGE, VIDEO, DOCUMENT, LOCATION} - got %q.", f)
			}
		case "FOOTER":
			if text == "" || runes(text) > 60 {
				return badParam("A footer needs text of at most 60 characters.")
			}
		case "BUTTONS":
			if e := checkTemplateButtons(array(cm, "buttons")); e != nil {
				return e
			}
		default:
			return badParam("Param component type must be one of {HEADER, BODY, FOOTER, BUTTONS} - got %q.", str(cm, "type"))
		}
	}
	if bodies != 1 {
		return badParam("A template has exactly one BODY component.")
	}
	return nil
}

func checkTemplateButtons(buttons []any) *apiError {
	if len(buttons) == 0 || len(buttons) > 10 {
		return badParam("A BUTTONS component has 1 to 10 buttons.")
	}
	for i, b := range buttons {
		bm, _ := b.(map[string]any)
		text := str(bm, "text")
		switch t := strings.ToUpper(str(bm, "type")); t {
		case "QUICK_REPLY":
			if text == "" || runes(text) > 25 {
				return badParam("buttons[%d] needs text of at most 25 characters.", i)
			}
		case "URL":
			u := str(bm, "url")
			if text == "" || !link.MatchString(strings.ReplaceAll(u, "{{1}}", "x")) {
				return badParam("buttons[%d] needs text and a valid url.", i)
			}
			if strings.Contains(u, "{{") && len(array(bm, "example")) == 0 {
				return badParam("buttons[%d] has a variable URL without an example.", i)
			}
		case "PHONE_NUMBER":
			if text == "" || str(bm, "phone_number") == "" {
				return badParam("buttons[%d] needs text and a phone_number.", i)
			}
		case "COPY_CODE":
			if str(bm, "example") == "" {
				return badParam("buttons[%d] needs an example code.", i)
			}
		case "REQUEST_CONTACT_INFO":
		default:
			return badParam("Param buttons[%d]['type'] must be one of {QUICK_REPLY, URL, PHONE_NUMBER, COPY_CODE, REQUEST_CONTACT_INFO} - got %q.", i, t)
		}
	}
	return nil
}

// checkAuthComponents validates an authentication template: Meta writes its text, so its body
// has none; an optional footer sets the code's expiry; one OTP button.
func checkAuthComponents(components []any) *apiError {
	otp := 0
	for _, c := range components {
		cm, _ := c.(map[string]any)
		switch strings.ToUpper(str(cm, "type")) {
		case "BODY":
			if cm["text"] != nil {
				return badParam("An authentication template's body has no text: Meta writes it.")
			}
		case "FOOTER":
			n, _ := cm["code_expiration_minutes"].(float64)
			if n < 1 || n > 90 {
				return badParam("Param code_expiration_minutes must be 1 to 90.")
			}
		case "BUTTONS":
			for _, b := range array(cm, "buttons") {
				bm, _ := b.(map[string]any)
				if strings.ToUpper(str(bm, "type")) != "OTP" {
					return badParam("An authentication template's buttons are OTP buttons.")
				}
				otp++
				switch strings.ToUpper(str(bm, "otp_type")) {
				case "COPY_CODE":
				case "ONE_TAP", "ZERO_TAP":
					var app map[string]any
					if apps := array(bm, "supported_apps"); len(apps) > 0 {
						app, _ = apps[0].(map[string]any)
					}
					if str(app, "package_name") == "" || str(app, "signature_hash") == "" {
						return badParam("A one-tap button needs supported_apps with package_name and signature_hash.")
					}
				default:
					return badParam("Param otp_type must be one of {COPY_CODE, ONE_TAP, ZERO_TAP}.")
				}
			}
		default:
			return badParam("An authentication template has BODY, FOOTER and BUTTONS components only.")
		}
	}
	if otp != 1 {
		return badParam("An authentication template has exactly one OTP button.")
	}
	return nil
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request, wabaID string) {
	q := r.URL.Query()
	size := DefaultPageSize
	if s.opts.PageSize > 0 {
		size = s.opts.PageSize
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && n < size {
		size = n
	}
	var all []map[string]any
	for _, t := range s.Templates(wabaID) {
		if (q.Get("name") != "" && t.Name != q.Get("name")) || (q.Get("status") != "" && t.Status != q.Get("status")) {
			continue
		}
		node := map[string]any{"id": t.ID, "name": t.Name, "language": t.Language, "status": t.Status,
			"category": t.Category, "components": t.Components}
		if t.RejectedReason != "" {
			node["rejected_reason"] = t.RejectedReason
		}
		all = append(all, pick(node, q.Get("fields"), "name,language,status,category,id,components"))
	}
	s.writePage(w, r, all, size)
}

// writePage answers a list edge's page of size from the after cursor, with Meta's paging cursors
// and, when more follow, the next link.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, all []map[string]any, size int) {
	q := r.URL.Query()
	start := 0
	if a, err := base64.RawURLEncoding.DecodeString(q.Get("after")); err == nil && len(a) > 0 {
		start, _ = strconv.Atoi(string(a))
	}
	start = min(max(start, 0), len(all))
	end := min(start+size, len(all))
	data := all[start:end]
	if data == nil {
		data = []map[string]any{}
	}
	answer := map[string]any{"data": data}
	if len(data) > 0 {
		paging := map[string]any{"cursors": map[string]any{
			"before": base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(start))),
			"after":  base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end))),
		}}
		if end < len(all) {
			next := url.Values{}
			for k, v := range q {
				next[k] = v
			}
			next.Set("after", base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end))))
			paging["next"] = s.URL + r.URL.Path + "?" + next.Encode()
		}
		answer["paging"] = paging
	}
	writeJSON(w, http.StatusOK, answer)
}

func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request, wabaID string) *apiError {
	name, hsm := r.URL.Query().Get("name"), r.URL.Query().Get("hsm_id")
	if name == "" {
		return badParam("The parameter name is required.")
	}
	s.mu.Lock()
	wb := s.wabas[wabaID]
	kept := wb.templates[:0:0]
	for _, t := range wb.templates {
		if t.Name != name || (hsm != "" && t.ID != hsm) {
			kept = append(kept, t)
		}
	}
	found := len(kept) < len(wb.templates)
	wb.templates = kept
	s.mu.Unlock()
	if !found {
		return badParam("Message template %q was not found.", name)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

// mediaTypes are the MIME types the Cloud API takes.
var mediaTypes = []string{"audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg", "text/plain",
	"application/pdf", "application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"application/vnd.openxmlformats-officedocument.presentationml.presentation",
	"image/jpeg", "image/png", "image/webp", "video/mp4", "video/3gpp"}

// upload answers POST /{phone-number-id}/media.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) *apiError {
	r.Body = http.MaxBytesReader(w, r.Body, maxUpload)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		return badParam("The request is not a multipart form of at most 100 MB.")
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	typ := r.FormValue("type")
	switch {
	case r.FormValue("messaging_product") != "whatsapp":
		return badParam("The parameter messaging_product is required and must be whatsapp.")
	case typ == "":
		return badParam("The parameter type is required.")
	case !slices.Contains(mediaTypes, typ):
		return badParam("Param file must be a file with one of the following types: %s. Received file of type '%s'.", strings.Join(mediaTypes, ", "), typ)
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		return badParam("The parameter file is required.")
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil || len(data) == 0 {
		return badParam("The parameter file is required.")
	}
	id := numericID()
	s.AddMedia(id, typ, data)
	writeJSON(w, http.StatusOK, map[string]any{"id": id})
	return nil
}

// mediaNode answers GET /{media-id}: where to download it, for a few minutes.
func (s *Server) mediaNode(w http.ResponseWriter, id string) {
	data, mimeType, _ := s.Media(id)
	sum := sha256.Sum256(data)
	ext := strconv.FormatInt(time.Now().Unix(), 10)
	q := url.Values{"mid": {id}, "ext": {ext}, "hash": {s.mediaHash(id, ext)}}
	writeJSON(w, http.StatusOK, map[string]any{"messaging_product": "whatsapp", "url": s.URL + attachmentsPath + "?" + q.Encode(),
		"mime_type": mimeType, "sha256": hex.EncodeToString(sum[:]), "file_size": len(data), "id": id})
}

func (s *Server) mediaHash(id, ext string) string {
	mac := hmac.New(sha256.New, []byte(AppSecret))
	mac.Write([]byte(id + "." + ext))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// download serves a media file at the URL mediaNode named, to a request with a known token, as
// lookaside.fbsbx.com does (401 without one, 404 for a URL it did not sign).
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !s.knownToken(bearer(r)) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	q := r.URL.Query()
	id, ext := q.Get("mid"), q.Get("ext")
	data, mimeType, ok := s.Media(id)
	if !ok || !hmac.Equal([]byte(q.Get("hash")), []byte(s.mediaHash(id, ext))) {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", mimeType)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
