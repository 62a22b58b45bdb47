package openaitest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is an error of the API: OpenAI wraps it in {"error": …}, Mistral sends it at the
// root with object "error".
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   string
	Code    string
	// Detail, for Mistral's 422, is the validation errors its message is made of.
	Detail []detail
}

// detail is one validation error of Mistral's 422 (pydantic's shape).
type detail struct {
	Type  string `json:"type"`
	Loc   []any  `json:"loc"`
	Msg   string `json:"msg"`
	Input any    `json:"input"`
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) writeError(w http.ResponseWriter, status int, e apiError) {
	if s.flavor == Mistral {
		var msg any = e.Message
		if len(e.Detail) > 0 {
			msg = map[string]any{"detail": e.Detail}
		}
		writeJSON(w, status, map[string]any{
			"object": "error", "message": msg, "type": e.Type, "param": nullable(e.Param), "code": nullable(e.Code),
		})
		return
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": e.Message, "type": e.Type, "param": nullable(e.Param), "code": nullable(e.Code),
	}})
}

// invalid answers a request the provider refuses: OpenAI's 400, or Mistral's (400 for its own
// checks, 422 for what its schema refuses).
func (s *Server) invalid(w http.ResponseWriter, e *apiError) {
	status := e.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	if e.Type == "" {
		e.Type = "invalid_request_error"
	}
	s.writeError(w, status, *e)
}

// badParam is OpenAI's 400 for a parameter.
func badParam(param, code, format string, args ...any) *apiError {
	return &apiError{Message: fmt.Sprintf(format, args...), Param: param, Code: code}
}

// schemaError is Mistral's 422: its request schema refused the body.
func schemaError(details ...detail) *apiError {
	return &apiError{Status: http.StatusUnprocessableEntity, Detail: details}
}

func extraForbidden(input any, loc ...any) detail {
	return detail{Type: "extra_forbidden", Loc: append([]any{"body"}, loc...), Msg: "Extra inputs are not permitted", Input: input}
}

func missing(loc ...any) detail {
	return detail{Type: "missing", Loc: append([]any{"body"}, loc...), Msg: "Field required", Input: map[string]any{}}
}

// fail answers a forced failure.
func (s *Server) fail(w http.ResponseWriter, f Failure, model string) {
	header := f.Header
	if header == nil {
		header = s.failureHeader(f.Status)
	}
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if f.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(f.Body))
		return
	}
	e := s.usualError(f.Status, model)
	if f.Message != "" {
		e.Message = f.Message
		e.Detail = nil
	}
	s.writeError(w, f.Status, e)
}

// failureHeader is the headers the provider sends with status: its rate-limit headers on a 429.
func (s *Server) failureHeader(status int) http.Header {
	h := http.Header{}
	if status != http.StatusTooManyRequests {
		return h
	}
	if s.flavor == Mistral {
		h.Set("Retry-After", strconv.Itoa(int(RateLimitWait.Seconds())))
		h.Set("X-Ratelimit-Limit-Req-Minute", "60")
		h.Set("X-Ratelimit-Remaining-Req-Minute", "0")
		return h
	}
	// The requests-per-minute limit is used up; the tokens one is not (its reset does not
	// apply to this 429).
	h.Set("X-Ratelimit-Limit-Requests", "500")
	h.Set("X-Ratelimit-Remaining-Requests", "0")
	h.Set("X-Ratelimit-Reset-Requests", RateLimitWait.String())
	h.Set("X-Ratelimit-Limit-Tokens", "30000")
	h.Set("X-Ratelimit-Remaining-Tokens", "29830")
	h.Set("X-Ratelimit-Reset-Tokens", "340ms")
	return h
}

// usualError is the provider's error for a status.
func (s *Server) usualError(status int, model string) apiError {
	if model == "" {
		model = "unknown"
	}
	if s.flavor == Mistral {
		switch status {
		case http.StatusBadRequest:
			return apiError{Message: "Invalid request", Type: "invalid_request_error"}
		case http.StatusUnauthorized:
			return apiError{Message: "Unauthorized", Type: "authentication_error"}
		case http.StatusNotFound:
			return apiError{Message: "Invalid model: " + model, Type: "invalid_model", Code: "1500"}
		case http.StatusUnprocessableEntity:
			return apiError{Type: "invalid_request_error", Detail: []detail{extraForbidden(true, "stream_options")}}
		case http.StatusTooManyRequests:
			return apiError{Message: "Rate limit exceeded", Type: "rate_limited", Code: "1300"}
		case http.StatusInternalServerError:
			return apiError{Message: "Internal server error", Type: "internal_server_error"}
		case http.StatusServiceUnavailable:
			return apiError{Message: "Service unavailable, the model is overloaded", Type: "service_unavailable"}
		}
		return apiError{Message: http.StatusText(status), Type: "api_error"}
	}
	switch status {
	case http.StatusBadRequest:
		return apiError{Message: "Invalid request: the request body is not valid for this endpoint.", Type: "invalid_request_error"}
	case http.StatusUnauthorized:
		return apiError{Message: "Incorrect API key provided: sk-****************************wxyz. You can find your API key at https://platform.openai.com/account/api-keys.", Type: "invalid_request_error", Code: "invalid_api_key"}
	case http.StatusForbidden:
		return apiError{Message: "You are not allowed to sample from this model", Type: "invalid_request_error"}
	case http.StatusNotFound:
		return apiError{Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), Type: "invalid_request_error", Code: "model_not_found"}
	case http.StatusTooManyRequests:
		return apiError{
			Message: fmt.Sprintf("Rate limit reached for %s in organization org-switchboardtest on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", model, RateLimitWait),
			Type:    "requests", Code: "rate_limit_exceeded",
		}
	case http.StatusInternalServerError:
		return apiError{Message: "The server had an error while processing your request. Sorry about that!", Type: "server_error"}
	case http.StatusServiceUnavailable:
		return apiError{Message: "The server is overloaded or not ready yet.", Type: "server_error"}
	}
	return apiError{Message: http.StatusText(status), Type: "server_error"}
}

// hexID is a deterministic id of n hex digits, different at each call.
func (s *Server) hexID(n int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("id-%d", s.next())))
	return hex.EncodeToString(sum[:])[:n]
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// alnumID is a deterministic id of n letters and digits, different at each call.
func (s *Server) alnumID(n int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("alnum-%d", s.next())))
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[int(sum[i%len(sum)])%len(alnum)]
	}
	return string(b)
}
