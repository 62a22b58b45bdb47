package google

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// The SDK's APIError holds the error body but not the answer's headers; the recorder, the
// client's RoundTripper, keeps the status and headers of the call's last answer in a record
// the call put in its context, for Retry-After.

type recordKey struct{}

type record struct {
	mu     sync.Mutex
	status int
	header http.Header
}

func withRecord(ctx context.Context) (context.Context, *record) {
	r := &record{}
	return context.WithValue(ctx, recordKey{}, r), r
}

func (r *record) get() (int, http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.header
}

type recorder struct{ base http.RoundTripper }

func (t *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err == nil {
		if r, ok := req.Context().Value(recordKey{}).(*record); ok {
			r.mu.Lock()
			r.status, r.header = resp.StatusCode, resp.Header.Clone()
			r.mu.Unlock()
		}
	}
	return resp, err
}

// classify turns a failed call into an *llm.Error: an answer with an error body by its HTTP
// status (a 400 that says the key is invalid, as the Gemini API answers a wrong key, is
// unauthorized), anything else (no answer, a timeout, a broken stream) unavailable with
// status 0.
func (c *Client) classify(ctx context.Context, err error, rec *record) *llm.Error {
	status, header := rec.get()
	var api genai.APIError
	if ptr := (*genai.APIError)(nil); errors.As(err, &ptr) && ptr != nil {
		api = *ptr
	} else if !errors.As(err, &api) {
		return c.transportError(ctx, err)
	}
	// The answer's status wins over the body's code; an error event in a stream (HTTP 200)
	// has only the body's.
	if status < 400 {
		status = api.Code
		header = nil
	}
	if status < 400 {
		return &llm.Error{Kind: llm.KindUnavailable, Message: c.redact(message(api)), Err: c.safe(err)}
	}
	kind := llm.KindOfStatus(status)
	if keyRefused(api.Details) {
		kind = llm.KindUnauthorized
	}
	return &llm.Error{
		Kind:       kind,
		Status:     status,
		Message:    c.redact(message(api)),
		RetryAfter: retryAfter(header, api.Details, time.Now()),
		Err:        c.safe(err),
	}
}

func message(api genai.APIError) string {
	switch {
	case api.Message != "":
		return strings.TrimSpace(api.Message)
	case api.Status != "":
		return api.Status
	default:
		return http.StatusText(api.Code)
	}
}

func (c *Client) transportError(ctx context.Context, err error) *llm.Error {
	msg := c.redact(err.Error())
	var nerr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		msg = "the request timed out"
	case errors.Is(err, context.Canceled):
		msg = "the request was canceled"
	case errors.As(err, &nerr) && nerr.Timeout():
		msg = "the request timed out"
	default:
		var uerr *url.Error
		if errors.As(err, &uerr) {
			msg = "send request: " + c.redact(uerr.Err.Error())
		}
	}
	return &llm.Error{Kind: llm.KindUnavailable, Message: msg, Err: c.safe(err)}
}

// keyRefused reports an error body whose google.rpc.ErrorInfo says the API key is the
// problem (API_KEY_INVALID, API_KEY_EXPIRED…).
func keyRefused(details []map[string]any) bool {
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.ErrorInfo") {
			continue
		}
		if reason, _ := d["reason"].(string); strings.HasPrefix(reason, "API_KEY_") {
			return true
		}
	}
	return false
}

// retryAfter is when the answer said to try again: its Retry-After header (seconds or an
// HTTP date; retry-after-ms too), else the retryDelay of a google.rpc.RetryInfo detail of the
// body ("13s", "0.5s"), which is how the Gemini API says it.
func retryAfter(h http.Header, details []map[string]any, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			if s > 0 {
				return time.Duration(s * float64(time.Second))
			}
		} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
			return t.Sub(now)
		}
	}
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		if delay := protoDuration(d["retryDelay"]); delay > 0 {
			return delay
		}
	}
	return 0
}

// protoDuration reads a google.protobuf.Duration: its JSON form "13.5s", or {seconds, nanos}.
func protoDuration(v any) time.Duration {
	switch v := v.(type) {
	case string:
		s, ok := strings.CutSuffix(strings.TrimSpace(v), "s")
		if !ok {
			return 0
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			return 0
		}
		return time.Duration(f * float64(time.Second))
	case map[string]any:
		var d time.Duration
		switch s := v["seconds"].(type) {
		case float64:
			d += time.Duration(s * float64(time.Second))
		case string:
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				d += time.Duration(n) * time.Second
			}
		}
		if n, ok := v["nanos"].(float64); ok {
			d += time.Duration(n)
		}
		return d
	}
	return 0
}

func (c *Client) redact(s string) string { return redact(s, c.key) }

func redact(s, key string) string {
	if key == "" {
		return s
	}
	s = strings.ReplaceAll(s, key, "[redacted]")
	if q := url.QueryEscape(key); q != key {
		s = strings.ReplaceAll(s, q, "[redacted]")
	}
	return s
}

// safe is err, unless its text holds the key: then only its text, redacted.
func (c *Client) safe(err error) error {
	if strings.Contains(err.Error(), c.key) || strings.Contains(err.Error(), url.QueryEscape(c.key)) {
		return errors.New(c.redact(err.Error()))
	}
	return err
}
