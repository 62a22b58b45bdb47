package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

func hello(f openaitest.Flavor) llm.Request {
	return llm.Request{Model: model(f), Messages: []llm.Message{{Role: llm.RoleUser, Text: "hello"}}}
}

// Each error class of each provider, streamed or not: its Kind, Status, the provider's own
// message and when to retry.
func TestErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		flavor     openaitest.Flavor
		failure    openaitest.Failure
		kind       llm.Kind
		message    string // the whole message, or its start when it ends with "…"
		retryAfter time.Duration
	}{
		// OpenAI's 429: the requests limit is used up (reset 20s), the tokens one is not (its
		// 340ms reset does not apply).
		{openaitest.OpenAI, openaitest.Failure{Status: 429}, llm.KindRateLimited,
			"Rate limit reached for gpt-4o-mini in organization org-switchboardtest on requests per min (RPM)…", 20 * time.Second},
		{openaitest.OpenAI, openaitest.Failure{Status: 500}, llm.KindUnavailable,
			"The server had an error while processing your request. Sorry about that!", 0},
		{openaitest.OpenAI, openaitest.Failure{Status: 503, Header: http.Header{"Retry-After": {"3"}}}, llm.KindUnavailable,
			"The server is overloaded or not ready yet.", 3 * time.Second},
		{openaitest.OpenAI, openaitest.Failure{Status: 408}, llm.KindUnavailable, "Request Timeout", 0},
		{openaitest.OpenAI, openaitest.Failure{Status: 400}, llm.KindInvalid,
			"Invalid request: the request body is not valid for this endpoint.", 0},
		{openaitest.OpenAI, openaitest.Failure{Status: 403}, llm.KindUnauthorized,
			"You are not allowed to sample from this model", 0},
		{openaitest.OpenAI, openaitest.Failure{Status: 404}, llm.KindInvalid,
			"The model `gpt-4o-mini` does not exist or you do not have access to it.", 0},
		// Other OpenAI-compatible servers' shapes.
		{openaitest.OpenAI, openaitest.Failure{Status: 404, Body: `{"error":{"message":"model \"llama3.1\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`},
			llm.KindInvalid, `model "llama3.1" not found, try pulling it first`, 0},
		{openaitest.OpenAI, openaitest.Failure{Status: 400, Body: `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`},
			llm.KindInvalid, "This model's maximum context length is 4096 tokens.", 0},
		{openaitest.OpenAI, openaitest.Failure{Status: 500, Body: `{"error":"llama runner process has terminated"}`},
			llm.KindUnavailable, "llama runner process has terminated", 0},
		{openaitest.OpenAI, openaitest.Failure{Status: 502, Body: `<html><body>502 Bad Gateway</body></html>`},
			llm.KindUnavailable, "Bad Gateway", 0},

		{openaitest.Mistral, openaitest.Failure{Status: 429}, llm.KindRateLimited, "Rate limit exceeded", 20 * time.Second},
		{openaitest.Mistral, openaitest.Failure{Status: 500}, llm.KindUnavailable, "Internal server error", 0},
		{openaitest.Mistral, openaitest.Failure{Status: 503}, llm.KindUnavailable, "Service unavailable, the model is overloaded", 0},
		{openaitest.Mistral, openaitest.Failure{Status: 400}, llm.KindInvalid, "Invalid request", 0},
		{openaitest.Mistral, openaitest.Failure{Status: 404}, llm.KindInvalid, "Invalid model: mistral-small-latest", 0},
		// Mistral's 422: the message is an object of validation errors.
		{openaitest.Mistral, openaitest.Failure{Status: 422}, llm.KindInvalid, "body.stream_options: Extra inputs are not permitted", 0},
		{openaitest.Mistral, openaitest.Failure{Status: 401, Body: `{"detail":"Unauthorized"}`}, llm.KindUnauthorized, "Unauthorized", 0},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("%s/%d/stream=%v", tc.flavor, tc.failure.Status, stream)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv, c := peer(t, tc.flavor)
				srv.FailWith(tc.failure, 1)
				req := hello(tc.flavor)
				if stream {
					req.OnText = func(string) { t.Error("text streamed from a failure") }
				}
				_, err := c.Chat(context.Background(), req)
				e := llmError(t, err)
				if e.Kind != tc.kind || e.Status != tc.failure.Status || e.RetryAfter != tc.retryAfter {
					t.Fatalf("got kind %s, status %d, retry after %v; want %s, %d, %v", e.Kind, e.Status, e.RetryAfter, tc.kind, tc.failure.Status, tc.retryAfter)
				}
				if prefix, ok := strings.CutSuffix(tc.message, "…"); ok {
					if !strings.HasPrefix(e.Message, prefix) {
						t.Fatalf("message %q, want it to start with %q", e.Message, prefix)
					}
				} else if e.Message != tc.message {
					t.Fatalf("message %q, want %q", e.Message, tc.message)
				}
				if llm.Retryable(err) != (tc.kind == llm.KindRateLimited || tc.kind == llm.KindUnavailable) {
					t.Fatalf("retryable %v for %s", llm.Retryable(err), tc.kind)
				}
				noKey(t, err, srv.APIKey())
				// One request: the SDK's retries are off.
				if n := len(srv.Requests()); n != 1 {
					t.Fatalf("%d requests", n)
				}
			})
		}
	}
}

// A request the provider refuses, as it refuses it (not a forced failure).
func TestProviderRefusal(t *testing.T) {
	t.Parallel()
	srv, c := peer(t, openaitest.OpenAI)
	req := hello(openaitest.OpenAI)
	req.Temperature = ptr(3.0)
	_, err := c.Chat(context.Background(), req)
	e := llmError(t, err)
	want := "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead."
	if e.Kind != llm.KindInvalid || e.Status != 400 || e.Message != want {
		t.Fatalf("error %+v", e)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestAuthFailures(t *testing.T) {
	t.Parallel()
	const wrongKey = "sk-proj-wrongwrongwrong0123456789abcdef"
	cases := []struct {
		flavor  openaitest.Flavor
		key     string
		message string
	}{
		{openaitest.OpenAI, wrongKey, "Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys."},
		{openaitest.OpenAI, "", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys."},
		{openaitest.Mistral, wrongKey, "Unauthorized"},
		{openaitest.Mistral, "", "No API key found in request"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/key=%v", tc.flavor, tc.key != ""), func(t *testing.T) {
			t.Parallel()
			srv := openaitest.New(openaitest.Options{Flavor: tc.flavor})
			t.Cleanup(srv.Close)
			c := client(t, tc.flavor, tc.key, srv.URL(), nil)
			_, err := c.Chat(context.Background(), hello(tc.flavor))
			e := llmError(t, err)
			if e.Kind != llm.KindUnauthorized || e.Status != 401 || e.Message != tc.message {
				t.Fatalf("error %+v", e)
			}
			if tc.key != "" {
				noKey(t, err, tc.key)
				if strings.Contains(err.Error(), tc.key[len(tc.key)-4:]) {
					t.Fatalf("the masked key shows: %v", err)
				}
			}
			if got := srv.LastRequest().Header.Get("Authorization"); tc.key == "" && got != "" {
				t.Fatalf("Authorization %q sent without a key", got)
			}
			_, err = c.Embed(context.Background(), llm.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"x"}})
			if e := llmError(t, err); e.Kind != llm.KindUnauthorized || e.Message != tc.message {
				t.Fatalf("embed error %+v", e)
			}
		})
	}
}

// A provider message quoting the key (a proxy echoing the request, say) loses it.
func TestKeyRedactedFromMessages(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			srv.FailWith(openaitest.Failure{Status: 400, Message: "header Authorization: Bearer " + srv.APIKey() + " is not allowed here"}, 1)
			_, err := c.Chat(context.Background(), hello(f))
			e := llmError(t, err)
			if e.Message != "header Authorization: Bearer [redacted] is not allowed here" {
				t.Fatalf("message %q", e.Message)
			}
			noKey(t, err, srv.APIKey())
		})
	}
}

func TestHangCutByDeadline(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", f, stream), func(t *testing.T) {
				t.Parallel()
				srv, c := peer(t, f)
				srv.Hang(1)
				ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
				defer cancel()
				req := hello(f)
				if stream {
					req.OnText = func(string) {}
				}
				_, err := c.Chat(ctx, req)
				e := llmError(t, err)
				if e.Kind != llm.KindUnavailable || e.Status != 0 || !errors.Is(err, context.DeadlineExceeded) || !llm.Retryable(err) {
					t.Fatalf("error %+v", e)
				}
				noKey(t, err, srv.APIKey())
				// The hang is used up: the next call is answered.
				if _, err := c.Chat(context.Background(), hello(f)); err != nil {
					t.Fatalf("chat after the hang: %v", err)
				}
			})
		}
	}
}

// The HTTP client's own timeout, and a server that is not there, are failures with no answer.
func TestNoAnswer(t *testing.T) {
	t.Parallel()
	t.Run("client timeout", func(t *testing.T) {
		t.Parallel()
		srv := openaitest.New(openaitest.Options{})
		t.Cleanup(srv.Close)
		srv.Hang(1)
		c := client(t, openaitest.OpenAI, srv.APIKey(), srv.URL(), &http.Client{Timeout: 100 * time.Millisecond})
		_, err := c.Chat(context.Background(), hello(openaitest.OpenAI))
		if e := llmError(t, err); e.Kind != llm.KindUnavailable || e.Status != 0 {
			t.Fatalf("error %+v", e)
		}
		noKey(t, err, srv.APIKey())
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := openaitest.New(openaitest.Options{})
		url, key := srv.URL(), srv.APIKey()
		srv.Close()
		c := client(t, openaitest.OpenAI, key, url, nil)
		_, err := c.Chat(context.Background(), hello(openaitest.OpenAI))
		if e := llmError(t, err); e.Kind != llm.KindUnavailable || e.Status != 0 {
			t.Fatalf("error %+v", e)
		}
		_, err = c.Embed(context.Background(), llm.EmbedRequest{Model: "text-embedding-3-small", Inputs: []string{"x"}})
		if e := llmError(t, err); e.Kind != llm.KindUnavailable || e.Status != 0 {
			t.Fatalf("embed error %+v", e)
		}
		noKey(t, err, key)
	})
}

// A tool call whose arguments are not JSON is a failed answer (another model may do better),
// not a call the runtime cannot decode.
func TestBrokenArguments(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		srv, c := peer(t, openaitest.OpenAI)
		srv.Reply(openaitest.Reply{ToolCalls: []openaitest.ToolCall{{Name: "f", Arguments: `{"city": "Par`}}})
		req := hello(openaitest.OpenAI)
		if stream {
			req.OnText = func(string) {}
		}
		_, err := c.Chat(context.Background(), req)
		if e := llmError(t, err); e.Kind != llm.KindUnavailable || !strings.Contains(e.Message, "not a JSON object") {
			t.Fatalf("stream %v: error %+v", stream, e)
		}
	}
}
