package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// errorBody is the one error shape of the API, on v1 and v2 alike: {code, message, details} at
// the root. (The spec allows some v1 authentication errors wrapped as {error: {...}}; Switchboard
// never wraps, so every client reads the same shape.)
type errorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

var statusOf = map[apperror.Kind]int{
	apperror.Internal:         http.StatusInternalServerError,
	apperror.Invalid:          http.StatusBadRequest,
	apperror.Unauthorized:     http.StatusUnauthorized,
	apperror.Forbidden:        http.StatusForbidden,
	apperror.NotFound:         http.StatusNotFound,
	apperror.MethodNotAllowed: http.StatusMethodNotAllowed,
	apperror.Conflict:         http.StatusConflict,
	apperror.TooLarge:         http.StatusRequestEntityTooLarge,
	apperror.RateLimited:      http.StatusTooManyRequests,
	apperror.Unavailable:      http.StatusServiceUnavailable,
	apperror.PaymentRequired:  http.StatusPaymentRequired,
}

// Codes of errors about the HTTP exchange itself, which only this package raises: apperror's kinds
// are the domain's, and none of them is 415 or 408.
const (
	codeUnsupportedMediaType = "unsupported_media_type"
	codeRequestTimeout       = "request_timeout"
)

var statusOfCode = map[string]int{
	codeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	codeRequestTimeout:       http.StatusRequestTimeout,
}

// writeError renders err. Errors that are not an *apperror.Error are internal: they are logged
// and the caller sees only that something went wrong.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := apperror.As(err)
	if e == nil || e.Kind == apperror.Internal {
		s.log.Error(err, "request failed", "method", r.Method, "path", r.URL.Path)
		e = apperror.New(apperror.Internal, "internal_error", "Something went wrong on our side. Try again later.")
	}
	body := errorBody{Code: e.Code, Message: e.Message, Details: e.Details}
	// v2: every invalid_request lists its invalid fields, even when only the body as a whole is.
	if e.Code == "invalid_request" && isV2(r) {
		if _, ok := body.Details["errors"]; !ok {
			body.Details = withDetail(body.Details, "errors", []apperror.FieldError{{Path: "", Message: e.Message}})
		}
	}
	if e.Kind == apperror.Conflict || e.Code == "daily_limit_exceeded" || e.Code == "a2p_limit_exceeded" {
		// Clients retry 409 and 429 unless told not to; a real conflict, or a ceiling that
		// resets at midnight or on the 1st, does not go away by retrying.
		w.Header().Set("X-Should-Retry", "false")
	}
	status := statusOf[e.Kind]
	if st, ok := statusOfCode[e.Code]; ok {
		status = st
	}
	if status == http.StatusRequestTimeout {
		// The connection's read deadline has passed: it cannot carry another request.
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, status, body)
}

func withDetail(details map[string]any, key string, value any) map[string]any {
	out := make(map[string]any, len(details)+1)
	for k, v := range details {
		out[k] = v
	}
	out[key] = value
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"code":"internal_error","message":"Something went wrong on our side. Try again later."}`)
		status = http.StatusInternalServerError
	}
	b = append(b, '\n')
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func isV2(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v2/") }

func notFound() *apperror.Error {
	return apperror.New(apperror.NotFound, "not_found", "No such endpoint or resource.")
}
