package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// failure is err, a failed call, as an *llm.Error. raw is the provider's answer when there was
// one (the SDK keeps its body readable when the status is an error).
//
// The SDK's own error is never wrapped: it holds the request, whose Authorization header is
// the key.
func (c *Client) failure(ctx context.Context, raw *http.Response, err error) error {
	var apiErr *oai.Error
	if raw == nil && errors.As(err, &apiErr) {
		raw = apiErr.Response
	}
	if raw != nil && raw.StatusCode >= 400 {
		var body []byte
		if raw.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(raw.Body, 64<<10))
		}
		msg := providerMessage(body)
		if msg == "" {
			msg = http.StatusText(raw.StatusCode)
		}
		return &llm.Error{
			Kind:       llm.KindOfStatus(raw.StatusCode),
			Status:     raw.StatusCode,
			Message:    c.redact(msg),
			RetryAfter: retryAfter(raw.StatusCode, raw.Header, time.Now()),
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &llm.Error{Kind: llm.KindUnavailable, Message: "the call ended before the answer: " + ctxErr.Error(), Err: ctxErr}
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error event in the middle of a stream: {"error": {...}} after a 200.
		msg := providerMessage(se.Event.Data)
		if msg == "" {
			msg = "the stream carried an error"
		}
		return &llm.Error{Kind: llm.KindUnavailable, Message: c.redact(msg)}
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return le
	}
	// No answer (a connection refused, a timeout of the HTTP client), an answer that broke off
	// or one that did not decode: another model may do better.
	msg := err.Error()
	if raw != nil {
		msg = "the answer broke off: " + msg
	}
	return &llm.Error{Kind: llm.KindUnavailable, Message: c.redact(msg), Err: safeErr(err)}
}

// safeErr is err when it may be kept in the chain (it holds nothing of the request), else nil.
func safeErr(err error) error {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// invalid is a request the adapter cannot send.
func invalid(format string, args ...any) *llm.Error {
	return &llm.Error{Kind: llm.KindInvalid, Message: fmt.Sprintf(format, args...)}
}

// broken is an answer the adapter cannot use.
func broken(format string, args ...any) *llm.Error {
	return &llm.Error{Kind: llm.KindUnavailable, Message: fmt.Sprintf(format, args...)}
}

// maskedKey is how OpenAI's 401 shows the key it was given.
var maskedKey = regexp.MustCompile(`(?i)(API key provided:\s*)\S+`)

// redact removes the key, and the masked key of OpenAI's 401, from a message.
func (c *Client) redact(msg string) string {
	if len(c.key) >= 4 {
		msg = strings.ReplaceAll(msg, c.key, "[redacted]")
	}
	msg = maskedKey.ReplaceAllString(msg, "${1}[redacted].")
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	return msg
}

// providerMessage is the message of an error body, in the shapes the providers use:
//
//   - OpenAI (and Ollama, LiteLLM, newer vLLM): {"error": {"message": "..."}}; some servers send
//     {"error": "..."}.
//   - Mistral (and older vLLM): {"object": "error", "message": "..."} at the root, the message
//     an object {"detail": [...]} when its schema refused the body (422).
//   - Mistral's gateway and FastAPI servers: {"message": "Unauthorized"}, {"detail": "..."} or
//     {"detail": [{"loc": [...], "msg": "..."}]}.
func providerMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	for _, raw := range []json.RawMessage{v.Error, v.Message, v.Detail} {
		if m := messageText(raw); m != "" {
			return m
		}
	}
	return ""
}

// messageText is the text of a message field: a string, an object with a message or detail,
// or a list of validation errors.
func messageText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		s = strings.TrimSpace(s)
		// Mistral once sent its 422 detail JSON-encoded in the message string.
		if strings.HasPrefix(s, "{") && json.Valid([]byte(s)) {
			if m := messageText(json.RawMessage(s)); m != "" {
				return m
			}
		}
		return s
	case '{':
		var o struct {
			Message json.RawMessage `json:"message"`
			Detail  json.RawMessage `json:"detail"`
			Msg     string          `json:"msg"`
		}
		if json.Unmarshal(raw, &o) != nil {
			return ""
		}
		if m := messageText(o.Message); m != "" {
			return m
		}
		if m := messageText(o.Detail); m != "" {
			return m
		}
		return o.Msg
	case '[':
		var items []struct {
			Loc     []any  `json:"loc"`
			Msg     string `json:"msg"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &items) != nil {
			return ""
		}
		var parts []string
		for _, it := range items {
			msg := it.Msg
			if msg == "" {
				msg = it.Message
			}
			if msg == "" {
				continue
			}
			if len(it.Loc) > 0 {
				loc := make([]string, len(it.Loc))
				for i, l := range it.Loc {
					loc[i] = fmt.Sprint(l)
				}
				msg = strings.Join(loc, ".") + ": " + msg
			}
			parts = append(parts, msg)
		}
		return strings.Join(parts, "; ")
	}
	return ""
}

// retryAfter is when the provider said to try again, the largest of what applies:
//
//   - retry-after-ms (milliseconds) and Retry-After (seconds or an HTTP date), whatever the status;
//   - on a 429, OpenAI's x-ratelimit-reset-requests and x-ratelimit-reset-tokens (durations as
//     1s, 6m0s, 20ms): only the reset of a limit that is used up (its x-ratelimit-remaining-*
//     is 0) when one is; both when neither says so (a request larger than the tokens left).
func retryAfter(status int, h http.Header, now time.Time) time.Duration {
	var d time.Duration
	take := func(x time.Duration) {
		if x > d {
			d = x
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			take(seconds(f / 1000))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			take(seconds(f))
		} else if t, err := http.ParseTime(v); err == nil {
			take(t.Sub(now))
		}
	}
	if status == http.StatusTooManyRequests {
		requestsOut := strings.TrimSpace(h.Get("X-Ratelimit-Remaining-Requests")) == "0"
		tokensOut := strings.TrimSpace(h.Get("X-Ratelimit-Remaining-Tokens")) == "0"
		known := requestsOut || tokensOut
		if requestsOut || !known {
			take(reset(h.Get("X-Ratelimit-Reset-Requests")))
		}
		if tokensOut || !known {
			take(reset(h.Get("X-Ratelimit-Reset-Tokens")))
		}
	}
	return d
}

// reset is an x-ratelimit-reset-* duration, 0 when it does not parse.
func reset(v string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// seconds is f seconds as a duration; 0 for a negative or absurd value.
func seconds(f float64) time.Duration {
	if math.IsNaN(f) || f <= 0 || f > 365*24*3600 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}
