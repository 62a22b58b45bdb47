package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Session lengths: a session ends after IdleTimeout without a request, and MaxAge after it was
// made whatever; an operator's sign-in link works once, within LinkTTL.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxAge      = 12 * time.Hour
	LinkTTL            = 15 * time.Minute
)

// The cookies: the session's id, and before sign-in the token the sign-in form must carry back
// (a login CSRF attack cannot read it).
const (
	sessionCookie = "switchboard_console"
	signinCookie  = "switchboard_console_signin"
)

// session is who is signed in: a key's session acts as that key (its project, mode and
// permissions); an operator's sees every project, one at a time.
type session struct {
	idHash []byte
	csrf   string
	lang   string
	// key is the API key a session was made with; nil for an operator.
	key *apikey.Key
	// operator names the operator of an operator's session.
	operator string
}

// actor names who acts, for the audit and the decisions' records.
func (s *session) actor() string {
	if s.key != nil {
		return "API key " + s.key.Prefix
	}
	return "operator " + s.operator
}

// can tells whether the session may see or do what needs permission p: an operator may.
func (s *session) can(p apikey.Permission) bool {
	if s.key == nil {
		return true
	}
	for _, have := range s.key.Permissions {
		if have == string(apikey.PermissionAll) || have == string(p) {
			return true
		}
	}
	return false
}

// token returns n random bytes as base64url text.
func token(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// sessions keeps the console's sessions in Postgres: every api replica sees them.
type sessions struct {
	pool    *pgxpool.Pool
	idle    time.Duration
	maxAge  time.Duration
	secure  bool
	now     func() time.Time
	cookies string // the cookies' path
}

// start makes a session (of a key, or of an operator) and sets its cookie.
func (m *sessions) start(ctx context.Context, w http.ResponseWriter, key *apikey.Key, operator, lang string) error {
	id, err := token(32)
	if err != nil {
		return err
	}
	csrf, err := token(24)
	if err != nil {
		return err
	}
	now := m.now().UTC()
	p := db.InsertConsoleSessionParams{IDHash: hash(id), CsrfToken: csrf, Lang: lang, Now: now, ExpiresAt: now.Add(m.maxAge)}
	if key != nil {
		p.KeyID = &key.ID
	} else {
		p.Operator = &operator
	}
	if err := db.New(m.pool).InsertConsoleSession(ctx, p); err != nil {
		return fmt.Errorf("record console session: %w", err)
	}
	http.SetCookie(w, m.cookie(sessionCookie, id, int(m.maxAge.Seconds())))
	return nil
}

func (m *sessions) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: m.cookies, MaxAge: maxAge, HttpOnly: true, Secure: m.secure,
		SameSite: http.SameSiteStrictMode}
}

// errNoSession: no cookie, or a session that ended (idle, too old, signed out, key revoked).
var errNoSession = errors.New("no console session")

// of returns the request's session, seen now (its idle time starts over), in one round trip.
func (m *sessions) of(r *http.Request) (*session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, errNoSession
	}
	now := m.now().UTC()
	row, err := db.New(m.pool).TouchConsoleSession(r.Context(), db.TouchConsoleSessionParams{Now: now, IDHash: hash(c.Value),
		IdleSince: now.Add(-m.idle)})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("read console session: %w", err)
	}
	s := &session{idHash: hash(c.Value), csrf: row.CsrfToken, lang: row.Lang}
	if row.KeyID != nil {
		s.key = &apikey.Key{ID: *row.KeyID, Project: *row.Project, Environment: apikey.Environment(*row.Environment),
			Permissions: row.Permissions, Prefix: *row.KeyPrefix}
	} else {
		s.operator = *row.Operator
	}
	return s, nil
}

// end signs the session out and clears its cookie.
func (m *sessions) end(ctx context.Context, w http.ResponseWriter, s *session) error {
	http.SetCookie(w, m.cookie(sessionCookie, "", -1))
	return db.New(m.pool).DeleteConsoleSession(ctx, s.idHash)
}

// setLang keeps the language the session's pages are in.
func (m *sessions) setLang(ctx context.Context, s *session, lang string) error {
	s.lang = lang
	return db.New(m.pool).SetConsoleSessionLang(ctx, db.SetConsoleSessionLangParams{Lang: lang, IDHash: s.idHash})
}

// validCSRF tells whether a form carries the session's token.
func (s *session) validCSRF(r *http.Request) bool {
	return subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) == 1
}

// Login makes an operator's one-time sign-in link (switchboard console login) to the console
// at base (the api's address): it works once, within ttl (LinkTTL when zero).
func Login(ctx context.Context, pool *pgxpool.Pool, base, operator string, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		ttl = LinkTTL
	}
	now := time.Now()
	t, err := token(32)
	if err != nil {
		return "", err
	}
	if err := db.New(pool).InsertConsoleLogin(ctx, db.InsertConsoleLoginParams{TokenHash: hash(t), Operator: operator, Now: now.UTC(),
		ExpiresAt: now.UTC().Add(ttl)}); err != nil {
		return "", fmt.Errorf("record console sign-in link: %w", err)
	}
	return strings.TrimSuffix(base, "/") + Path + "login?token=" + t, nil
}

// useLogin takes an operator's link once; ok is false for a used, expired or unknown one.
func (m *sessions) useLogin(ctx context.Context, t string) (string, bool, error) {
	operator, err := db.New(m.pool).UseConsoleLogin(ctx, db.UseConsoleLoginParams{Now: m.now().UTC(), TokenHash: hash(t)})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("use console sign-in link: %w", err)
	}
	return operator, true, nil
}

// audit records a decision taken in the console.
func (m *sessions) audit(ctx context.Context, s *session, project, action, target string) error {
	return db.New(m.pool).InsertConsoleAudit(ctx, db.InsertConsoleAuditParams{At: m.now().UTC(), Actor: s.actor(), Project: project,
		Action: action, Target: target})
}
