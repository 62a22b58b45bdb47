package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// ProviderError is what Anthropic said of a failed call: the Err of its *llm.Error. It keeps
// the error type and the request id (for Anthropic's support) and nothing of the request, so it
// never holds the key.
type ProviderError struct {
	// Status is the HTTP status (for an error event in a stream, that of its type).
	Status int
	// Type is Anthropic's error type: invalid_request_error, rate_limit_error,
	// overloaded_error…
	Type    string
	Message string
	// RequestID is the request-id header of the answer.
	RequestID string
}

func (e *ProviderError) Error() string {
	s := fmt.Sprintf("anthropic: HTTP %d %s: %s", e.Status, e.Type, e.Message)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// statusOfType is the status Anthropic answers each error type with. An error event in the
// middle of a stream comes in an answer whose status was 200; it is classified by its type.
var statusOfType = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// classify makes any failure of the SDK an *llm.Error.
func (c *Client) classify(err error) *llm.Error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return c.fromAPIError(apiErr)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return c.unavailable("the call timed out", err)
	case errors.Is(err, context.Canceled):
		return c.unavailable("the call was canceled", err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return c.unavailable("the call timed out", err)
	}
	// A connection that failed or dropped, an answer that could not be read or decoded: the
	// provider may do better later, or another model now.
	return c.unavailable("the call failed", err)
}

func (c *Client) unavailable(what string, err error) *llm.Error {
	return &llm.Error{Kind: llm.KindUnavailable, Message: c.redact(what + ": " + err.Error()), Err: err}
}

func (c *Client) fromAPIError(e *anthropic.Error) *llm.Error {
	typ := string(e.Type())
	status := e.StatusCode
	if status < 400 {
		if s, ok := statusOfType[typ]; ok {
			status = s
		} else {
			status = http.StatusInternalServerError
		}
	}
	msg := e.Message
	if msg == "" {
		// Not Anthropic's error body (a proxy's page, say): the status says what it can.
		msg = http.StatusText(status)
		if raw := strings.TrimSpace(e.RawJSON()); raw != "" {
			msg += ": " + truncate(raw, 200)
		}
	}
	msg = c.redact(msg)
	var retryAfter time.Duration
	if e.Response != nil {
		retryAfter = retryAfterOf(e.Response.Header, time.Now())
	}
	pe := &ProviderError{Status: status, Type: typ, Message: msg, RequestID: e.RequestID}
	return &llm.Error{Kind: llm.KindOfStatus(status), Status: status, Message: msg, RetryAfter: retryAfter, Err: pe}
}

// redact takes the key out of a text that came from elsewhere (a provider's message that
// quotes it, say).
func (c *Client) redact(s string) string {
	if c.key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.key, "[redacted]")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// rateLimits are the limits Anthropic reports in anthropic-ratelimit-<limit>-{remaining,reset}.
var rateLimits = []string{"requests", "tokens", "input-tokens", "output-tokens"}

// retryAfterOf is the soonest meaningful wait the headers of an answer give at now:
//   - retry-after, in seconds (or an HTTP date);
//   - each anthropic-ratelimit-<limit>-reset (an RFC 3339 time) of a limit that is used up: its
//     -remaining is 0, or absent. A limit with some left is not what refused the call, so its
//     reset says nothing of when to come back.
//
// A wait that is not positive (a time past) is not meaningful. 0 when no header gives one.
func retryAfterOf(h http.Header, now time.Time) time.Duration {
	var best time.Duration
	consider := func(d time.Duration) {
		if d > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	if v := strings.TrimSpace(h.Get("retry-after")); v != "" {
		if secs, err := strconv.ParseFloat(v, 64); err == nil {
			consider(time.Duration(secs * float64(time.Second)))
		} else if t, err := http.ParseTime(v); err == nil {
			consider(t.Sub(now))
		}
	}
	for _, l := range rateLimits {
		reset := strings.TrimSpace(h.Get("anthropic-ratelimit-" + l + "-reset"))
		if reset == "" {
			continue
		}
		if rem := strings.TrimSpace(h.Get("anthropic-ratelimit-" + l + "-remaining")); rem != "" {
			if n, err := strconv.ParseInt(rem, 10, 64); err == nil && n > 0 {
				continue
			}
		}
		if t, err := time.Parse(time.RFC3339, reset); err == nil {
			consider(t.Sub(now))
		}
	}
	return best
}
