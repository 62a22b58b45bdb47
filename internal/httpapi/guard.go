package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/ratelimit"
)

type callerContextKey struct{}

// caller is who an authenticated request comes from: its key and the key's project (nil while
// the namespace has no Project).
type caller struct {
	key     apikey.Key
	project *v1alpha1.Project
}

// guard applies a route's checks in order: a slot among the requests in flight, body size,
// key, request rate, permission. Every authenticated request counts against its project's
// rate, whatever its answer.
func (s *Server) guard(rt route) http.Handler {
	maxBody := rt.maxBody
	if maxBody == 0 {
		maxBody = defaultMaxBody
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.inFlight.acquire(r) {
			if r.Context().Err() == nil {
				s.writeError(w, r, busy(w))
			}
			return
		}
		defer s.inFlight.release()
		if r.ContentLength > maxBody {
			s.writeError(w, r, bodyTooLarge(maxBody))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		if rt.access == public {
			rt.handle(w, r)
			return
		}

		secret, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			s.writeError(w, r, apperror.Unauthenticated())
			return
		}
		key, err := s.auth.Authenticate(r.Context(), secret)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		now := s.now()
		if s.usage != nil {
			s.usage.Record(key.ID, now)
		}
		project, err := s.project(r.Context(), key.Project)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.limit(r.Context(), w, key.Project, int(project.RequestRate()), now); err != nil {
			s.writeError(w, r, err)
			return
		}
		if project.IsDeactivated() {
			s.writeError(w, r, forbidden("This account is deactivated."))
			return
		}
		if err := authorize(rt, key, project); err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), callerContextKey{}, caller{key: key, project: project})
		rt.handle(w, r.WithContext(ctx))
	})
}

// refuseNUL answers a request whose path or query holds NUL (U+0000) before its handler sees
// it: Postgres stores no NUL in text, so such a value must never reach a query. No id holds
// NUL, so one in the path is 404; a query parameter holding it is 400 naming the parameter.
// Bodies are checked by decodeJSON; header values with NUL are refused by net/http itself.
func (s *Server) refuseNUL(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkNUL(r.URL); err != nil {
			s.writeError(w, r, err)
			return
		}
		next(w, r)
	}
}

func checkNUL(u *url.URL) error {
	if strings.IndexByte(u.Path, 0) >= 0 {
		return notFound()
	}
	if !strings.Contains(u.RawQuery, "%00") { // a raw NUL is no valid URL: net/http refuses it
		return nil
	}
	var errs []apperror.FieldError
	for name, values := range u.Query() {
		if strings.IndexByte(name, 0) >= 0 {
			continue // a parameter no endpoint reads
		}
		if slices.ContainsFunc(values, func(v string) bool { return strings.IndexByte(v, 0) >= 0 }) {
			errs = append(errs, apperror.FieldError{Path: name, Message: "must not contain the NUL character (U+0000)"})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b apperror.FieldError) int { return cmp.Compare(a.Path, b.Path) })
	return apperror.InvalidFields(errs...)
}

// limit counts the request and sets the rate-limit headers; a refusal, or a limiter that cannot
// be reached, is 429 rate_limited.
func (s *Server) limit(ctx context.Context, w http.ResponseWriter, project string, limit int, now time.Time) error {
	d, err := s.limiter.Allow(ctx, project, limit, now)
	if err != nil {
		s.log.Error(err, "request-rate limiter unreachable; refusing the request", "project", project)
		// Fail closed, as the spec asks: the same 429, to retry in 60 seconds.
		d = ratelimit.Decision{Limit: limit, Remaining: 0, Reset: now.Add(ratelimit.Window)}
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(d.Reset.UnixMilli(), 10))
	if err == nil && d.Allowed {
		return nil
	}
	retryAfter := d.RetryAfter(now)
	if err != nil {
		retryAfter = ratelimit.Window
	}
	h.Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	e := apperror.New(apperror.RateLimited, "rate_limited",
		fmt.Sprintf("Too many requests: this project may make %d requests per minute. Retry after %d seconds.", limit, int(retryAfter/time.Second)))
	e.Details = map[string]any{"retryAfter": d.Reset.UnixMilli()}
	return e
}

// authorize checks the key against the route's access rule.
func authorize(rt route, key apikey.Key, project *v1alpha1.Project) error {
	switch rt.access {
	case permission:
		if !key.Allows(rt.permission) {
			return forbidden(fmt.Sprintf("This API key lacks the %s permission.", rt.permission))
		}
	case parentOnly:
		if !key.Allows(apikey.PermissionAll) {
			return forbidden("Managing sub-accounts needs a full-access (*) API key.")
		}
		if project != nil && project.IsSubAccount() {
			return forbidden("A sub-account's API key cannot manage sub-accounts.")
		}
	}
	return testKeyMay(rt, key, project)
}

// testKeyMay refuses a test key's change to what live traffic shares when the project reserves
// those changes to live keys (spec.restrictTestKeys): such a key sends through the sandbox and
// reads, nothing else. Messages, broadcasts and contacts are kept apart by mode already.
func testKeyMay(rt route, key apikey.Key, project *v1alpha1.Project) error {
	if !key.TestMode() || project == nil || !project.Spec.RestrictTestKeys || rt.method == "" || rt.method == http.MethodGet {
		return nil
	}
	switch {
	case rt.access != permission:
	case rt.permission == apikey.PermissionMessagesSend, rt.permission == apikey.PermissionMessagesRead,
		rt.permission == apikey.PermissionContactsWrite:
		return nil
	}
	return forbidden("This project reserves changes to its configuration to live keys (spec.restrictTestKeys): a test key sends through the sandbox and reads.")
}

func forbidden(message string) *apperror.Error {
	return apperror.New(apperror.Forbidden, "forbidden", message)
}

func methodNotAllowed(method string, allowed []string) *apperror.Error {
	e := apperror.New(apperror.MethodNotAllowed, "method_not_allowed",
		fmt.Sprintf("%s is not allowed here; use %s.", method, strings.Join(allowed, " or ")))
	e.Details = map[string]any{"allowed": allowed}
	return e
}

// project reads the key's project from the cache; nil when the namespace has none (yet).
func (s *Server) project(ctx context.Context, namespace string) (*v1alpha1.Project, error) {
	return kubewrite.ProjectOf(ctx, s.reader, namespace)
}

// bearer extracts the token of an `Authorization: Bearer <token>` header.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// keyFrom returns the authenticated key of the request.
func keyFrom(ctx context.Context) apikey.Key {
	return ctx.Value(callerContextKey{}).(caller).key
}

// projectFrom returns the Project of the request's key, read once by guard.
func projectFrom(ctx context.Context) *v1alpha1.Project {
	return ctx.Value(callerContextKey{}).(caller).project
}
