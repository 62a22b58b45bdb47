package googletest

import (
	"net/http"
	"strconv"
	"time"
)

// apiError is Google's error body: {"error": {"code", "message", "status", "details"}}.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []any  `json:"details,omitempty"`

	retryAfter string
}

func apiErr(code int, msg string) *apiError {
	return &apiError{Code: code, Message: msg, Status: statusName(code)}
}

func invalid(msg string) *apiError { return apiErr(http.StatusBadRequest, msg) }

func notFound(msg string) *apiError { return apiErr(http.StatusNotFound, msg) }

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	writeJSON(w, e.Code, map[string]any{"error": e})
}

// statusName is the google.rpc.Code Google's HTTP mapping gives a status.
func statusName(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 412:
		return "FAILED_PRECONDITION"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 500:
		return "INTERNAL"
	case 501:
		return "NOT_IMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	default:
		return "UNKNOWN"
	}
}

// usualMessage is the message the Gemini API answers a status with.
func usualMessage(code int) string {
	switch code {
	case 400:
		return "Request contains an invalid argument."
	case 401:
		return "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	case 403:
		return "The caller does not have permission"
	case 404:
		return "Requested entity was not found."
	case 429:
		return "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
	case 500:
		return "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case 503:
		return "The model is overloaded. Please try again later."
	case 504:
		return "Deadline expired before operation could complete."
	default:
		return http.StatusText(code)
	}
}

// DefaultRetryDelay is the retryDelay of a scripted 429 that sets none.
const DefaultRetryDelay = 13 * time.Second

func failure(f Failure) *apiError {
	e := apiErr(f.Status, f.Message)
	if e.Message == "" {
		e.Message = usualMessage(f.Status)
	}
	delay := f.RetryDelay
	if f.Status == http.StatusTooManyRequests {
		e.Details = append(e.Details,
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
				"quotaValue":  "10",
			}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.Help", "links": []any{map[string]any{
				"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
			}}})
		if delay == 0 && !f.NoRetryInfo {
			delay = DefaultRetryDelay
		}
	}
	if delay > 0 && !f.NoRetryInfo {
		e.Details = append(e.Details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": durationJSON(delay)})
	}
	e.retryAfter = f.RetryAfter
	return e
}

// durationJSON is a google.protobuf.Duration in its JSON form ("13s", "0.5s").
func durationJSON(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
