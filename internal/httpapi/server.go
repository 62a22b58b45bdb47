// Package httpapi serves Switchboard's REST API (/v1, /v2) and the health endpoints. Handlers parse
// the request, call one service method and render the answer; errors are rendered by writeError.
// Authentication, request-rate limits and permissions are applied from one route table (routes.go).
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/switchboard-io/switchboard/internal/account"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/broadcast"
	"github.com/switchboard-io/switchboard/internal/call"
	"github.com/switchboard-io/switchboard/internal/contact"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
	"github.com/switchboard-io/switchboard/internal/emaildomain"
	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/numbers"
	"github.com/switchboard-io/switchboard/internal/phonecheck"
	"github.com/switchboard-io/switchboard/internal/projectwebhook"
	"github.com/switchboard-io/switchboard/internal/ratelimit"
	"github.com/switchboard-io/switchboard/internal/regulatory"
	"github.com/switchboard-io/switchboard/internal/sender"
	"github.com/switchboard-io/switchboard/internal/template"
	"github.com/switchboard-io/switchboard/internal/tendlc"
	"github.com/switchboard-io/switchboard/internal/unsubscribe"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
	"github.com/switchboard-io/switchboard/internal/whatsappsync"
)

// KeyUsage records that a key was used; it must not block the request.
type KeyUsage interface {
	Record(keyID string, at time.Time)
}

// Authenticator turns a bearer token into a key.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (apikey.Key, error)
}

// Server is the API's HTTP server.
type Server struct {
	auth      Authenticator
	accounts  *account.Service
	senders   *sender.Service
	messages  *message.Service
	contacts  *contact.Service
	domains   *emaildomain.Service
	templates *template.Service
	tenDLC    *tendlc.Service
	// broadcasts keeps the projects' broadcasts (v2: campaigns).
	broadcasts *broadcast.Service
	agents     *agent.Service
	// knowledge keeps agents' knowledge bases.
	knowledge *knowledge.Service
	// calls holds voice calls.
	calls *call.Service
	// numbers sells phone numbers.
	numbers *numbers.Service
	// regulatory keeps the addresses and documents numbers need.
	regulatory *regulatory.Service
	// urls verifies the URLs projects send.
	urls *urlcheck.Service
	// whatsAppSync syncs coexistence numbers' WhatsApp Business app data.
	whatsAppSync *whatsappsync.Service
	functions    *functions.Service
	functionHTTP http.Handler
	functionPush http.Handler
	// publicURL is where clients reach the API (upload URLs point there); "" the request's host.
	publicURL string
	// voices are the agents' voices (nil: the shipped catalogue).
	voices *agent.Voicebook
	// emailChecks keeps the suppression list and inspects addresses; disposable is the list of
	// throwaway domains introspection flags.
	emailChecks *emailcheck.Checker
	disposable  emailcheck.Disposable
	// projectHooks manages the v2 project webhook.
	projectHooks *projectwebhook.Service
	// deliveries is the webhook delivery log.
	deliveries *delivery.Log
	// invitations keeps the projects' invitations.
	invitations *invitation.Service
	limiter     ratelimit.Limiter
	reader      client.Reader
	usage       KeyUsage
	listener    net.Listener
	checks      map[string]healthz.Checker
	log         logr.Logger
	now         func() time.Time
	cursors     *cursorCodec
	docs        map[string][]byte
	callbacks   http.Handler
	pages       http.Handler
	unsubscribe http.Handler
	balances    *billing.Service
	phones      *phonecheck.Service
	// console is the operator console (nil: not served).
	console http.Handler
	sends   *sendMetrics
	// inFlight bounds the API requests worked on at once (nil: unbounded).
	inFlight *inFlight
}

// Options are what the server needs.
type Options struct {
	Auth     Authenticator
	Accounts *account.Service
	Senders  *sender.Service
	Messages *message.Service
	Contacts *contact.Service
	// Balances answers for projects' prepaid balances.
	Balances *billing.Service
	// Phones introspects phone numbers.
	Phones *phonecheck.Service
	// EmailDomains manages the projects' email domains.
	EmailDomains *emaildomain.Service
	// Templates manages the projects' message templates.
	Templates *template.Service
	// TenDLC keeps the projects' 10DLC registrations.
	TenDLC *tendlc.Service
	// Broadcasts keeps the projects' broadcasts.
	Broadcasts *broadcast.Service
	// Agents keeps the projects' agents.
	Agents *agent.Service
	// Knowledge keeps agents' knowledge bases.
	Knowledge *knowledge.Service
	// Calls holds voice calls.
	Calls *call.Service
	// Numbers sells phone numbers.
	Numbers *numbers.Service
	// Regulatory keeps the addresses and documents numbers need.
	Regulatory *regulatory.Service
	// URLs verifies the URLs projects send.
	URLs *urlcheck.Service
	// WhatsAppSync syncs coexistence numbers' WhatsApp Business app data.
	WhatsAppSync *whatsappsync.Service
	// Functions keeps the projects' functions.
	Functions *functions.Service
	// FunctionHTTP serves functions' public URLs under /fn/ (no API key: the URL's token finds
	// the function); nil serves none.
	FunctionHTTP http.Handler
	// FunctionPushes takes GitHub's push deliveries for linked functions (no API key: each
	// link's secret signs them); nil takes none.
	FunctionPushes http.Handler
	// PublicURL is where clients reach the API (--public-url); "" uses the request's host.
	PublicURL string
	// Voices are what GET /v1/agents/voices lists; nil: the shipped catalogue.
	Voices *agent.Voicebook
	// EmailChecks keeps the suppression list and inspects addresses.
	EmailChecks *emailcheck.Checker
	// Disposable is the list of throwaway domains introspection flags; nil: the shipped list.
	Disposable emailcheck.Disposable
	// ProjectWebhooks manages the v2 project webhook.
	ProjectWebhooks *projectwebhook.Service
	// Deliveries is the webhook delivery log.
	Deliveries *delivery.Log
	// Invitations keeps the projects' invitations.
	Invitations *invitation.Service
	// Limiter counts requests per project; nil means in memory.
	Limiter ratelimit.Limiter
	// Reader reads Switchboard's custom resources, normally from the informer cache.
	Reader client.Reader
	Usage  KeyUsage
	// CursorKey signs pagination cursors; every replica needs the same one.
	CursorKey []byte
	// Listener is bound by the caller, so a taken port fails before anything else starts.
	Listener net.Listener
	// ReadyChecks decide /readyz; /healthz answers as long as the process serves.
	ReadyChecks map[string]healthz.Checker
	// Callbacks serves what providers post back, under /callbacks/ (no API key: each provider
	// signs its own requests); nil serves none.
	Callbacks http.Handler
	// Pages serves the invitations' connection page under /invitations/ (no API key: the link's
	// token is the credential); nil serves none.
	Pages http.Handler
	// Console serves the operator console under /console/ (its own sign-in: docs/console.md).
	Console http.Handler
	// Unsubscribe serves broadcast email's one-click unsubscribe page under /unsubscribe/ (no
	// API key: the link's signed token is the credential); nil serves none.
	Unsubscribe http.Handler
	// MaxInFlight bounds the API requests worked on at once: past it a request waits up to half
	// a second for one to end, then is answered 503 with Retry-After (inflight.go). 0 is
	// DefaultMaxInFlight; negative bounds nothing.
	MaxInFlight int
	// Metrics, when set, gets the sends' latency and count (metrics.go).
	Metrics prometheus.Registerer
	Log     logr.Logger
}

// New returns a server on the given listener.
func New(o Options) (*Server, error) {
	if o.Limiter == nil {
		o.Limiter = ratelimit.NewMemory()
	}
	if o.Disposable == nil {
		o.Disposable = emailcheck.ShippedDisposable()
	}
	if len(o.CursorKey) < 16 {
		return nil, errors.New("cursor key must be at least 16 bytes")
	}
	docs, err := openAPIDocuments()
	if err != nil {
		return nil, err
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	return &Server{
		auth: o.Auth, accounts: o.Accounts, senders: o.Senders, messages: o.Messages, projectHooks: o.ProjectWebhooks, deliveries: o.Deliveries, limiter: o.Limiter, reader: o.Reader, usage: o.Usage,
		contacts: o.Contacts, balances: o.Balances, phones: o.Phones, domains: o.EmailDomains, templates: o.Templates, tenDLC: o.TenDLC, broadcasts: o.Broadcasts, agents: o.Agents, knowledge: o.Knowledge, calls: o.Calls, numbers: o.Numbers, regulatory: o.Regulatory, urls: o.URLs, whatsAppSync: o.WhatsAppSync, functions: o.Functions, functionHTTP: o.FunctionHTTP, functionPush: o.FunctionPushes, publicURL: o.PublicURL, voices: o.Voices, invitations: o.Invitations, emailChecks: o.EmailChecks, disposable: o.Disposable,
		listener: o.Listener, checks: o.ReadyChecks, log: o.Log, now: time.Now,
		cursors: &cursorCodec{key: o.CursorKey}, docs: docs, callbacks: o.Callbacks, pages: o.Pages,
		unsubscribe: o.Unsubscribe, console: o.Console, sends: newSendMetrics(o.Metrics),
		inFlight: newInFlight(o.MaxInFlight, o.Metrics),
	}, nil
}

// maxHeaderBytes bounds a request's headers; net/http answers 431 past it (shapedListener).
const maxHeaderBytes = 64 << 10

// Handler routes every endpoint. Every request body is paced (paceBodies).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	// Mounted as the manager mounts its probes: /readyz runs every check, /readyz/<name> one.
	live := http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}})
	ready := http.StripPrefix("/readyz", &healthz.Handler{Checks: s.checks})
	mux.Handle("GET /healthz", live)
	mux.Handle("GET /healthz/", live)
	mux.Handle("GET /readyz", ready)
	mux.Handle("GET /readyz/", ready)
	if s.pages != nil {
		mux.Handle(invitation.PagePath, s.pages)
	}
	if s.unsubscribe != nil {
		mux.Handle(unsubscribe.Path, s.unsubscribe)
	}
	if s.console != nil {
		mux.Handle("/console", http.RedirectHandler("/console/", http.StatusMovedPermanently))
		mux.Handle("/console/", s.console)
	}
	if s.callbacks != nil {
		mux.Handle("/callbacks/", s.callbacks)
	}
	if s.functionHTTP != nil {
		mux.Handle(functions.HTTPPath, s.functionHTTP)
	}
	if s.functionPush != nil {
		mux.Handle(functions.GitHookPath, s.functionPush)
	}
	s.register(mux)
	return paceBodies(mux, bodyGrace, bodyMinRate)
}

// Start serves until ctx ends, then drains requests for up to 10 seconds.
func (s *Server) Start(ctx context.Context) error {
	// No ReadTimeout: request bodies are paced instead (paceBodies), so a 64 MiB send on an
	// ordinary link fits and a trickled body does not.
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(shapedListener{Listener: s.listener, maxHeaderBytes: maxHeaderBytes}) }()
	s.log.Info("serving the API", "address", s.listener.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serve API on %s: %w", s.listener.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down API server: %w", err)
	}
	return nil
}

// NeedLeaderElection: every replica serves the API.
func (s *Server) NeedLeaderElection() bool { return false }
