// Package webrisktest runs a local Web Risk Lookup API for tests, on loopback, for one known API
// key (APIKey). It answers GET /v1/uris:search as Google documents it
// (https://cloud.google.com/web-risk/docs/reference/rest/v1/uris/search): the threatTypes asked
// (repeated) and the uri, the key in the key query parameter or the X-Goog-Api-Key header;
// {} for a URI on none of the lists asked, else {"threat":{"threatTypes":[...],"expireTime":...}}
// with only the lists asked and an expireTime five minutes ahead. Refusals are Google's error
// body, {"error":{"code","message","status"}}, with the HTTP status of code.
//
// What it reports: the URIs and hosts given to Flag, and these documented test URLs:
//
//   - a URI whose host is malware.test or ends with .malware.test is on MALWARE;
//   - a URI whose host is phishing.test or ends with .phishing.test is on SOCIAL_ENGINEERING.
//
// Everything else is safe. It records the URIs asked (Lookups) and fails on demand (FailNext).
//
// Where it departs from Google: it does not canonicalize URIs (a flag matches the URI exactly as
// sent, or its host); it answers a wrong key with 403 PERMISSION_DENIED and the reason
// API_KEY_INVALID (Google answers 400 INVALID_ARGUMENT with that reason; both are a refusal for
// good to the client); and the messages of its argument checks are in Google's style, not always
// Google's words. Like Google it takes enum numbers for threatTypes and answers them as numbers
// when asked with $alt=json;enum-encoding=int, as Google's generated REST client does.
package webrisktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// APIKey is the key the server knows.
const APIKey = "AIzaSyTEST-webrisktest-0123456789abcdef"

// TTL is how far ahead of the answer the expireTime of a flagged URI is.
const TTL = 5 * time.Minute

// The ThreatType values of the v1 API, in the order of their enum numbers (1 to 4).
var threatTypes = []string{"MALWARE", "SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE", "SOCIAL_ENGINEERING_EXTENDED_COVERAGE"}

// Server is the Web Risk API. Its URL is the API's base URL.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	flags   map[string][]string // by URI or host
	lookups []string
	fail    []int
}

// NewServer starts the server on loopback; it stops when t ends.
func NewServer(t testing.TB) *Server {
	s := &Server{flags: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Flag puts uriOrHost on the lists threats (ThreatType names): a URI asked is on them when it is
// uriOrHost exactly or its host is uriOrHost. Flags add up.
func (s *Server) Flag(uriOrHost string, threats ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range threats {
		if !slices.Contains(s.flags[uriOrHost], t) {
			s.flags[uriOrHost] = append(s.flags[uriOrHost], t)
		}
	}
}

// Lookups are the uri parameters of every uris.search request, refused ones among them, in
// order.
func (s *Server) Lookups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lookups...)
}

// FailNext makes the next uris.search request, whatever it asks and whatever its key, answer
// status with Google's error body for it (429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503
// UNAVAILABLE …). Calls queue: each fails one request, in order.
func (s *Server) FailNext(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = append(s.fail, status)
}

// googleStatus is Google's status name and a message in its words for an HTTP status.
func googleStatus(status int) (string, string) {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT", "Request contains an invalid argument."
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED", "Request had invalid authentication credentials."
	case http.StatusForbidden:
		return "PERMISSION_DENIED", "The caller does not have permission"
	case http.StatusNotFound:
		return "NOT_FOUND", "Requested entity was not found."
	case http.StatusConflict:
		return "ABORTED", "The operation was aborted."
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Lookup requests' and limit 'Lookup requests per minute' of service 'webrisk.googleapis.com'."
	case 499:
		return "CANCELLED", "The operation was cancelled."
	case http.StatusInternalServerError:
		return "INTERNAL", "Internal error encountered."
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED", "Operation is not implemented, or supported, or enabled."
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE", "The service is currently unavailable."
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."
	}
	return "UNKNOWN", http.StatusText(status)
}

// refusal is an error answer.
type refusal struct {
	status  int
	message string // Google's generic message for status when empty
	reason  string // the google.rpc.ErrorInfo reason, if any
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var answer any
	fail := s.answer(r, &answer)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if fail == nil {
		_ = json.NewEncoder(w).Encode(answer)
		return
	}
	status, message := googleStatus(fail.status)
	if fail.message != "" {
		message = fail.message
	}
	body := map[string]any{"code": fail.status, "message": message, "status": status}
	if fail.reason != "" {
		body["details"] = []any{map[string]any{
			"@type":    "type.googleapis.com/google.rpc.ErrorInfo",
			"reason":   fail.reason,
			"domain":   "googleapis.com",
			"metadata": map[string]string{"service": "webrisk.googleapis.com"},
		}}
	}
	w.WriteHeader(fail.status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": body})
}

// answer checks r and sets *answer to the SearchUrisResponse, or returns the refusal.
func (s *Server) answer(r *http.Request, answer *any) *refusal {
	if r.URL.Path != "/v1/uris:search" || r.Method != http.MethodGet {
		return &refusal{status: http.StatusNotFound}
	}
	q := r.URL.Query()
	uri := q.Get("uri")
	s.mu.Lock()
	s.lookups = append(s.lookups, uri)
	if len(s.fail) > 0 {
		status := s.fail[0]
		s.fail = s.fail[1:]
		s.mu.Unlock()
		f := &refusal{status: status}
		if status == http.StatusTooManyRequests {
			f.reason = "RATE_LIMIT_EXCEEDED"
		}
		return f
	}
	s.mu.Unlock()

	key := q.Get("key")
	if key == "" {
		key = r.Header.Get("X-Goog-Api-Key")
	}
	switch key {
	case APIKey:
	case "":
		return &refusal{status: http.StatusForbidden, message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}
	default:
		return &refusal{status: http.StatusForbidden, message: "API key not valid. Please pass a valid API key.", reason: "API_KEY_INVALID"}
	}

	asked := q["threatTypes"]
	if len(asked) == 0 {
		return &refusal{status: http.StatusBadRequest, message: "Invalid argument: at least one threat type must be specified in 'threat_types'."}
	}
	for i, t := range asked {
		name, ok := threatName(t)
		if !ok {
			return &refusal{status: http.StatusBadRequest, message: fmt.Sprintf(
				"Invalid value at 'threat_types[%d]' (type.googleapis.com/google.cloud.webrisk.v1.ThreatType), %q", i, t)}
		}
		asked[i] = name
	}
	if uri == "" {
		return &refusal{status: http.StatusBadRequest, message: "Invalid argument: 'uri' must be specified."}
	}
	host, ok := hostOf(uri)
	if !ok {
		return &refusal{status: http.StatusBadRequest, message: fmt.Sprintf("Invalid argument: 'uri' %q is not a valid URI.", uri)}
	}

	s.mu.Lock()
	listed := append(append([]string(nil), s.flags[uri]...), s.flags[host]...)
	s.mu.Unlock()
	switch {
	case host == "malware.test" || strings.HasSuffix(host, ".malware.test"):
		listed = append(listed, "MALWARE")
	case host == "phishing.test" || strings.HasSuffix(host, ".phishing.test"):
		listed = append(listed, "SOCIAL_ENGINEERING")
	}
	var found []any
	numbers := strings.Contains(q.Get("$alt"), "enum-encoding=int")
	for i, t := range threatTypes {
		if !slices.Contains(asked, t) || !slices.Contains(listed, t) {
			continue
		}
		if numbers {
			found = append(found, i+1)
		} else {
			found = append(found, t)
		}
	}
	if len(found) == 0 {
		*answer = struct{}{}
		return nil
	}
	*answer = map[string]any{"threat": map[string]any{
		"threatTypes": found,
		"expireTime":  time.Now().Add(TTL).UTC().Format(time.RFC3339Nano),
	}}
	return nil
}

// threatName is the ThreatType a threatTypes value names, by name or by enum number; the
// unspecified type (0) is no list and is refused, as an unknown name is.
func threatName(v string) (string, bool) {
	if slices.Contains(threatTypes, v) {
		return v, true
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= len(threatTypes) {
		return threatTypes[n-1], true
	}
	return "", false
}

// hostOf is the lower-case host of uri, without port or trailing dot. A URI without a scheme
// ("example.com/x") is read as http, as Google reads it.
func hostOf(uri string) (string, bool) {
	s := strings.TrimSpace(uri)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), true
}
