// Package connectpage is the hosted connection page of invitations ({dashboard_url}/invitations/
// {token}): the client opens their link, signs in with Facebook (Meta's Embedded Signup for a
// WhatsApp Business account, Facebook Login for a Page's Messenger inbox), and the connection
// becomes a Sender in the inviting project. It is server-rendered (html/template, embedded
// assets, no build step), in the browser's language where a translation exists (English,
// Spanish), and records every step in the invitation's state (docs/invitations.md).
package connectpage

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/pagelang"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Connector is the provider's side of a connection (internal/onboarding, through Meta).
type Connector interface {
	// WhatsAppSignup is what the page needs to run Embedded Signup for inv.
	WhatsAppSignup(ctx context.Context, inv *v1alpha1.Invitation) (Signup, error)
	// LoginURL is the Facebook Login dialog of a messenger connection, which returns to
	// redirectURI with state.
	LoginURL(ctx context.Context, inv *v1alpha1.Invitation, redirectURI, state string) (string, error)
	// ConnectWhatsApp exchanges the Embedded Signup's code and connects the number it granted
	// (session holds what the signup reported: the WABA and phone number ids, maybe empty).
	ConnectWhatsApp(ctx context.Context, inv *v1alpha1.Invitation, code string, session WhatsAppSession) (invitation.Connected, error)
	// MessengerPages exchanges a Facebook Login code and returns the Pages the client granted.
	MessengerPages(ctx context.Context, inv *v1alpha1.Invitation, code, redirectURI string) ([]Page, error)
	// ConnectMessenger connects the chosen Page.
	ConnectMessenger(ctx context.Context, inv *v1alpha1.Invitation, page Page) (invitation.Connected, error)
}

// Signup is the Embedded Signup's settings for the page's script.
type Signup struct {
	AppID, ConfigID, Version string
	// SDKURL is the Facebook JS SDK's address; Origin the origin its dialog posts messages from.
	SDKURL, Origin string
	// Extras are FB.login's extras (setup: a pre-assigned number).
	Extras map[string]any
}

// WhatsAppSession is what the Embedded Signup's FINISH message reported.
type WhatsAppSession struct {
	WABAID        string `json:"wabaId"`
	PhoneNumberID string `json:"phoneNumberId"`
}

// Page is a Facebook Page the client may connect, with its token.
type Page struct {
	ID, Name, AccessToken string
}

// Failure is a connection that ended on the client's or the provider's side: the invitation
// fails with Reason (one of the spec's, or phone_country_not_allowed).
type Failure struct {
	Reason string
	Err    error
}

func (f *Failure) Error() string {
	if f.Err != nil {
		return "connection failed (" + f.Reason + "): " + f.Err.Error()
	}
	return "connection failed (" + f.Reason + ")"
}

func (f *Failure) Unwrap() error { return f.Err }

// Options are what the page needs.
type Options struct {
	Invitations *invitation.Service
	Connector   Connector
	// Reader reads Projects (the inviting project's name), normally the informer cache.
	Reader client.Reader
	Pool   *pgxpool.Pool
	// SessionKey seals the Pages of a sign-in until the client picks one; every replica needs
	// the same one.
	SessionKey []byte
	// BaseURL is where the page is served (--dashboard-url): Facebook Login returns to
	// BaseURL/invitations/oauth/callback, which the Meta app must list as a valid redirect URI.
	BaseURL string
	Log     logr.Logger
}

// Handler serves the page under invitation.PagePath.
type Handler struct {
	o     Options
	pages *template.Template
	now   func() time.Time
	// cookiePath and secure scope a sign-in's cookie to the page's public paths, and to https
	// when the page is served on it.
	cookiePath string
	secure     bool
}

// New returns the page's handler.
func New(o Options) (*Handler, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"t": func(l, key string, args ...any) string {
			s, ok := text[l][key]
			if !ok {
				s = text["en"][key]
			}
			if len(args) > 0 {
				return fmt.Sprintf(s, args...)
			}
			return s
		},
	}).ParseFS(templateFiles, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse the connection page's templates: %w", err)
	}
	o.BaseURL = strings.TrimSuffix(o.BaseURL, "/")
	h := &Handler{o: o, pages: t, now: time.Now, cookiePath: invitation.PagePath}
	if u, err := url.Parse(o.BaseURL); err == nil {
		h.cookiePath, h.secure = strings.TrimSuffix(u.Path, "/")+invitation.PagePath, u.Scheme == "https"
	}
	return h, nil
}

// callbackPath is where Facebook Login returns: one fixed address, as Meta's strict redirect URI
// checking wants. It cannot be a token (tokens are 43 characters).
const callbackPath = invitation.PagePath + "oauth/callback"

// signInLifetime bounds a Facebook sign-in: its state and the Pages waiting for a pick.
const signInLifetime = 30 * time.Minute

// ServeHTTP routes the page's requests.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, invitation.PagePath)
	if strings.HasPrefix(rest, "static/") && r.Method == http.MethodGet {
		h.static(w, r, strings.TrimPrefix(rest, "static/"))
		return
	}
	if r.URL.Path == callbackPath && r.Method == http.MethodGet {
		h.callback(w, r)
		return
	}
	token, action, _ := strings.Cut(rest, "/")
	switch {
	case action == "" && r.Method == http.MethodGet:
		h.show(w, r, token)
	case action == "start" && r.Method == http.MethodPost:
		h.start(w, r, token)
	case action == "whatsapp" && r.Method == http.MethodPost:
		h.whatsapp(w, r, token)
	case action == "fail" && r.Method == http.MethodPost:
		h.fail(w, r, token)
	case action == "page" && r.Method == http.MethodPost:
		h.pickPage(w, r, token)
	default:
		http.NotFound(w, r)
	}
}

// view is what a template renders.
type view struct {
	Lang       string
	Token      string
	Project    string
	Client     string
	Type       string
	State      string
	Reason     string
	Account    string
	ExpiresAt  string
	Preassign  string
	Countries  string
	Signup     *Signup
	SignupJSON template.JS
	Pages      []Page
	SignIn     string
	Next       string // a link to go on with (a message's)
	StaticPath string
	PagePath   string
}

func (h *Handler) viewOf(r *http.Request, inv *v1alpha1.Invitation, token string) view {
	v := view{Lang: pagelang.Of(r.Header.Get("Accept-Language")), StaticPath: invitation.PagePath + "static/", PagePath: invitation.PagePath}
	if inv == nil {
		return v
	}
	v.Token = token
	v.Client, v.Type = inv.Spec.ClientName, string(connectionTypeOf(inv))
	v.State = string(inv.StateAt(h.now()))
	v.Reason = inv.Status.FailureReason
	if a := inv.Status.ConnectedAccount; a != nil {
		v.Account = a.Name
		if v.Account == "" {
			v.Account = a.ID
		}
	}
	if e := inv.Status.ExpiresAt; e != nil {
		v.ExpiresAt = e.UTC().Format("2006-01-02 15:04 MST")
	}
	if connectionTypeOf(inv) == v1alpha1.ConnectionWhatsApp {
		v.Preassign = inv.Spec.PhoneNumberID
		v.Countries = strings.Join(inv.Spec.AllowedPhoneCountries, ", ")
	}
	v.Project = inv.Namespace
	if p, err := kubewrite.ProjectOf(r.Context(), h.o.Reader, inv.Namespace); err == nil && p != nil && p.Spec.DisplayName != "" {
		v.Project = p.Spec.DisplayName
	}
	return v
}

func connectionTypeOf(inv *v1alpha1.Invitation) v1alpha1.ConnectionType {
	if inv.Spec.ConnectionType == "" {
		return v1alpha1.ConnectionWhatsApp
	}
	return inv.Spec.ConnectionType
}

// render writes a page with the security headers every answer of the page carries.
func (h *Handler) render(w http.ResponseWriter, status int, name string, v view) {
	headers(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := h.pages.ExecuteTemplate(w, name, v); err != nil {
		h.o.Log.Error(err, "render the connection page", "template", name)
	}
}

// headers keep the page out of frames and its links out of referrers: the token is in the path.
func headers(w http.ResponseWriter) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
}

// lookup finds the invitation of a link (by the cache's token index), read fresh from the API
// server, answering the not-found page when there is none.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request, token string) *v1alpha1.Invitation {
	inv, err := h.o.Invitations.ByToken(r.Context(), token)
	if err == nil {
		inv, err = h.o.Invitations.Fresh(r.Context(), inv.Namespace, inv.Name)
	}
	if err != nil {
		if apperror.As(err) == nil {
			h.o.Log.Error(err, "find the invitation of a link")
			h.render(w, http.StatusInternalServerError, "message.html", h.messageView(r, "reason.internal_error", ""))
			return nil
		}
		h.render(w, http.StatusNotFound, "message.html", h.messageView(r, "notFound", "notFoundBody"))
		return nil
	}
	return inv
}

func (h *Handler) messageView(r *http.Request, title, body string) view {
	v := h.viewOf(r, nil, "")
	v.State, v.Reason = title, body
	return v
}

// show renders the invitation's state; opening it the first time records viewedAt. A cancelled
// or expired link answers 410.
func (h *Handler) show(w http.ResponseWriter, r *http.Request, token string) {
	inv := h.lookup(w, r, token)
	if inv == nil {
		return
	}
	if viewed, err := h.o.Invitations.Viewed(r.Context(), inv); err == nil {
		inv = viewed
	} else {
		h.o.Log.Error(err, "record that an invitation was viewed", "project", inv.Namespace, "invitation", inv.Name)
	}
	v := h.viewOf(r, inv, token)
	status := http.StatusOK
	switch inv.StateAt(h.now()) {
	case v1alpha1.InvitationCancelled, v1alpha1.InvitationExpired:
		status = http.StatusGone
	case v1alpha1.InvitationPending, v1alpha1.InvitationFailed, v1alpha1.InvitationInProgress:
		if connectionTypeOf(inv) == v1alpha1.ConnectionWhatsApp {
			s, err := h.o.Connector.WhatsAppSignup(r.Context(), inv)
			if err != nil {
				h.o.Log.Error(err, "read the Embedded Signup settings", "project", inv.Namespace, "invitation", inv.Name)
				v.State, v.Reason = string(v1alpha1.InvitationFailed), v1alpha1.FailureInternalError
				break
			}
			b, _ := json.Marshal(map[string]any{"appId": s.AppID, "configId": s.ConfigID, "version": s.Version,
				"sdk": s.SDKURL, "origin": s.Origin, "extras": s.Extras})
			v.Signup, v.SignupJSON = &s, template.JS(b)
		}
	}
	h.render(w, status, "page.html", v)
}

// start records that the client started connecting. A messenger connection goes on to Facebook
// Login; a WhatsApp one runs in the page's script (the SDK's popup must open in the click), which
// posts here as it opens it.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, token string) {
	inv := h.lookup(w, r, token)
	if inv == nil {
		return
	}
	inv, err := h.o.Invitations.Start(r.Context(), inv)
	if h.refused(w, r, token, err) {
		return
	}
	if connectionTypeOf(inv) == v1alpha1.ConnectionWhatsApp {
		headers(w)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	state, err := h.newSignIn(r.Context(), w, inv)
	if err == nil {
		var to string
		if to, err = h.o.Connector.LoginURL(r.Context(), inv, h.o.BaseURL+callbackPath, state); err == nil {
			headers(w)
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		}
	}
	h.failed(w, r, token, inv, &Failure{Reason: v1alpha1.FailureInternalError, Err: err})
}

// refused answers a step refused at the link (cancelled, expired, completed, or an error) and
// says whether it did.
func (h *Handler) refused(w http.ResponseWriter, r *http.Request, token string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, invitation.ErrGone), errors.Is(err, invitation.ErrFinished):
		headers(w)
		http.Redirect(w, r, invitation.PagePath+token, http.StatusSeeOther)
	default:
		h.o.Log.Error(err, "move an invitation")
		h.render(w, http.StatusInternalServerError, "message.html", h.messageView(r, "reason.internal_error", ""))
	}
	return true
}

// failed records a connection that failed and sends the client back to the page, which shows why.
func (h *Handler) failed(w http.ResponseWriter, r *http.Request, token string, inv *v1alpha1.Invitation, err error) {
	h.failedQuietly(r, inv, err)
	headers(w)
	http.Redirect(w, r, invitation.PagePath+token, http.StatusSeeOther)
}

// maxStepBody bounds what the page's script posts.
const maxStepBody = 8 << 10

// whatsapp completes an Embedded Signup: the script posts the SDK's code and the FINISH
// message's ids; the answer says where to go next.
func (h *Handler) whatsapp(w http.ResponseWriter, r *http.Request, token string) {
	inv := h.lookup(w, r, token)
	if inv == nil {
		return
	}
	var in struct {
		Code string `json:"code"`
		WhatsAppSession
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxStepBody)).Decode(&in); err != nil || in.Code == "" {
		headers(w)
		http.Error(w, "a code is required", http.StatusBadRequest)
		return
	}
	h.connect(r, inv, func(inv *v1alpha1.Invitation) (invitation.Connected, error) {
		return h.o.Connector.ConnectWhatsApp(r.Context(), inv, in.Code, in.WhatsAppSession)
	})
	writeJSON(w, map[string]string{"next": invitation.PagePath + token})
}

// connect makes a connection and records its outcome: completed, or failed with its reason. An
// invitation no longer in progress (failed meanwhile: left too long, or a retry elsewhere) is
// started again first; one cancelled, expired or completed meanwhile is left as it is, and the
// page says so.
func (h *Handler) connect(r *http.Request, inv *v1alpha1.Invitation, connectTo func(*v1alpha1.Invitation) (invitation.Connected, error)) {
	if inv.Stored() != v1alpha1.InvitationInProgress {
		started, err := h.o.Invitations.Start(r.Context(), inv)
		if err != nil {
			if !errors.Is(err, invitation.ErrGone) && !errors.Is(err, invitation.ErrFinished) {
				h.o.Log.Error(err, "start an invitation again", "project", inv.Namespace, "invitation", inv.Name)
			}
			return
		}
		inv = started
	}
	connected, err := connectTo(inv)
	if err != nil {
		h.failedQuietly(r, inv, err)
		return
	}
	if _, err := h.o.Invitations.Complete(r.Context(), inv, connected); err != nil {
		h.o.Log.Error(err, "record a completed connection", "project", inv.Namespace, "invitation", inv.Name)
	}
}

// failedQuietly records a failed connection (its reason, else internal_error), for a script's
// request, which then reloads the page.
func (h *Handler) failedQuietly(r *http.Request, inv *v1alpha1.Invitation, err error) {
	reason := v1alpha1.FailureInternalError
	var f *Failure
	if errors.As(err, &f) {
		reason = f.Reason
	}
	if reason == v1alpha1.FailureInternalError {
		h.o.Log.Error(err, "connect an invitation", "project", inv.Namespace, "invitation", inv.Name)
	}
	if _, err := h.o.Invitations.Fail(r.Context(), inv, reason); err != nil {
		h.o.Log.Error(err, "record a failed connection", "project", inv.Namespace, "invitation", inv.Name)
	}
}

// clientReasons are the failures the page's script may report: the client closed the dialog
// (or the SDK answered without a code), or left the flow mid-way.
var clientReasons = map[string]bool{v1alpha1.FailureSocialCancelled: true, v1alpha1.FailureSignupAbandoned: true}

// fail records a failure the page's script saw.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, token string) {
	inv := h.lookup(w, r, token)
	if inv == nil {
		return
	}
	var in struct {
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxStepBody)).Decode(&in); err != nil || !clientReasons[in.Reason] {
		headers(w)
		http.Error(w, "reason must be social_cancelled or signup_abandoned", http.StatusBadRequest)
		return
	}
	h.failedQuietly(r, inv, &Failure{Reason: in.Reason})
	writeJSON(w, map[string]string{"next": invitation.PagePath + token})
}

func writeJSON(w http.ResponseWriter, v any) {
	headers(w)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// static serves the page's stylesheet and script.
func (h *Handler) static(w http.ResponseWriter, r *http.Request, name string) {
	sub, _ := fs.Sub(staticFiles, "static")
	if _, err := fs.Stat(sub, name); err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	http.ServeFileFS(w, r, sub, name)
}
