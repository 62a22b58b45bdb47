package metatest

import (
	"fmt"
	"mime"
	"net/http"
	"time"
)

// WhatsApp "coexistence": a number onboarded from the WhatsApp Business app, whose app data
// (contacts, chat history) the business's solution provider synchronizes once after the
// onboarding:
//
//	POST   /{v}/{phone-number-id}/smb_app_data      {messaging_product: whatsapp, sync_type: smb_app_state_sync | history}
//
// as JSON, a form or query parameters; answered {"messaging_product": "whatsapp", "request_id":
// …}. The server serves it once SetCoexistence or DeclineHistory was called (before, it answers
// as any edge it does not know: error 100, subcode 33). It checks the token as the other calls
// do (one that may not manage the number's WABA is error 200); a number it does not know is
// error 100/33, as Meta answers an unknown id; a number SetCoexistence did not declare (not
// onboarded from the app) is error 100; a sync_type other than the two is error 100 ("Param
// sync_type must be one of {…}"); a second start of the same sync of a number is error 100 too,
// its details saying it was requested already: Meta allows each once, and the code it answers
// a second start with is not documented.
//
// Meta then posts webhooks to the WABA's subscription; this server posts none (it knows no
// webhook URL): SyncPayloads returns, once a sync was started, the posts Meta would make, for a
// test to deliver with WebhookPost. For the contacts, one smb_app_state_sync change with the
// app's address book (none when it is empty). For the history, the business's chats of the 180 days before the start in
// three chunks, one per phase (0: the day before the start, 1: up to 90 days before, 2: up to
// 180; older messages are left out), each holding the threads with messages of its period
// (none for a period without messages, which Meta may rather skip), chunk_order 1 to 3 and
// progress 33, 66, 100; media messages are media_placeholder there, and those of the 14 days
// before the start have their media named by a history change of their own after the chunks.
// A business that declined (DeclineHistory) gets one history change with error 2593109.
//
// Where this departs from Meta: there is no 24-hour window after the onboarding; webhooks are
// not posted but returned; chunks are one per phase, however many messages (Meta splits large
// histories); contact changes made in the app after the sync (which Meta posts too) are not
// modelled.
//
// The shapes come from Meta's webhook references (smb_app_state_sync, history,
// smb_message_echoes) and its page on onboarding WhatsApp Business app users; the answer's
// request_id, the declined history's errors and the media follow-up from integrations that
// handle them, as Meta's pages found did not show them.

// The two values of sync_type.
const (
	SyncContacts = "smb_app_state_sync"
	SyncHistory  = "history"
)

// HistoryDeclinedCode is the error of a history webhook whose business declined to share its
// chat history.
const HistoryDeclinedCode = 2593109

// SyncContact is a contact of a WhatsApp Business app's address book.
type SyncContact struct {
	FullName, FirstName string
	// PhoneNumber is the contact's number, E.164 or digits (Meta writes digits).
	PhoneNumber string
	// Removed makes the contact's change a removal (action remove, without its names) rather
	// than an addition (add).
	Removed bool
}

// HistoryThreadSpec is a chat of the WhatsApp Business app with one contact.
type HistoryThreadSpec struct {
	// WaID is the contact: a number (E.164 or digits), or a business-scoped user id.
	WaID     string
	Messages []HistoryMessageSpec
}

// HistoryMessageSpec is a message of a chat of the app.
type HistoryMessageSpec struct {
	// FromBusiness: the business sent it from the app (to the contact); else the contact sent
	// it to the business.
	FromBusiness bool
	// ID is its wamid; SetCoexistence makes one up when empty.
	ID string
	// Type is the message type, text when empty: Text is a text's body, Fields the object of
	// another type ({"id": …, "mime_type": …} for a media message; SetCoexistence makes a
	// media id up when nil).
	Type   string
	Text   string
	Fields map[string]any
	// At is when it was sent; SetCoexistence stamps messages without one a minute apart, the
	// last a minute before the call.
	At time.Time
	// Status is its history_context.status (READ when empty).
	Status string
}

func (m HistoryMessageSpec) kind() string {
	if m.Type == "" {
		return "text"
	}
	return m.Type
}

// SyncRequest is a sync the server accepted (POST /{phone-number-id}/smb_app_data).
type SyncRequest struct {
	PhoneNumberID string
	// SyncType is smb_app_state_sync or history; RequestID the request_id answered.
	SyncType, RequestID string
	// Token is the access token it came with.
	Token    string
	Received time.Time
}

// coexApp is what the WhatsApp Business app of a number holds, and the syncs started.
type coexApp struct {
	contacts []SyncContact
	history  []HistoryThreadSpec
	declined bool
	started  map[string]time.Time
}

// coexState is a Server's coexistence state, guarded by the Server's mu.
type coexState struct {
	apps     map[string]*coexApp
	requests []SyncRequest
}

// coexistence is s's state, made on first use; its content is guarded by s.mu.
func (s *Server) coexistence() *coexState {
	s.coexOnce.Do(func() { s.coex = &coexState{apps: map[string]*coexApp{}} })
	return s.coex
}

// SetCoexistence declares phoneNumberID (a number AddPhoneNumber added) onboarded from the
// WhatsApp Business app, whose app holds contacts and the chats history: what its syncs give.
// Calling it again replaces what the app holds, forgets a DeclineHistory and lets each sync be
// started again.
func (s *Server) SetCoexistence(phoneNumberID string, contacts []SyncContact, history []HistoryThreadSpec) {
	st := s.coexistence()
	now := time.Now().Truncate(time.Second)
	threads := make([]HistoryThreadSpec, 0, len(history))
	for _, th := range history {
		msgs := make([]HistoryMessageSpec, len(th.Messages))
		for i, m := range th.Messages {
			if m.ID == "" {
				m.ID = wamid(hookDigits(th.WaID))
			}
			if m.At.IsZero() {
				m.At = now.Add(-time.Duration(len(th.Messages)-i) * time.Minute)
			}
			if m.Fields == nil && hookIsMedia(m.kind()) {
				m.Fields = map[string]any{"id": numericID(), "mime_type": defaultMime(m.kind())}
			}
			msgs[i] = m
		}
		threads = append(threads, HistoryThreadSpec{WaID: th.WaID, Messages: msgs})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.apps[phoneNumberID] = &coexApp{contacts: append([]SyncContact(nil), contacts...), history: threads,
		started: map[string]time.Time{}}
}

func defaultMime(kind string) string {
	switch kind {
	case "image":
		return "image/jpeg"
	case "video":
		return "video/mp4"
	case "audio":
		return "audio/ogg"
	case "sticker":
		return "image/webp"
	}
	return "application/pdf"
}

// DeclineHistory makes the business of phoneNumberID decline to share its chat history in the
// app: its history sync is accepted, and its webhook is error 2593109. A number SetCoexistence
// did not declare becomes a coexistence number with an empty app.
func (s *Server) DeclineHistory(phoneNumberID string) {
	st := s.coexistence()
	s.mu.Lock()
	defer s.mu.Unlock()
	app := st.apps[phoneNumberID]
	if app == nil {
		app = &coexApp{started: map[string]time.Time{}}
		st.apps[phoneNumberID] = app
	}
	app.declined = true
}

// SyncRequests are the syncs accepted so far, in order.
func (s *Server) SyncRequests() []SyncRequest {
	st := s.coexistence()
	if st == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SyncRequest(nil), st.requests...)
}

// SyncPayloads are the webhook posts Meta makes for the sync syncType (smb_app_state_sync or
// history) of phoneNumberID once it was started, in the order Meta would post them; nil before
// the start (or for a number without coexistence). The package comment of coexistence.go says
// what they hold; WebhookPost delivers them.
func (s *Server) SyncPayloads(phoneNumberID, syncType string) []Payload {
	st := s.coexistence()
	if st == nil {
		return nil
	}
	s.mu.Lock()
	app, phone := st.apps[phoneNumberID], s.phones[phoneNumberID]
	var (
		started  time.Time
		declined bool
		contacts []SyncContact
		history  []HistoryThreadSpec
	)
	if app != nil {
		started, declined, contacts, history = app.started[syncType], app.declined, app.contacts, app.history
	}
	s.mu.Unlock()
	if app == nil || phone == nil || started.IsZero() {
		return nil
	}
	switch syncType {
	case SyncContacts:
		if len(contacts) == 0 {
			return nil
		}
		return []Payload{hookContactSync(phone.WABAID, phone.ID, phone.Display, started, contacts)}
	case SyncHistory:
		if declined {
			return []Payload{hookHistoryDeclined(phone.WABAID, phone.ID, phone.Display)}
		}
		return historyPayloads(*phone, started, history)
	}
	return nil
}

// The periods of the history's phases, back from the start, and how far back media is named.
const (
	coexDay      = 24 * time.Hour
	historySpan  = 180 * coexDay
	historyMedia = 14 * coexDay
)

func historyPhase(age time.Duration) int {
	switch {
	case age < coexDay:
		return 0
	case age < 90*coexDay:
		return 1
	}
	return 2
}

// historyPayloads are the chunks of history, one per phase, then the media follow-ups.
func historyPayloads(phone PhoneNumber, started time.Time, history []HistoryThreadSpec) []Payload {
	var chunks [3][]HistoryThreadSpec
	var media []Payload
	for _, th := range history {
		var parts [3][]HistoryMessageSpec
		for _, m := range th.Messages {
			age := max(started.Sub(m.At), 0)
			if age > historySpan {
				continue
			}
			p := historyPhase(age)
			parts[p] = append(parts[p], m)
			if hookIsMedia(m.kind()) && age <= historyMedia {
				media = append(media, hookHistoryMedia(phone.WABAID, phone.ID, phone.Display, th.WaID, m))
			}
		}
		for p := range parts {
			if len(parts[p]) > 0 {
				chunks[p] = append(chunks[p], HistoryThreadSpec{WaID: th.WaID, Messages: parts[p]})
			}
		}
	}
	out := make([]Payload, 0, len(chunks)+len(media))
	for p, threads := range chunks {
		out = append(out, hookHistory(phone.WABAID, phone.ID, phone.Display, p, p+1, (p+1)*100/len(chunks), threads))
	}
	return append(out, media...)
}

// smbAppData starts a sync of the number's app data.
func (s *Server) smbAppData(w http.ResponseWriter, r *http.Request, token string, phone PhoneNumber) *apiError {
	if !s.mayManageWABA(token, phone.WABAID) {
		return permissionsError
	}
	params, e := graphParams(w, r)
	if e != nil {
		return e
	}
	syncType := params["sync_type"]
	switch {
	case params["messaging_product"] != "whatsapp":
		return badParam("The parameter messaging_product is required and must be whatsapp.")
	case syncType == "":
		return badParam("The parameter sync_type is required.")
	case syncType != SyncContacts && syncType != SyncHistory:
		return badParam("Param sync_type must be one of {%s, %s} - got %q.", SyncContacts, SyncHistory, syncType)
	}
	st := s.coexistence()
	s.mu.Lock()
	var app *coexApp
	if st != nil {
		app = st.apps[phone.ID]
	}
	switch {
	case app == nil:
		s.mu.Unlock()
		return badParam("Phone number %s was not onboarded from the WhatsApp Business app: it has no app data to synchronize.", phone.ID)
	case !app.started[syncType].IsZero():
		s.mu.Unlock()
		return badParam("The %s sync of phone number %s was requested already: it can be requested once; the business has to offboard and onboard again for another.", syncType, phone.ID)
	}
	now := time.Now()
	req := SyncRequest{PhoneNumberID: phone.ID, SyncType: syncType, RequestID: numericID(), Token: token, Received: now}
	app.started[syncType] = now
	st.requests = append(st.requests, req)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"messaging_product": "whatsapp", "request_id": req.RequestID})
	return nil
}

// graphParams are a Graph API call's parameters: the query's, then the body's (JSON, or a
// urlencoded or multipart form), the body's winning.
func graphParams(w http.ResponseWriter, r *http.Request) (map[string]string, *apiError) {
	out := map[string]string{}
	for k, v := range r.URL.Query() {
		out[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		_, body, e := readJSON(r)
		if e != nil {
			return nil, e
		}
		for k, v := range body {
			if sv, ok := v.(string); ok {
				out[k] = sv
			} else {
				out[k] = fmt.Sprint(v)
			}
		}
	case "application/x-www-form-urlencoded", "multipart/form-data":
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		var err error
		if ct == "multipart/form-data" {
			if err = r.ParseMultipartForm(maxBody); err == nil {
				defer func() { _ = r.MultipartForm.RemoveAll() }()
			}
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			return nil, badParam("the request body is not a readable form of at most %d bytes", maxBody)
		}
		for k, v := range r.PostForm {
			out[k] = v[0]
		}
	case "":
		// No body: the parameters are the query's.
	default:
		return nil, badParam("the request body is %s, not JSON or a form", ct)
	}
	return out, nil
}
