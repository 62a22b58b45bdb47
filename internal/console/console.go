// Package console is the operator console at /console, served by the api role: server-rendered
// pages (html/template, embedded assets, no build step) in English and Spanish to find a
// message and its webhook attempts, replay deliveries, decide held messages, and watch
// broadcasts, usage and senders (docs/console.md).
//
// Sign-in is with a project's API key, exchanged for a session cookie (HttpOnly, SameSite=Strict,
// Secure outside dev): the session sees that key's project and mode and what its permissions
// allow, and ends when the key is revoked or after DefaultIdleTimeout idle. An installation
// operator signs in with a one-time link (switchboard console login) and sees every project;
// every decision taken in the console is audited.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/broadcast"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/pagelang"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
)

// Path is where the console is served.
const Path = "/console/"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Authenticator turns an API key into the key it is (the API's own).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (apikey.Key, error)
}

// Options are what the console reads and acts through: the services the API uses.
type Options struct {
	Auth       Authenticator
	Pool       *pgxpool.Pool
	Reader     client.Reader
	Messages   *message.Service
	Deliveries *delivery.Log
	Broadcasts *broadcast.Service
	Balances   *billing.Service
	URLs       *urlcheck.Service
	// Secure marks the cookies Secure: everywhere but `switchboard dev` on plain http.
	Secure bool
	// IdleTimeout and MaxAge end sessions (DefaultIdleTimeout, DefaultMaxAge when zero).
	IdleTimeout, MaxAge time.Duration
	Log                 logr.Logger
}

// SecureAt tells whether the console's cookies must be Secure when it is reached at address:
// everywhere but plain http on a loopback host (`switchboard dev`).
func SecureAt(address string) bool {
	u, err := url.Parse(address)
	if err != nil || u.Scheme != "http" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return !(u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()))
}

// Handler serves the console under Path.
type Handler struct {
	o        Options
	sessions *sessions
	pages    map[string]*template.Template
	mux      *http.ServeMux
	static   http.Handler
}

// pageNames are the templates of the pages, each with the layout; views add theirs (register).
var pageNames = []string{"signin", "message", "messages", "deliveries", "review", "error"}

// viewRoute is a signed-in route of a view.
type viewRoute struct {
	pattern string
	handler func(h *Handler) handlerFunc
}

// viewRoutes are the routes the views add (register).
var viewRoutes []viewRoute

// register adds a view: its pages, its signed-in routes (pattern → handler) and its wording.
// Each view's file calls it from init, so views live apart.
func register(pages []string, routes []viewRoute, texts map[string]map[string]string) {
	pageNames = append(pageNames, pages...)
	viewRoutes = append(viewRoutes, routes...)
	for lang, m := range texts {
		for k, v := range m {
			text[lang][k] = v
		}
	}
}

// navItems are the sections the layout links to, in order.
var navItems = []string{"messages", "conversations", "deliveries", "review", "broadcasts", "usage", "senders"}

// New returns the console's handler.
func New(o Options) (*Handler, error) {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	h := &Handler{o: o, pages: map[string]*template.Template{},
		sessions: &sessions{pool: o.Pool, idle: o.IdleTimeout, maxAge: o.MaxAge, secure: o.Secure, now: time.Now, cookies: strings.TrimSuffix(Path, "/")}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse console page %s: %w", name, err)
		}
		h.pages[name] = t
	}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	h.static = http.StripPrefix(Path+"static/", http.FileServerFS(static))
	h.mux = http.NewServeMux()
	h.routes()
	return h, nil
}

func (h *Handler) routes() {
	h.mux.HandleFunc("GET "+Path+"{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Path+"messages", http.StatusSeeOther)
	})
	h.mux.Handle("GET "+Path+"static/", h.static)
	h.mux.HandleFunc("GET "+Path+"signin", h.signinPage)
	h.mux.HandleFunc("POST "+Path+"signin", h.signin)
	h.mux.HandleFunc("GET "+Path+"login", h.operatorLogin)
	h.mux.HandleFunc("POST "+Path+"signout", h.signedIn(h.signout))
	h.mux.HandleFunc("GET "+Path+"messages", h.signedIn(h.messages))
	h.mux.HandleFunc("GET "+Path+"messages/{id}", h.signedIn(h.message))
	h.mux.HandleFunc("GET "+Path+"deliveries", h.signedIn(h.deliveries))
	h.mux.HandleFunc("POST "+Path+"deliveries/{id}/replay", h.signedIn(h.replay))
	h.mux.HandleFunc("POST "+Path+"endpoints/enable", h.signedIn(h.enable))
	h.mux.HandleFunc("GET "+Path+"review", h.signedIn(h.review))
	h.mux.HandleFunc("POST "+Path+"review/{id}", h.signedIn(h.decide))
	h.mux.HandleFunc("POST "+Path+"review/urls/{id}", h.signedIn(h.decideURL))
	for _, vr := range viewRoutes {
		h.mux.HandleFunc(vr.pattern, h.signedIn(vr.handler(h)))
	}
}

// ServeHTTP answers with the headers every page carries: no caching, no framing, scripts and
// styles of the console's own only.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
		"frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	if !strings.HasPrefix(r.URL.Path, Path+"static/") {
		hdr.Set("Cache-Control", "no-store")
	}
	h.mux.ServeHTTP(w, r)
}

// view is what a request sees: its session, and the project and mode it looks at (a key's own;
// an operator's choice among every project).
type view struct {
	s        *session
	project  string
	testMode bool
	lang     string
	// projects are the projects an operator may pick from.
	projects []string
}

// key is the API key the console's reads act as: the session's key, or for an operator a
// full-access key of the chosen project and mode.
func (v *view) key() apikey.Key {
	if v.s.key != nil {
		return *v.s.key
	}
	env := apikey.Live
	if v.testMode {
		env = apikey.Test
	}
	return apikey.Key{ID: "console-operator", Project: v.project, Environment: env, Permissions: []string{string(apikey.PermissionAll)},
		Prefix: "operator " + v.s.operator}
}

// link is a console path with the view's project and mode (an operator's choice travels in the
// links) and the query given.
func (v *view) link(path string, q url.Values) string {
	if q == nil {
		q = url.Values{}
	}
	if v.s.key == nil {
		q.Set("project", v.project)
		if v.testMode {
			q.Set("mode", "test")
		}
	}
	if len(q) == 0 {
		return Path + path
	}
	return Path + path + "?" + q.Encode()
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, v *view)

// signedIn runs next for a signed-in request, and sends anyone else to sign in. A form (POST)
// must carry the session's CSRF token.
func (h *Handler) signedIn(next handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := h.sessions.of(r)
		if errors.Is(err, errNoSession) {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, Path+"signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.fail(w, r, langOf(r, ""), http.StatusUnauthorized, "error.session")
			return
		}
		if err != nil {
			h.internal(w, r, "en", err)
			return
		}
		v := &view{s: s, lang: langOf(r, s.lang)}
		if v.lang != s.lang {
			// A language chosen (?lang=) is the session's from now on.
			if err := h.sessions.setLang(r.Context(), s, v.lang); err != nil {
				h.internal(w, r, v.lang, err)
				return
			}
		}
		if r.Method == http.MethodPost && !s.validCSRF(r) {
			h.fail(w, r, v.lang, http.StatusForbidden, "error.csrf")
			return
		}
		if s.key != nil {
			v.project, v.testMode = s.key.Project, s.key.TestMode()
		} else if err := h.operatorScope(r, v); err != nil {
			h.internal(w, r, v.lang, err)
			return
		}
		next(w, r, v)
	}
}

// operatorScope reads the project and mode an operator looks at: ?project= among every
// project (the first by default), ?mode=test for the sandbox's traffic.
func (h *Handler) operatorScope(r *http.Request, v *view) error {
	var projects v1alpha1.ProjectList
	if err := h.o.Reader.List(r.Context(), &projects); err != nil {
		return fmt.Errorf("list projects: %w", err)
	}
	for _, p := range projects.Items {
		v.projects = append(v.projects, p.Namespace)
	}
	slices.Sort(v.projects)
	v.projects = slices.Compact(v.projects)
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	v.project = q.Get("project")
	if !slices.Contains(v.projects, v.project) {
		v.project = ""
		if len(v.projects) > 0 {
			v.project = v.projects[0]
		}
	}
	v.testMode = q.Get("mode") == "test"
	return nil
}

// langOf is the page's language: ?lang= when it names one the console speaks, else the
// session's, else the browser's.
func langOf(r *http.Request, sessionLang string) string {
	if l := r.URL.Query().Get("lang"); l == "en" || l == "es" {
		return l
	}
	if sessionLang == "en" || sessionLang == "es" {
		return sessionLang
	}
	return pagelang.Of(r.Header.Get("Accept-Language"))
}

// navLink is a section in the layout's navigation.
type navLink struct {
	Name, Href string
	Current    bool
}

// page is what the layout shows around a page's content.
type page struct {
	Lang     string
	Title    string
	Nav      string
	Signed   bool
	Actor    string
	Project  string
	TestMode bool
	Projects []string
	CSRF     string
	Nav2     []navLink
	Flash    string
	Data     any
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, v *view, status int, name, title string, data any) {
	p := page{Lang: v.lang, Title: title, Nav: name, Data: data, Flash: r.URL.Query().Get("done")}
	if v.s != nil {
		p.Signed, p.Actor, p.Project, p.TestMode, p.Projects, p.CSRF = true, v.s.actor(), v.project, v.testMode, v.projects, v.s.csrf
		for _, l := range navItems {
			if _, ok := h.pages[l]; ok {
				p.Nav2 = append(p.Nav2, navLink{Name: l, Href: v.link(l, nil), Current: l == name || l == name+"s"})
			}
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := h.pages[name].ExecuteTemplate(w, "layout", p); err != nil {
		h.o.Log.Error(err, "render console page", "page", name)
	}
}

// fail answers with the error page: status, and the message of key in the page's language.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, lang string, status int, key string) {
	h.render(w, r, &view{lang: lang}, status, "error", t(lang, "error.title"), t(lang, key))
}

// internal answers 500 and logs what went wrong (never a key or a message body).
func (h *Handler) internal(w http.ResponseWriter, r *http.Request, lang string, err error) {
	h.o.Log.Error(err, "console request failed", "path", r.URL.Path)
	h.fail(w, r, lang, http.StatusInternalServerError, "error.internal")
}

// appError answers an error of a service: its status and its message, or 500.
func (h *Handler) appError(w http.ResponseWriter, r *http.Request, v *view, err error) {
	e := apperror.As(err)
	if e == nil {
		h.internal(w, r, v.lang, err)
		return
	}
	status := http.StatusBadRequest
	switch e.Kind {
	case apperror.NotFound:
		status = http.StatusNotFound
	case apperror.Conflict:
		status = http.StatusConflict
	case apperror.Forbidden:
		status = http.StatusForbidden
	}
	h.render(w, r, v, status, "error", t(v.lang, "error.title"), e.Message)
}

// forbidden answers a view the session's key may not see.
func (h *Handler) forbidden(w http.ResponseWriter, r *http.Request, v *view, p apikey.Permission) {
	h.render(w, r, v, http.StatusForbidden, "error", t(v.lang, "error.title"), fmt.Sprintf(t(v.lang, "error.permission"), p))
}

// redirectDone sends the browser back to a page after an action, saying what was done.
func redirectDone(w http.ResponseWriter, r *http.Request, to, done string) {
	u, err := url.Parse(to)
	if err != nil || u.IsAbs() || !strings.HasPrefix(u.Path, Path) {
		u = &url.URL{Path: Path}
	}
	q := u.Query()
	q.Set("done", done)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// backTo is the console page a form returns to (its "back" field), kept within the console.
func backTo(r *http.Request, fallback string) string {
	b := r.PostFormValue("back")
	if b == "" || !strings.HasPrefix(b, Path) || strings.HasPrefix(b, "//") {
		return fallback
	}
	return b
}
