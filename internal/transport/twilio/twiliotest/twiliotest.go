// Package twiliotest runs a local Twilio REST API for tests: the Messages, Calls and Account
// resources of /2010-04-01 as Twilio's API reference documents them (basic auth, form-encoded
// requests, JSON answers, Twilio's error bodies and codes), and the status callbacks and inbound
// message webhooks Twilio posts, signed with X-Twilio-Signature as Twilio signs them.
//
// Calls can be fetched and updated (hung up, canceled, redirected to new TwiML). A call whose
// TwiML holds <Connect><ConversationRelay> is played by a scripted caller (Script, CallScript):
// the peer opens the relay's WebSocket with a signed handshake, sends setup, the caller's
// prompts, DTMF and interruptions, records the application's answers with their timing
// (Relays, WaitRelay), posts the <Connect> action when the session ends and runs the TwiML it
// answers. PlaceInboundCall does the same for a call to a number's voice webhook.
//
// Numbers can be searched, bought and released, and a country's regulations read (buy.go, which
// lists the numbers and regulations the peer starts with).
//
// It only ever posts and connects to loopback addresses.
package twiliotest

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Credentials the server knows; any others are refused with Twilio's 401 (code 20003).
const (
	AccountSID = "AC0123456789abcdef0123456789abcdef"
	AuthToken  = "5f2b7c0e9d4a1b3c8e6f0a2d4c6b8e1f"
)

// FriendlyName is the account's name in the Account resource.
const FriendlyName = "Switchboard Test"

// PoolNumber is the number a Messaging Service sends from in the peer (the From of its callbacks).
const PoolNumber = "+15017122661"

// DefaultCallbackDelay is the time before each status callback.
const DefaultCallbackDelay = 50 * time.Millisecond

// StormRetryAfter is the Retry-After of a 429 answered during a Storm.
const StormRetryAfter = 2 * time.Second

const apiVersion = "2010-04-01"

// Message is a message the server accepted.
type Message struct {
	SID                 string
	To, From            string
	MessagingServiceSID string
	Body                string
	MediaURLs           []string
	StatusCallback      string
	// Received is when the server accepted it.
	Received time.Time
	// Status is the message's status at Twilio now (queued, sent, delivered, undelivered), as
	// the Message resource shows it, whether or not its callback got through; ErrorCode is set
	// once undelivered.
	Status    string
	ErrorCode int
}

// Call is a call the server accepted (or, Direction inbound, placed with PlaceInboundCall).
type Call struct {
	SID                  string
	To, From             string
	Twiml                string
	StatusCallback       string
	StatusCallbackEvents []string
	// Direction is outbound-api, or inbound.
	Direction string
	// TimeLimit is in seconds; 0 when not given.
	TimeLimit int
	// MachineDetection is Enable or DetectMessageEnd; "" when not asked for.
	MachineDetection       string
	AsyncAmd               bool
	AsyncAmdStatusCallback string
	// RelayURL and RelayAction are the <ConversationRelay url> and <Connect action> of Twiml.
	RelayURL, RelayAction string
	// Redirects are the TwiML the call was updated with, in order.
	Redirects []string
	// Status is the call's status now (queued, ringing, in-progress, completed…).
	Status string
}

// Media is one media item of an inbound MMS.
type Media struct {
	URL, ContentType string
}

// Callback is a status callback the server posted (or refused to post: Err).
type Callback struct {
	URL    string
	Params map[string][]string
	// Status is what the receiver answered; 0 when nothing answered.
	Status int
	Err    error
}

type refusal struct{ code, status int }

// Server is a running peer.
type Server struct {
	// URL is the base URL to configure the transport with.
	URL string

	srv      *httptest.Server
	listener *switchable // Down and Up close and open its port
	hc       *http.Client
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// compliance is the Regulatory Compliance state (bundles.go), made on first use.
	compliance *compliance
	rcOnce     sync.Once

	mu            sync.Mutex
	closed        bool
	delay         time.Duration
	accountStatus string
	fails         map[string]refusal
	stormN        int
	stormStatus   int
	deliveryFails map[string]int
	callOutcomes  map[string]string
	answeredBy    map[string]string
	scripts       map[string]CallScript
	relayToken    string // signs relay handshakes; "" is AuthToken
	live          map[string]*liveCall
	relays        []*Relay // in the order calls got one
	messages      []Message
	calls         []Call
	callbacks     []Callback
	lineTypes     map[string]LineType
	lookups       int
	fetches       int
	reg           registry // A2P 10DLC registration resources (registration.go)
	shop          shop     // numbers for sale (buy.go)
}

// NewServer starts a peer on loopback; it and its callbacks stop when t ends.
func NewServer(t testing.TB) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		ctx: ctx, cancel: cancel, hc: loopbackClient(),
		delay: DefaultCallbackDelay, accountStatus: "active",
		fails: map[string]refusal{}, deliveryFails: map[string]int{}, callOutcomes: map[string]string{}, lineTypes: map[string]LineType{},
		answeredBy: map[string]string{}, scripts: map[string]CallScript{}, live: map[string]*liveCall{},
		shop: defaultShop(),
	}
	l, err := newSwitchable()
	if err != nil {
		t.Fatalf("twiliotest: listen: %v", err)
	}
	s.listener = l
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.srv.Close()
	s.hc.CloseIdleConnections()
}

// Fail makes every send to to (message or call) answer httpStatus with Twilio's error twilioCode.
func (s *Server) Fail(to string, twilioCode, httpStatus int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[to] = refusal{twilioCode, httpStatus}
}

// Storm makes the next n requests answer status (500, 503 or 429; a 429 with Retry-After).
func (s *Server) Storm(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stormN, s.stormStatus = n, status
}

// FailDelivery makes messages to to end undelivered with errorCode (30003…) in their callbacks.
func (s *Server) FailDelivery(to string, errorCode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deliveryFails[to] = errorCode
}

// CallOutcome makes calls to to end busy, no-answer, failed or canceled instead of answered.
func (s *Server) CallOutcome(to, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callOutcomes[to] = status
}

// SetCallbackDelay sets the time before each status callback.
func (s *Server) SetCallbackDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// SetAccountStatus sets the status the Account resource reports (active, suspended, closed).
func (s *Server) SetAccountStatus(status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accountStatus = status
}

// Messages are the messages accepted so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Calls are the calls accepted so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		c.Redirects = append([]string(nil), c.Redirects...)
		out[i] = c
	}
	return out
}

// Callbacks are the status callbacks posted (or refused) so far, in order.
func (s *Server) Callbacks() []Callback {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Callback(nil), s.callbacks...)
}

// Sign is X-Twilio-Signature for a request to fullURL with the POST parameters params, as
// Twilio computes it: the URL, then each parameter's name and value in the order of the names
// (values of one name in order), HMAC-SHA1 with the auth token as key, in base64.
func Sign(authToken, fullURL string, params map[string][]string) string {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(fullURL)
	for _, k := range names {
		vs := append([]string(nil), params[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(AccountSID)) != 1 ||
		subtle.ConstantTimeCompare([]byte(pass), []byte(AuthToken)) != 1 {
		w.Header().Set("WWW-Authenticate", `Basic realm="Twilio API"`)
		writeError(w, http.StatusUnauthorized, 20003, "Authenticate")
		return
	}
	s.mu.Lock()
	storm := 0
	if s.stormN > 0 {
		s.stormN--
		storm = s.stormStatus
	}
	s.mu.Unlock()
	if storm != 0 {
		switch {
		case storm == http.StatusTooManyRequests:
			w.Header().Set("Retry-After", strconv.Itoa(int(StormRetryAfter/time.Second)))
			writeError(w, storm, 20429, "Too Many Requests")
		default:
			writeError(w, storm, 20000+storm, http.StatusText(storm))
		}
		return
	}
	if s.serveRegistration(w, r) {
		return
	}

	if number, ok := strings.CutPrefix(r.URL.Path, "/v2/PhoneNumbers/"); ok {
		s.lookup(w, r, number)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+apiVersion+"/Accounts/")
	sid, resource, _ := strings.Cut(rest, "/")
	if !ok || (sid != AccountSID && sid != AccountSID+".json") {
		notFound(w, r)
		return
	}
	switch {
	case sid == AccountSID+".json" && resource == "":
		if r.Method != http.MethodGet {
			methodNotAllowed(w)
			return
		}
		s.account(w)
	case resource == "Messages.json":
		if r.Method != http.MethodPost {
			methodNotAllowed(w)
			return
		}
		s.createMessage(w, r)
	case strings.HasPrefix(resource, "Messages/") && strings.HasSuffix(resource, ".json") && strings.Count(resource, "/") == 1:
		if r.Method != http.MethodGet {
			methodNotAllowed(w)
			return
		}
		s.fetchMessage(w, strings.TrimSuffix(strings.TrimPrefix(resource, "Messages/"), ".json"))
	case resource == "Calls.json":
		if r.Method != http.MethodPost {
			methodNotAllowed(w)
			return
		}
		s.createCall(w, r)
	case strings.HasPrefix(resource, "Calls/") && strings.HasSuffix(resource, ".json") && strings.Count(resource, "/") == 1:
		callSID := strings.TrimSuffix(strings.TrimPrefix(resource, "Calls/"), ".json")
		switch r.Method {
		case http.MethodGet:
			s.fetchCall(w, r, callSID)
		case http.MethodPost:
			s.updateCall(w, r, callSID)
		default:
			methodNotAllowed(w)
		}
	default:
		notFound(w, r)
	}
}

var (
	e164         = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	shortCode    = regexp.MustCompile(`^[0-9]{5,6}$`)
	alphanumeric = regexp.MustCompile(`^[A-Za-z0-9 ]{1,11}$`)
	hasLetter    = regexp.MustCompile(`[A-Za-z]`)
	serviceSID   = regexp.MustCompile(`^MG[0-9a-fA-F]{32}$`)
)

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, 20001, "Invalid form body")
		return
	}
	f := r.PostForm
	to, from, service, body := f.Get("To"), f.Get("From"), f.Get("MessagingServiceSid"), f.Get("Body")
	media := f["MediaUrl"]
	alpha := from != "" && !e164.MatchString(from) && !shortCode.MatchString(from)
	switch {
	case to == "":
		writeError(w, http.StatusBadRequest, 21604, "A 'To' phone number is required.")
	case from == "" && service == "":
		writeError(w, http.StatusBadRequest, 21603, "A 'From' phone number is required.")
	case body == "" && len(media) == 0:
		writeError(w, http.StatusBadRequest, 21602, "Message body is required.")
	case !e164.MatchString(to):
		writeError(w, http.StatusBadRequest, 21211, fmt.Sprintf("The 'To' number %s is not a valid phone number.", to))
	case service != "" && !serviceSID.MatchString(service):
		writeError(w, http.StatusBadRequest, 21701, fmt.Sprintf("The Messaging Service Sid %s is invalid.", service))
	case alpha && (!alphanumeric.MatchString(from) || !hasLetter.MatchString(from)):
		writeError(w, http.StatusBadRequest, 21212, fmt.Sprintf("The 'From' number %s is not a valid phone number, shortcode, or alphanumeric sender ID.", from))
	case alpha && strings.HasPrefix(to, "+1"):
		// Alphanumeric sender ids do not reach the US and Canada.
		writeError(w, http.StatusBadRequest, 21612, fmt.Sprintf("The 'To' phone number: %s, is not currently reachable using the 'From' phone number: %s via SMS.", to, from))
	case len([]rune(body)) > 1600:
		writeError(w, http.StatusBadRequest, 21617, "The concatenated message body exceeds the 1600 character limit.")
	case len(media) > 10:
		writeError(w, http.StatusBadRequest, 21623, "The number of media files exceeds the limit of 10.")
	default:
		if rf, ok := s.refusal(to); ok {
			writeError(w, rf.status, rf.code, fmt.Sprintf("Twilio error %d (set by twiliotest.Fail).", rf.code))
			return
		}
		s.acceptMessage(w, Message{SID: sid("SM"), To: to, From: from, MessagingServiceSID: service,
			Body: body, MediaURLs: media, StatusCallback: f.Get("StatusCallback")})
	}
}

func (s *Server) refusal(to string) (refusal, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rf, ok := s.fails[to]
	return rf, ok
}

func (s *Server) acceptMessage(w http.ResponseWriter, m Message) {
	if len(m.MediaURLs) > 0 {
		m.SID = "MM" + m.SID[2:]
	}
	m.Received = time.Now()
	m.Status = "queued"
	if m.MessagingServiceSID != "" && m.From == "" {
		m.Status = "accepted"
	}
	s.mu.Lock()
	s.messages = append(s.messages, m)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, messageResource(m))
	// The message moves on at Twilio whether or not anyone hears of it.
	s.spawn(func() { s.messageCallbacks(m) })
}

// messageResource is Twilio's Message resource of m as it stands.
func messageResource(m Message) map[string]any {
	now := time.Now().UTC().Format(time.RFC1123Z)
	uri := fmt.Sprintf("/%s/Accounts/%s/Messages/%s", apiVersion, AccountSID, m.SID)
	from, service, errorCode := any(m.From), any(nil), any(nil)
	if m.MessagingServiceSID != "" {
		service = m.MessagingServiceSID
		if m.From == "" {
			from = nil
		}
	}
	if m.ErrorCode != 0 {
		errorCode = m.ErrorCode
	}
	return map[string]any{
		"account_sid": AccountSID, "api_version": apiVersion, "body": m.Body,
		"date_created": m.Received.UTC().Format(time.RFC1123Z), "date_updated": now, "date_sent": nil, "direction": "outbound-api",
		"error_code": errorCode, "error_message": nil, "from": from, "messaging_service_sid": service,
		"num_media": strconv.Itoa(len(m.MediaURLs)), "num_segments": segments(m.Body),
		"price": nil, "price_unit": "USD", "sid": m.SID, "status": m.Status, "to": m.To,
		"uri": uri + ".json", "subresource_uris": map[string]string{"media": uri + "/Media.json"},
	}
}

// fetchMessage serves GET Messages/{Sid}.json: the message as it stands, or Twilio's 404
// (code 20404).
func (s *Server) fetchMessage(w http.ResponseWriter, sid string) {
	s.mu.Lock()
	s.fetches++
	i := slices.IndexFunc(s.messages, func(m Message) bool { return m.SID == sid })
	var m Message
	if i >= 0 {
		m = s.messages[i]
	}
	s.mu.Unlock()
	if i < 0 {
		writeError(w, http.StatusNotFound, 20404, fmt.Sprintf("The requested resource /%s/Accounts/%s/Messages/%s.json was not found", apiVersion, AccountSID, sid))
		return
	}
	writeJSON(w, http.StatusOK, messageResource(m))
}

// Fetches is how many times the Message resource was read.
func (s *Server) Fetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// setMessageStatus moves the message sid to status at Twilio.
func (s *Server) setMessageStatus(sid, status string, errorCode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.messages {
		if s.messages[i].SID == sid {
			s.messages[i].Status, s.messages[i].ErrorCode = status, errorCode
		}
	}
}

// segments is how many SMS segments body takes: 160 (153 when split) GSM characters, or 70 (67) UCS-2.
func segments(body string) string {
	n, one, many := len([]rune(body)), 160, 153
	for _, c := range body {
		if c > 127 {
			one, many = 70, 67
			break
		}
	}
	switch {
	case n == 0:
		return "0"
	case n <= one:
		return "1"
	}
	return strconv.Itoa((n + many - 1) / many)
}

func (s *Server) createCall(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, 20001, "Invalid form body")
		return
	}
	f := r.PostForm
	to, from, twiml := f.Get("To"), f.Get("From"), f.Get("Twiml")
	switch {
	case to == "":
		writeError(w, http.StatusBadRequest, 21201, "No 'To' number is specified")
	case from == "":
		writeError(w, http.StatusBadRequest, 21213, "No 'From' number is specified")
	case twiml == "" && f.Get("Url") == "" && f.Get("ApplicationSid") == "":
		writeError(w, http.StatusBadRequest, 21205, "Url parameter is required.")
	case !e164.MatchString(to):
		writeError(w, http.StatusBadRequest, 21211, fmt.Sprintf("The 'To' number %s is not a valid phone number.", to))
	case !e164.MatchString(from):
		writeError(w, http.StatusBadRequest, 21212, fmt.Sprintf("The 'From' number %s is not a valid phone number.", from))
	default:
		if rf, ok := s.refusal(to); ok {
			writeError(w, rf.status, rf.code, fmt.Sprintf("Twilio error %d (set by twiliotest.Fail).", rf.code))
			return
		}
		c := Call{SID: sid("CA"), To: to, From: from, Twiml: twiml, Direction: "outbound-api", Status: "queued",
			StatusCallback: f.Get("StatusCallback"), StatusCallbackEvents: f["StatusCallbackEvent"],
			MachineDetection: f.Get("MachineDetection"), AsyncAmd: f.Get("AsyncAmd") == "true",
			AsyncAmdStatusCallback: f.Get("AsyncAmdStatusCallback")}
		if v := f.Get("TimeLimit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				writeError(w, http.StatusBadRequest, 20001, fmt.Sprintf("TimeLimit %q is not a positive number of seconds.", v))
				return
			}
			c.TimeLimit = n
		}
		s.mu.Lock()
		sc := s.scripts[to]
		s.mu.Unlock()
		lc := s.addCall(c, sc)
		s.mu.Lock()
		body := s.callJSON(lc)
		s.mu.Unlock()
		writeJSON(w, http.StatusCreated, body)
		s.startCall(lc)
	}
}

func (s *Server) account(w http.ResponseWriter) {
	s.mu.Lock()
	status := s.accountStatus
	s.mu.Unlock()
	uri := fmt.Sprintf("/%s/Accounts/%s", apiVersion, AccountSID)
	created := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).Format(time.RFC1123Z)
	writeJSON(w, http.StatusOK, map[string]any{
		// Twilio returns the auth token in the Account resource.
		"auth_token": AuthToken, "date_created": created, "date_updated": created,
		"friendly_name": FriendlyName, "owner_account_sid": AccountSID, "sid": AccountSID,
		"status": status, "type": "Full", "uri": uri + ".json",
		"subresource_uris": map[string]string{
			"calls": uri + "/Calls.json", "messages": uri + "/Messages.json",
			"incoming_phone_numbers": uri + "/IncomingPhoneNumbers.json",
		},
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, 20404, fmt.Sprintf("The requested resource %s was not found", r.URL.Path))
}

func methodNotAllowed(w http.ResponseWriter) {
	writeError(w, http.StatusMethodNotAllowed, 20004, "Method not allowed")
}

// writeError writes Twilio's error body.
func writeError(w http.ResponseWriter, status, code int, message string) {
	writeJSON(w, status, map[string]any{
		"code": code, "message": message, "status": status,
		"more_info": fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code),
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sid is a new resource sid: prefix and 32 hexadecimal digits.
func sid(prefix string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
