package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// errorBody is the one error shape of the API: {code, message, details} at the root.
type errorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

var statusOf = map[apperror.Kind]int{
	apperror.Internal:     http.StatusInternalServerError,
	apperror.Invalid:      http.StatusBadRequest,
	apperror.Unauthorized: http.StatusUnauthorized,
	apperror.Forbidden:    http.StatusForbidden,
	apperror.NotFound:     http.StatusNotFound,
	apperror.Conflict:     http.StatusConflict,
	apperror.RateLimited:  http.StatusTooManyRequests,
	apperror.Unavailable:  http.StatusServiceUnavailable,
}

// writeError renders err. Errors that are not an *apperror.Error are internal: they are logged
// and the caller sees only that something went wrong.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := apperror.As(err)
	if e == nil || e.Kind == apperror.Internal {
		s.log.Error(err, "request failed", "method", r.Method, "path", r.URL.Path)
		e = apperror.New(apperror.Internal, "internal_error", "Something went wrong on our side. Try again later.")
	}
	status := statusOf[e.Kind]
	if e.Kind == apperror.Conflict {
		// Clients retry 409 unless told not to; a real conflict does not go away by retrying.
		w.Header().Set("X-Should-Retry", "false")
	}
	writeJSON(w, status, errorBody{Code: e.Code, Message: e.Message, Details: e.Details})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound() *apperror.Error {
	return apperror.New(apperror.NotFound, "not_found", "No such endpoint or resource.")
}
