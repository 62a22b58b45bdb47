// Package metatest runs a local Graph API for tests, on 127.0.0.1: the parts of Meta's API the
// meta transport calls, as Meta's reference documents them (graph.go; the Resumable Upload API
// and profile pictures in uploads.go). It knows one system-user
// token (Token; ExpiredToken is refused with error 190), the phone numbers, WhatsApp Business
// Accounts and Pages a test adds, their business profiles, templates and media; it validates
// message bodies the way Meta does for the fields Switchboard sends (error 100 with
// error_data.details for a missing or malformed field, 131009 for too many buttons or rows,
// 132000/132001/132015/132016 for templates), records every accepted message (Messages, Wait,
// OnAccepted) and answers ids shaped like Meta's (wamid.HBgL… for WhatsApp, m_… for the Send
// API).
//
// It also answers what a client's onboarding meets (oauth.go): Meta's OAuth dialog
// (GET /{v}/dialog/oauth) for Facebook Login (scope) and WhatsApp Embedded Signup (config_id),
// signed in as the DialogUser SetDialogUser sets, with stable selectors for a browser; a
// stand-in of the JavaScript SDK (SDKPath) whose FB.login opens the dialog in a popup; the code
// exchange (/oauth/access_token), debug_token, /me/permissions and /me/accounts of the user
// token, the subscribed_apps of Pages and WABAs, /{waba-id}/phone_numbers and
// /{phone-number-id}/register (Exchanged, PageSubscriptions, WABASubscribed, Registered).
//
// Where it departs from Meta: a send to a recipient whose window is closed (Window) is refused
// at once with 131047 (Meta accepts it and reports 131047 in a failed status webhook); it
// fetches no media link; template review is a call (SetTemplateStatus) rather than a wait; Graph
// field expansion and most fields Switchboard does not read are left out.
//
// And for onboarding: the dialog, sdk.js and the Graph API share the server's origin (Meta's
// are www.facebook.com, connect.facebook.net and graph.facebook.com), so Embedded Signup's
// session info comes from it rather than from https://www.facebook.com; the user is signed in
// already and Embedded Signup is one page (choose a phone number) that grants
// whatsapp_business_management and whatsapp_business_messaging whatever config_id names; any
// http(s) redirect_uri is accepted (there are no app settings); only response_type=code; codes
// do not expire (Meta's last 10 minutes) and one tried with another redirect_uri stays usable;
// sdk.js gets the login result as a message of metatest's own; debug_token takes only the app
// token; user and Page tokens do not expire, and are bound to their objects only where
// onboarding needs it (subscribed_apps, phone_numbers, register); other calls take any known
// token.
//
// Webhooks are not built here: OnAccepted is the hook a webhook builder uses to follow each
// accepted message.
package metatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Credentials the server knows.
const (
	// Token is the system user's access token; AddToken adds others (a sender's, a Page's).
	Token = "EAAMetaTestSystemUserToken0000000000000000ZDZD"
	// ExpiredToken is refused as an expired token: HTTP 401, code 190, subcode 463.
	ExpiredToken = "EAAMetaTestExpiredToken00000000000000000000ZDZD"
	// AppID and AppSecret are the app's, for the webhooks signed with the secret.
	AppID     = "1234567890123456"
	AppSecret = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
)

// UserID and UserName are who Token belongs to (GET /me).
const (
	UserID   = "100000000000042"
	UserName = "Switchboard System User"
)

// VerifiedName is the verified name of every phone number added.
const VerifiedName = "Switchboard Test"

// DefaultPageSize is how many templates a page of GET message_templates holds unless the
// request's limit or Options.PageSize says fewer.
const DefaultPageSize = 25

// Options configure a Server.
type Options struct {
	// Tokens are more access tokens the server accepts, each as Token.
	Tokens []string
	// RetryAfter, when set, is the Retry-After of a 429 that FailNext answers.
	RetryAfter time.Duration
	// PageSize caps a page of templates (DefaultPageSize when zero).
	PageSize int
}

// Message is a message the server accepted.
type Message struct {
	// ID is the id answered: a wamid for WhatsApp, an m_… id for the Send API (empty for a
	// sender action, which Meta answers without one).
	ID string
	// PhoneNumberID (with its number and WABA) is the WhatsApp sender; PageID the Page of a
	// Send API message (Messenger or Instagram). One of the two is set.
	PhoneNumberID      string
	DisplayPhoneNumber string
	WABAID             string
	PageID             string
	// To is the recipient: WhatsApp's to (or recipient, a business-scoped user id), the Send
	// API's recipient.id.
	To string
	// Type is WhatsApp's type (text, image, interactive, template…); for the Send API text,
	// the attachment's type, or the sender action (react, unreact…).
	Type string
	// Body is the request body decoded, Raw as it came.
	Body map[string]any
	Raw  []byte
	// Token is the access token it came with.
	Token    string
	Received time.Time
}

// Read is a read receipt the server accepted (POST /{phone-number-id}/messages, status read).
type Read struct {
	PhoneNumberID, MessageID string
	Typing                   bool
}

// PhoneNumber is a business phone number the server knows.
type PhoneNumber struct {
	ID, Display, WABAID, VerifiedName string
}

// Template is a message template of a WABA.
type Template struct {
	ID, Name, Language, Status, Category, RejectedReason string
	// Components are the components as created (nil for one SetTemplateStatus made up).
	Components []any
}

type media struct {
	mime string
	data []byte
}

type waba struct {
	templates []*Template
	fundingID string
}

// failure is what FailNext answers.
type failure struct {
	n                     int
	status, code, subcode int
	message               string
}

// Server is a running Graph API. Its URL is the base URL to configure the transport with;
// Token, ExpiredToken, AppID and AppSecret are the package's constants.
type Server struct {
	URL                                   string
	Token, ExpiredToken, AppID, AppSecret string

	srv  *httptest.Server
	opts Options
	// coex is what coexistence numbers' apps hold (coexistence.go), guarded by mu.
	coex     *coexState
	coexOnce sync.Once
	wg       sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	tokens   map[string]bool
	phones   map[string]*PhoneNumber
	pages    map[string]string
	wabas    map[string]*waba
	profiles map[string]map[string]any
	media    map[string]media
	sessions map[string]*uploadSession // Resumable Upload API sessions, by id
	handles  map[string]media          // uploaded files, by handle
	pictures map[string]media          // profile pictures, by path
	shut     map[string]bool           // recipients whose window is closed
	fail     failure
	// failMessage fails message sends alone (FailNextMessage).
	failMessage failure
	messages    []Message
	reads       []Read
	changed     chan struct{}
	hooks       []func(Message)
	oauth       oauthState // the onboarding endpoints' (oauth.go)
}

// New starts a server on 127.0.0.1. Close stops it.
func New(opts Options) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("metatest: listen: %w", err)
	}
	s := &Server{
		Token: Token, ExpiredToken: ExpiredToken, AppID: AppID, AppSecret: AppSecret,
		opts: opts, tokens: map[string]bool{Token: true}, phones: map[string]*PhoneNumber{},
		pages: map[string]string{}, wabas: map[string]*waba{}, profiles: map[string]map[string]any{},
		media: map[string]media{}, sessions: map[string]*uploadSession{}, handles: map[string]media{},
		pictures: map[string]media{}, shut: map[string]bool{}, changed: make(chan struct{}), oauth: newOAuthState(),
	}
	for _, tok := range opts.Tokens {
		s.tokens[tok] = true
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	_ = s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

// NewServer starts a server that stops when t ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, then waits for the OnAccepted functions running. It may be called
// more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.srv.Close()
	s.wg.Wait()
}

// AddToken makes the server accept token as it accepts Token.
func (s *Server) AddToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = true
}

// AddPhoneNumber adds a business phone number: its id, its display number ("+1 555-0100") and
// its WhatsApp Business Account, which is created when new.
func (s *Server) AddPhoneNumber(id, display, wabaID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phones[id] = &PhoneNumber{ID: id, Display: display, WABAID: wabaID, VerifiedName: VerifiedName}
	if s.wabas[wabaID] == nil {
		s.wabas[wabaID] = &waba{}
	}
	if s.profiles[id] == nil {
		s.profiles[id] = map[string]any{}
	}
}

// Phone returns the phone number of id.
func (s *Server) Phone(id string) (PhoneNumber, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.phones[id]
	if !ok {
		return PhoneNumber{}, false
	}
	return *p, true
}

// AddPage adds a Facebook Page (which also stands for the Instagram account linked to it).
func (s *Server) AddPage(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[id] = name
}

// AddMedia stores a media file under id, as an inbound message's media is stored.
func (s *Server) AddMedia(id, mimeType string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.media[id] = media{mime: mimeType, data: append([]byte(nil), data...)}
}

// Media returns the media file of id (an uploaded one, say).
func (s *Server) Media(id string) (data []byte, mimeType string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.media[id]
	return append([]byte(nil), m.data...), m.mime, ok
}

// SetFunding sets the WABA's primary funding source (its payment method); "" removes it.
func (s *Server) SetFunding(wabaID, fundingID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wabas[wabaID] == nil {
		s.wabas[wabaID] = &waba{}
	}
	s.wabas[wabaID].fundingID = fundingID
}

// Profile returns the business profile of a phone number, in Meta's field names.
func (s *Server) Profile(phoneNumberID string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]any{}
	for k, v := range s.profiles[phoneNumberID] {
		out[k] = v
	}
	return out
}

// Templates returns the templates of a WABA, in the order they were made.
func (s *Server) Templates(wabaID string) []Template {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Template
	if w := s.wabas[wabaID]; w != nil {
		for _, t := range w.templates {
			out = append(out, *t)
		}
	}
	return out
}

// SetTemplateStatus sets the status (APPROVED, REJECTED, PAUSED, DISABLED…) and, when not
// empty, the category of a WABA's template, as Meta's review does; a template the WABA does
// not have is made up, without components.
func (s *Server) SetTemplateStatus(wabaID, name, language, status, category string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wabas[wabaID] == nil {
		s.wabas[wabaID] = &waba{}
	}
	w := s.wabas[wabaID]
	t := w.template(name, language)
	if t == nil {
		t = &Template{ID: numericID(), Name: name, Language: language}
		w.templates = append(w.templates, t)
	}
	t.Status = status
	if category != "" {
		t.Category = strings.ToUpper(category)
	}
}

func (w *waba) template(name, language string) *Template {
	for _, t := range w.templates {
		if t.Name == name && t.Language == language {
			return t
		}
	}
	return nil
}

// FailNext makes the next n requests (after their token is checked) answer httpStatus with
// Meta's error code, subcode (0: none) and message. A 429 carries Options.RetryAfter.
func (s *Server) FailNext(n, httpStatus, code, subcode int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = failure{n: n, status: httpStatus, code: code, subcode: subcode, message: message}
}

// FailNextMessage is FailNext for the next n message sends only (POST …/messages of a phone
// number or a Page): the other requests the installation makes meanwhile (a Provider's check,
// a template sync) are answered as usual, so a test's failure reaches the send it is meant for.
func (s *Server) FailNextMessage(n, httpStatus, code, subcode int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failMessage = failure{n: n, status: httpStatus, code: code, subcode: subcode, message: message}
}

func (s *Server) takeFailure() (failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail.n <= 0 {
		return failure{}, false
	}
	s.fail.n--
	return s.fail, true
}

func (s *Server) takeMessageFailure() (failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failMessage.n <= 0 {
		return failure{}, false
	}
	s.failMessage.n--
	return s.failMessage, true
}

// Window opens or closes the 24-hour window of a recipient (a WhatsApp number, with or without
// +, a business-scoped user id, a PSID or IGSID). Windows are open unless closed. Outside it
// a WhatsApp message other than a template fails with 131047, a Send API message without a
// message tag with 10/2018278.
func (s *Server) Window(recipient string, open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shut[strings.TrimPrefix(recipient, "+")] = !open
}

func (s *Server) windowClosed(recipient string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shut[strings.TrimPrefix(recipient, "+")]
}

// Messages are the messages accepted so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Reads are the read receipts accepted so far, in order.
func (s *Server) Reads() []Read {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Read(nil), s.reads...)
}

// Wait returns the messages accepted once there are at least n, or ctx's error.
func (s *Server) Wait(ctx context.Context, n int) ([]Message, error) {
	for {
		s.mu.Lock()
		if len(s.messages) >= n {
			out := append([]Message(nil), s.messages...)
			s.mu.Unlock()
			return out, nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("metatest: wait for %d messages: %w", n, ctx.Err())
		case <-changed:
		}
	}
}

// OnAccepted registers f, called with each message accepted from now on, in a goroutine of its
// own; Close waits for the calls running.
func (s *Server) OnAccepted(f func(Message)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, f)
}

// accept records m and runs the OnAccepted functions.
func (s *Server) accept(m Message) {
	m.Received = time.Now()
	s.mu.Lock()
	s.messages = append(s.messages, m)
	close(s.changed)
	s.changed = make(chan struct{})
	var run []func(Message)
	if !s.closed {
		run = append(run, s.hooks...)
		s.wg.Add(len(run))
	}
	s.mu.Unlock()
	for _, f := range run {
		go func() {
			defer s.wg.Done()
			f(m)
		}()
	}
}

// wamid is a WhatsApp message id as Meta makes them: "wamid." and the base64 of a small
// structure holding the recipient and a random id (HBgL… for an 11-digit number).
func wamid(to string) string {
	b := []byte{0x1C, 0x18, byte(len(to))}
	b = append(b, to...)
	b = append(b, 0x15, 0x02, 0x00, 0x11, 0x18, 0x12)
	b = append(b, strings.ToUpper(randomHex(9))...)
	b = append(b, 0x00)
	return "wamid." + base64.StdEncoding.EncodeToString(b)
}

// mid is a Send API message id: "m_" and random url-safe base64.
func mid() string {
	b := make([]byte, 48)
	_, _ = rand.Read(b)
	return "m_" + base64.RawURLEncoding.EncodeToString(b)
}

// numericID is a Graph object id: 15 or 16 digits.
func numericID() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(9e15))
	return n.Add(n, big.NewInt(1e15)).String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
