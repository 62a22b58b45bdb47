package webrisk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// Error is Google's refusal of a lookup for good: a bad request (400 INVALID_ARGUMENT) or a key
// it does not take (401 UNAUTHENTICATED, 403 PERMISSION_DENIED; Google answers a key it does not
// know with 400 INVALID_ARGUMENT and the reason API_KEY_INVALID). Asking again the same way
// gets the same answer. Rate limits and Google's own trouble are a *transport.Temporary instead.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is Google's status name (INVALID_ARGUMENT, PERMISSION_DENIED …); empty when the
	// answer had no Google error body.
	Code string
	// Message is Google's message (the API key, were it in it, cut out).
	Message string
	// Reason is the reason of the answer's google.rpc.ErrorInfo detail (API_KEY_INVALID,
	// SERVICE_DISABLED …), when it has one.
	Reason string
}

func (e *Error) Error() string {
	s := "webrisk: uris.search: " + strconv.Itoa(e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// KeyRejected says the refusal is of the API key (unknown, expired, restricted, or its project
// without the Web Risk API) rather than of the request.
func (e *Error) KeyRejected() bool {
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
		return true
	}
	return strings.HasPrefix(e.Reason, "API_KEY_")
}

// googleError is Google's error body (google.rpc.Status as JSON).
type googleError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type       string `json:"@type"`
			Reason     string `json:"reason"`
			RetryDelay string `json:"retryDelay"`
		} `json:"details"`
	} `json:"error"`
}

// refusal is the error of a non-2xx answer: a *transport.Temporary for 429 and 5xx, an *Error
// for the rest.
func (c *Client) refusal(resp *http.Response, raw []byte) error {
	var g googleError
	_ = json.Unmarshal(raw, &g)
	e := &Error{Status: resp.StatusCode, Code: g.Error.Status, Message: c.scrub(g.Error.Message)}
	if e.Code == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	var retryAfter time.Duration
	for _, d := range g.Error.Details {
		switch d.Type {
		case "type.googleapis.com/google.rpc.ErrorInfo":
			e.Reason = d.Reason
		case "type.googleapis.com/google.rpc.RetryInfo":
			if delay, err := time.ParseDuration(d.RetryDelay); err == nil && delay > 0 {
				retryAfter = delay
			}
		}
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return e
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	providerCode := e.Code
	if providerCode == "" {
		providerCode = strconv.Itoa(resp.StatusCode)
	}
	// The *Error's text, not the *Error: errors.As(err, **Error) finds only refusals for good.
	return temporary(errors.New(e.Error()), retryAfter, providerCode)
}

// networkError is trouble on the way to Google: tried again, unless ctx ended, which the error
// then wraps. url.Error repeats the URL, which holds the key and the URI looked up: only its
// cause is kept, and the key is cut from whatever remains.
func (c *Client) networkError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("webrisk: uris.search: %w", ctxErr)
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	if s := err.Error(); c.scrub(s) != s {
		err = errors.New(c.scrub(s))
	}
	return temporary(fmt.Errorf("webrisk: uris.search: %w", err), 0, "")
}

// scrub cuts the API key, as written or as the query string escapes it, out of s.
func (c *Client) scrub(s string) string {
	s = strings.ReplaceAll(s, c.key, "<key>")
	if esc := url.QueryEscape(c.key); esc != c.key {
		s = strings.ReplaceAll(s, esc, "<key>")
	}
	return s
}

func temporary(err error, retryAfter time.Duration, providerCode string) *transport.Temporary {
	return &transport.Temporary{Err: err, RetryAfter: retryAfter, ProviderCode: providerCode}
}
