package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/anthropic"
	"github.com/switchboard-io/switchboard/internal/llm/anthropic/anthropictest"
)

const model = "claude-sonnet-5"

func newPair(t *testing.T) (*anthropictest.Server, *anthropic.Client) {
	t.Helper()
	peer := anthropictest.NewServer(t, anthropictest.Options{})
	return peer, newClient(t, peer.URL(), peer.APIKey())
}

func newClient(t *testing.T, baseURL, key string) *anthropic.Client {
	t.Helper()
	c, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: baseURL, HTTPClient: &http.Client{Timeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func user(text string) llm.Message { return llm.Message{Role: llm.RoleUser, Text: text} }

func llmError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return e
}

func jsonEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: want %s is not JSON: %v", what, want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s = %s, want %s", what, gb, wb)
	}
}

func TestPlainText(t *testing.T) {
	t.Parallel()
	peer, c := newPair(t)
	resp, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("Hello there")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "You said: Hello there" || resp.Stop != llm.StopEnd || resp.Model != model || len(resp.ToolCalls) != 0 {
		t.Errorf("response = %+v", resp)
	}
	if resp.Usage.InputTokens <= 0 || resp.Usage.OutputTokens != 4 {
		t.Errorf("usage = %+v, want input > 0 and output 4 (a token a word)", resp.Usage)
	}
	reqs := peer.Requests()
	if len(reqs) != 1 {
		t.Fatalf("peer received %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Version != anthropictest.Version || r.Auth != "bearer" || r.Stream {
		t.Errorf("version %q, auth %q, stream %v; want %s, bearer, not streamed", r.Version, r.Auth, r.Stream, anthropictest.Version)
	}
	if r.Body.MaxTokens == nil || *r.Body.MaxTokens != llm.DefaultMaxTokens {
		t.Errorf("max_tokens = %v, want the default %d", r.Body.MaxTokens, llm.DefaultMaxTokens)
	}
	if len(r.Body.System) != 0 || r.Body.Temperature != nil || r.Body.Tools != nil {
		t.Errorf("system %v, temperature %v, tools %v: want none sent", r.Body.System, r.Body.Temperature, r.Body.Tools)
	}
	if len(r.Body.Messages) != 1 || r.Body.Messages[0].Role != "user" || r.Body.Messages[0].Content.Text() != "Hello there" {
		t.Errorf("messages = %+v", r.Body.Messages)
	}
}

func TestAnswersAreMapped(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reply anthropictest.Reply
		want  llm.Response
	}{
		{"end_turn", anthropictest.Reply{Text: "Done.", StopReason: "end_turn", Usage: &anthropictest.Usage{InputTokens: 11, OutputTokens: 2}},
			llm.Response{Text: "Done.", Stop: llm.StopEnd, Usage: llm.Usage{InputTokens: 11, OutputTokens: 2}, Model: model}},
		{"stop_sequence", anthropictest.Reply{Text: "A", StopReason: "stop_sequence", Usage: &anthropictest.Usage{InputTokens: 1, OutputTokens: 1}},
			llm.Response{Text: "A", Stop: llm.StopEnd, Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}, Model: model}},
		{"max_tokens", anthropictest.Reply{Text: "It was the best of", StopReason: "max_tokens", Usage: &anthropictest.Usage{InputTokens: 5, OutputTokens: 5}},
			llm.Response{Text: "It was the best of", Stop: llm.StopMaxTokens, Usage: llm.Usage{InputTokens: 5, OutputTokens: 5}, Model: model}},
		{"model_context_window_exceeded", anthropictest.Reply{Text: "cut", StopReason: "model_context_window_exceeded", Usage: &anthropictest.Usage{InputTokens: 9, OutputTokens: 1}},
			llm.Response{Text: "cut", Stop: llm.StopMaxTokens, Usage: llm.Usage{InputTokens: 9, OutputTokens: 1}, Model: model}},
		{"refusal", anthropictest.Reply{Text: "I can't", StopReason: "refusal", Usage: &anthropictest.Usage{InputTokens: 3, OutputTokens: 2}},
			llm.Response{Text: "I can't", Stop: llm.StopFiltered, Usage: llm.Usage{InputTokens: 3, OutputTokens: 2}, Model: model}},
		{"cached input counts", anthropictest.Reply{Text: "ok", Usage: &anthropictest.Usage{InputTokens: 10, CacheCreationInputTokens: 100, CacheReadInputTokens: 1000, OutputTokens: 1}},
			llm.Response{Text: "ok", Stop: llm.StopEnd, Usage: llm.Usage{InputTokens: 1110, OutputTokens: 1}, Model: model}},
		{"model named by the API", anthropictest.Reply{Text: "hi", Model: model + "-20261101", Usage: &anthropictest.Usage{InputTokens: 1, OutputTokens: 1}},
			llm.Response{Text: "hi", Stop: llm.StopEnd, Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}, Model: model + "-20261101"}},
	}
	for _, tc := range cases {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streamed=%v", tc.name, streamed), func(t *testing.T) {
				t.Parallel()
				peer, c := newPair(t)
				peer.Enqueue(tc.reply)
				req := llm.Request{Model: model, Messages: []llm.Message{user("go")}}
				if streamed {
					req.OnText = func(string) {}
				}
				resp, err := c.Chat(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != tc.want.Text || resp.Stop != tc.want.Stop || resp.Usage != tc.want.Usage || resp.Model != tc.want.Model || len(resp.ToolCalls) != 0 {
					t.Errorf("response = %+v, want %+v", *resp, tc.want)
				}
			})
		}
	}
}

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}`)

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	peer, c := newPair(t)
	temp := 1.4
	tools := []llm.Tool{
		{Name: "get_weather", Description: "Current weather of a city", Parameters: weatherSchema},
		{Name: "get_time", Parameters: json.RawMessage(`{"properties":{"tz":{"type":"string"}}}`)},
	}
	base := llm.Request{Model: model, System: "You are a terse assistant.", Tools: tools, Temperature: &temp, MaxTokens: 300}

	// Step 1: the model calls two tools.
	peer.Enqueue(anthropictest.Reply{
		Text: "Let me check.",
		ToolUses: []anthropictest.ToolUse{
			{ID: "toolu_01A", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "toolu_01B", Name: "get_time", Input: json.RawMessage(`{"tz":"Europe/Paris"}`)},
		},
		Usage: &anthropictest.Usage{InputTokens: 210, OutputTokens: 40},
	})
	first := base
	first.Messages = []llm.Message{user("Weather and time in Paris?")}
	resp, err := c.Chat(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Stop != llm.StopToolCalls || resp.Text != "Let me check." || len(resp.ToolCalls) != 2 {
		t.Fatalf("first answer = %+v", resp)
	}
	if resp.ToolCalls[0].ID != "toolu_01A" || resp.ToolCalls[0].Name != "get_weather" ||
		resp.ToolCalls[1].ID != "toolu_01B" || resp.ToolCalls[1].Name != "get_time" {
		t.Errorf("tool calls = %+v", resp.ToolCalls)
	}
	jsonEqual(t, "first call's arguments", resp.ToolCalls[0].Arguments, []byte(`{"city":"Paris"}`))
	jsonEqual(t, "second call's arguments", resp.ToolCalls[1].Arguments, []byte(`{"tz":"Europe/Paris"}`))
	if resp.Usage != (llm.Usage{InputTokens: 210, OutputTokens: 40}) {
		t.Errorf("usage = %+v", resp.Usage)
	}

	// Step 2: the results go back (one failed) and the model answers.
	second := base
	second.Messages = []llm.Message{
		user("Weather and time in Paris?"),
		{Role: llm.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls},
		{Role: llm.RoleTool, ToolCallID: "toolu_01A", ToolName: "get_weather", Text: "18°C, clear"},
		{Role: llm.RoleTool, ToolCallID: "toolu_01B", ToolName: "get_time", Text: "clock service down", IsError: true},
	}
	final, err := c.Chat(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	wantText := `Tool results: toolu_01A returned "18°C, clear"; toolu_01B failed "clock service down"`
	if final.Text != wantText || final.Stop != llm.StopEnd || len(final.ToolCalls) != 0 {
		t.Errorf("final answer = %+v, want text %q", final, wantText)
	}

	// The wire of both requests.
	reqs := peer.Requests()
	if len(reqs) != 2 {
		t.Fatalf("peer received %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		b := r.Body
		if b.SystemText() != "You are a terse assistant." {
			t.Errorf("request %d: system = %q", i, b.SystemText())
		}
		for _, m := range b.Messages {
			if m.Role == "system" || strings.Contains(m.Content.Text(), "terse assistant") {
				t.Errorf("request %d: the system prompt is in the messages: %+v", i, m)
			}
		}
		if b.MaxTokens == nil || *b.MaxTokens != 300 {
			t.Errorf("request %d: max_tokens = %v, want 300", i, b.MaxTokens)
		}
		// API version 2026-10-21 has no temperature: it must not be sent at all.
		if b.Temperature != nil || b.TopP != nil || b.TopK != nil || strings.Contains(string(r.Raw), "temperature") {
			t.Errorf("request %d sent a sampling parameter: %s", i, r.Raw)
		}
		if len(b.Tools) != 2 || b.Tools[0].Name != "get_weather" || b.Tools[0].Description != "Current weather of a city" || b.Tools[1].Name != "get_time" || b.Tools[1].Description != "" {
			t.Fatalf("request %d: tools = %+v", i, b.Tools)
		}
		jsonEqual(t, "get_weather's input_schema", b.Tools[0].InputSchema, weatherSchema)
		jsonEqual(t, "get_time's input_schema", b.Tools[1].InputSchema, []byte(`{"type":"object","properties":{"tz":{"type":"string"}}}`))
	}
	msgs := reqs[1].Body.Messages
	if len(msgs) != 3 {
		t.Fatalf("second request has %d messages, want 3 (user, assistant, user with both results): %s", len(msgs), reqs[1].Raw)
	}
	if msgs[0].Role != "user" || msgs[1].Role != "assistant" || msgs[2].Role != "user" {
		t.Errorf("roles = %s, %s, %s; want user, assistant, user", msgs[0].Role, msgs[1].Role, msgs[2].Role)
	}
	a := msgs[1].Content
	if len(a) != 3 || a[0].Type != "text" || a[0].Text != "Let me check." ||
		a[1].Type != "tool_use" || a[1].ID != "toolu_01A" || a[1].Name != "get_weather" ||
		a[2].Type != "tool_use" || a[2].ID != "toolu_01B" || a[2].Name != "get_time" {
		t.Fatalf("assistant turn = %+v", a)
	}
	jsonEqual(t, "tool_use input", a[1].Input, []byte(`{"city":"Paris"}`))
	res := msgs[2].Content
	if len(res) != 2 || res[0].Type != "tool_result" || res[0].ToolUseID != "toolu_01A" || res[0].Content.Text() != "18°C, clear" ||
		res[1].Type != "tool_result" || res[1].ToolUseID != "toolu_01B" || res[1].Content.Text() != "clock service down" {
		t.Fatalf("results turn = %+v", res)
	}
	if res[0].IsError != nil && *res[0].IsError {
		t.Errorf("the first result is marked is_error")
	}
	if res[1].IsError == nil || !*res[1].IsError {
		t.Errorf("the failed result is not marked is_error")
	}
}

func TestMessagesAreGroupedAsTheAPIWants(t *testing.T) {
	t.Parallel()
	peer, c := newPair(t)
	call := llm.ToolCall{ID: "toolu_X", Name: "lookup", Arguments: json.RawMessage(`{"q":"a"}`)}
	msgs := []llm.Message{
		user("find a"),
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call, {ID: "toolu_Y", Name: "lookup"}}}, // no text, empty arguments
		{Role: llm.RoleTool, ToolCallID: "toolu_X", Text: "found a"},
		{Role: llm.RoleTool, ToolCallID: "toolu_Y"}, // a result without text
		user("and b?"),
		{Role: llm.RoleAssistant}, // empty: left out
		user("well?"),
	}
	if _, err := c.Chat(context.Background(), llm.Request{Model: model, Tools: []llm.Tool{{Name: "lookup"}}, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	got := peer.Requests()[0].Body.Messages
	if len(got) != 4 {
		t.Fatalf("messages = %+v, want 4 turns", got)
	}
	a := got[1].Content
	if len(a) != 2 || a[0].Type != "tool_use" || a[1].Type != "tool_use" {
		t.Fatalf("assistant turn = %+v, want two tool_use blocks and no empty text", a)
	}
	jsonEqual(t, "empty arguments", a[1].Input, []byte(`{}`))
	r := got[2].Content
	if len(r) != 3 || r[0].ToolUseID != "toolu_X" || r[1].ToolUseID != "toolu_Y" || len(r[1].Content) != 0 || r[2].Type != "text" || r[2].Text != "and b?" {
		t.Fatalf("results turn = %+v, want both results then the user's text", r)
	}
	if got[3].Role != "user" || got[3].Content.Text() != "well?" {
		t.Fatalf("last turn = %+v", got[3])
	}
}

func TestStreaming(t *testing.T) {
	t.Parallel()
	peer, c := newPair(t)
	peer.Enqueue(anthropictest.Reply{
		TextDeltas: []string{"Chec", "king ", "the ", "wéather…"},
		ToolUses: []anthropictest.ToolUse{
			{ID: "toolu_S1", Name: "get_weather", Input: json.RawMessage(`{"city":"Zürich","days":[1,2,3]}`)},
			{ID: "toolu_S2", Name: "get_weather", Input: json.RawMessage(`{"city":"Bern"}`)},
		},
		Usage: &anthropictest.Usage{InputTokens: 120, CacheReadInputTokens: 5, OutputTokens: 33},
	})
	var deltas []string
	resp, err := c.Chat(context.Background(), llm.Request{
		Model: model, Messages: []llm.Message{user("weather?")},
		Tools:  []llm.Tool{{Name: "get_weather", Parameters: weatherSchema}},
		OnText: func(s string) { deltas = append(deltas, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Chec", "king ", "the ", "wéather…"}; fmt.Sprint(deltas) != fmt.Sprint(want) {
		t.Errorf("OnText got %q, want %q", deltas, want)
	}
	if resp.Text != strings.Join(deltas, "") {
		t.Errorf("text %q is not the deltas joined %q", resp.Text, strings.Join(deltas, ""))
	}
	if resp.Stop != llm.StopToolCalls || len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "toolu_S1" || resp.ToolCalls[1].ID != "toolu_S2" || resp.ToolCalls[1].Name != "get_weather" {
		t.Fatalf("response = %+v", resp)
	}
	jsonEqual(t, "streamed arguments", resp.ToolCalls[0].Arguments, []byte(`{"city":"Zürich","days":[1,2,3]}`))
	jsonEqual(t, "streamed arguments", resp.ToolCalls[1].Arguments, []byte(`{"city":"Bern"}`))
	if resp.Usage != (llm.Usage{InputTokens: 125, OutputTokens: 33}) || resp.Model != model {
		t.Errorf("usage %+v, model %q", resp.Usage, resp.Model)
	}
	if r := peer.Requests()[0]; !r.Stream {
		t.Errorf("the request did not ask for a stream: %s", r.Raw)
	}
}

func TestStreamingDefaultReply(t *testing.T) {
	t.Parallel()
	_, c := newPair(t)
	var deltas []string
	resp, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("one two three")},
		OnText: func(s string) { deltas = append(deltas, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != "You said: one two three" || resp.Text != "You said: one two three" || resp.Stop != llm.StopEnd {
		t.Errorf("deltas %q, response %+v", deltas, resp)
	}
	if resp.Usage.InputTokens <= 0 || resp.Usage.OutputTokens != int64(len(deltas)) {
		t.Errorf("usage = %+v with %d deltas", resp.Usage, len(deltas))
	}
}

// A max_tokens the SDK expects to take over ten minutes is streamed even without OnText, and
// answers all the same.
func TestLongAnswerIsStreamedUnderTheHood(t *testing.T) {
	t.Parallel()
	peer, c := newPair(t)
	resp, err := c.Chat(context.Background(), llm.Request{Model: model, MaxTokens: 64000, Messages: []llm.Message{user("write a lot")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "You said: write a lot" {
		t.Errorf("text = %q", resp.Text)
	}
	if r := peer.Requests()[0]; !r.Stream || *r.Body.MaxTokens != 64000 {
		t.Errorf("stream %v, max_tokens %d", r.Stream, *r.Body.MaxTokens)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		fail       anthropictest.Failure
		stream     bool
		kind       llm.Kind
		status     int
		message    string
		retryAfter [2]time.Duration // bounds, inclusive
	}{
		{"400 invalid request", anthropictest.Failure{Status: 400, Message: "messages.0: unknown model"}, false,
			llm.KindInvalid, 400, "messages.0: unknown model", [2]time.Duration{}},
		{"402 billing", anthropictest.Failure{Status: 402}, false,
			llm.KindInvalid, 402, "Your credit balance is too low to access the Anthropic API.", [2]time.Duration{}},
		{"403 permission", anthropictest.Failure{Status: 403}, false,
			llm.KindUnauthorized, 403, "Your API key does not have permission to use the specified resource.", [2]time.Duration{}},
		{"404 unknown model", anthropictest.Failure{Status: 404, Message: "model: claude-nope"}, false,
			llm.KindInvalid, 404, "model: claude-nope", [2]time.Duration{}},
		{"429 rate limited", anthropictest.Failure{Status: 429, RetryAfter: 20 * time.Second, Reset: 30 * time.Second}, false,
			llm.KindRateLimited, 429, "This request would exceed your organization's rate limit of 50,000 input tokens per minute.", [2]time.Duration{20 * time.Second, 20 * time.Second}},
		{"429 streamed", anthropictest.Failure{Status: 429, RetryAfter: 4 * time.Second, Reset: 30 * time.Second}, true,
			llm.KindRateLimited, 429, "This request would exceed your organization's rate limit of 50,000 input tokens per minute.", [2]time.Duration{4 * time.Second, 4 * time.Second}},
		{"500 api error", anthropictest.Failure{Status: 500}, false,
			llm.KindUnavailable, 500, "Internal server error", [2]time.Duration{}},
		{"503", anthropictest.Failure{Status: 503, RetryAfter: 3 * time.Second}, false,
			llm.KindUnavailable, 503, "Service temporarily unavailable", [2]time.Duration{3 * time.Second, 3 * time.Second}},
		{"504 timeout", anthropictest.Failure{Status: 504}, false,
			llm.KindUnavailable, 504, "Request timed out", [2]time.Duration{}},
		{"529 overloaded", anthropictest.Failure{Status: 529}, false,
			llm.KindUnavailable, 529, "Overloaded", [2]time.Duration{}},
		{"529 overloaded with retry-after", anthropictest.Failure{Status: 529, RetryAfter: 9 * time.Second}, true,
			llm.KindUnavailable, 529, "Overloaded", [2]time.Duration{9 * time.Second, 9 * time.Second}},
		{"overloaded mid-stream", anthropictest.Failure{Status: 529, MidStream: true}, true,
			llm.KindUnavailable, 529, "Overloaded", [2]time.Duration{}},
		{"rate limited mid-stream", anthropictest.Failure{Status: 429, Message: "slow down", MidStream: true}, true,
			llm.KindRateLimited, 429, "slow down", [2]time.Duration{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			peer, c := newPair(t)
			peer.Fail(tc.fail)
			req := llm.Request{Model: model, Messages: []llm.Message{user("hi")}}
			var deltas int
			if tc.stream {
				req.OnText = func(string) { deltas++ }
			}
			resp, err := c.Chat(context.Background(), req)
			if err == nil {
				t.Fatalf("no error, response %+v", resp)
			}
			e := llmError(t, err)
			if e.Kind != tc.kind || e.Status != tc.status || e.Message != tc.message {
				t.Errorf("error = {%s %d %q}, want {%s %d %q}", e.Kind, e.Status, e.Message, tc.kind, tc.status, tc.message)
			}
			if e.RetryAfter < tc.retryAfter[0] || e.RetryAfter > tc.retryAfter[1] {
				t.Errorf("RetryAfter = %v, want %v..%v", e.RetryAfter, tc.retryAfter[0], tc.retryAfter[1])
			}
			if llm.Retryable(err) != (tc.kind == llm.KindRateLimited || tc.kind == llm.KindUnavailable) {
				t.Errorf("Retryable = %v for %s", llm.Retryable(err), tc.kind)
			}
			var pe *anthropic.ProviderError
			if !errors.As(err, &pe) || pe.RequestID == "" || pe.Type == "" {
				t.Errorf("the provider's error type and request id are not kept: %#v", e.Err)
			}
			// No retries of the SDK's own: the runtime decides.
			if n := len(peer.Requests()); n != 1 {
				t.Errorf("peer received %d requests, want 1 (no retries)", n)
			}
			if deltas != 0 {
				t.Errorf("OnText was called %d times", deltas)
			}
		})
	}
}

// The wait is the soonest meaningful one: the reset of the limit that is used up, when it is
// sooner than retry-after; the resets of limits with some left (a second away) do not count.
func TestRetryAfterIsTheSoonestMeaningfulWait(t *testing.T) {
	t.Parallel()
	peer, c := newPair(t)
	peer.Fail(anthropictest.Failure{Status: 429, RetryAfter: 30 * time.Second, Limit: "output-tokens", Reset: 12 * time.Second})
	_, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}})
	e := llmError(t, err)
	// The reset is an RFC 3339 time in whole seconds: up to a second sooner.
	if e.Kind != llm.KindRateLimited || e.RetryAfter < 10*time.Second || e.RetryAfter > 12*time.Second {
		t.Errorf("error = %+v, want rate_limited with RetryAfter about 12s", e)
	}
}

func TestWrongKey(t *testing.T) {
	t.Parallel()
	peer := anthropictest.NewServer(t, anthropictest.Options{})
	const key = "sk-ant-api03-WRONG-zzzzzzzzzzzzzzzz"
	c := newClient(t, peer.URL(), key)
	_, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}})
	e := llmError(t, err)
	if e.Kind != llm.KindUnauthorized || e.Status != 401 || e.Message != "invalid x-api-key" || e.RetryAfter != 0 || llm.Retryable(err) {
		t.Errorf("error = %+v", e)
	}
	assertNoKey(t, err, key)
}

func TestHangCutByDeadline(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			t.Parallel()
			peer, c := newPair(t)
			peer.Hang(1)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req := llm.Request{Model: model, Messages: []llm.Message{user("hi")}}
			if streamed {
				req.OnText = func(string) {}
			}
			start := time.Now()
			_, err := c.Chat(ctx, req)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the call took %v after a 300ms deadline", took)
			}
			e := llmError(t, err)
			if e.Kind != llm.KindUnavailable || e.Status != 0 || !errors.Is(err, context.DeadlineExceeded) || !llm.Retryable(err) {
				t.Errorf("error = %+v (%v)", e, err)
			}
			if len(peer.Requests()) != 1 {
				t.Errorf("peer received %d requests", len(peer.Requests()))
			}
			// The peer answers again once the hang is over.
			if _, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}}); err != nil {
				t.Errorf("after the hang: %v", err)
			}
		})
	}
}

// A stream that stalls part-way: the text so far went to OnText, the deadline ends the call.
func TestStreamStalledMidAnswer(t *testing.T) {
	t.Parallel()
	peer, c := newPair(t)
	peer.Enqueue(anthropictest.Reply{TextDeltas: []string{"Once ", "upon"}, Stall: true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var deltas []string
	_, err := c.Chat(ctx, llm.Request{Model: model, Messages: []llm.Message{user("a story")}, OnText: func(s string) { deltas = append(deltas, s) }})
	e := llmError(t, err)
	if e.Kind != llm.KindUnavailable || e.Status != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %+v (%v)", e, err)
	}
	if fmt.Sprint(deltas) != fmt.Sprint([]string{"Once "}) {
		t.Errorf("OnText got %q before the stall", deltas)
	}
}

func TestConnectionFailure(t *testing.T) {
	t.Parallel()
	peer := anthropictest.New(anthropictest.Options{})
	url, key := peer.URL(), peer.APIKey()
	peer.Close()
	c := newClient(t, url, key)
	_, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}})
	e := llmError(t, err)
	if e.Kind != llm.KindUnavailable || e.Status != 0 || !llm.Retryable(err) {
		t.Errorf("error = %+v", e)
	}
	assertNoKey(t, err, key)
}

func TestInvalidRequestsAreRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	call := llm.ToolCall{ID: "toolu_1", Name: "f", Arguments: json.RawMessage(`{}`)}
	cases := []struct {
		name string
		req  llm.Request
	}{
		{"no model", llm.Request{Messages: []llm.Message{user("hi")}}},
		{"no messages", llm.Request{Model: model}},
		{"unknown role", llm.Request{Model: model, Messages: []llm.Message{{Role: "system", Text: "x"}}}},
		{"empty user message", llm.Request{Model: model, Messages: []llm.Message{user("")}}},
		{"arguments not an object", llm.Request{Model: model, Messages: []llm.Message{user("hi"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "f", Arguments: json.RawMessage(`[1]`)}}}}}},
		{"tool call without id", llm.Request{Model: model, Messages: []llm.Message{user("hi"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "f"}}}}}},
		{"result without call id", llm.Request{Model: model, Messages: []llm.Message{user("hi"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, {Role: llm.RoleTool, Text: "r"}}}},
		{"parameters not an object", llm.Request{Model: model, Messages: []llm.Message{user("hi")},
			Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`"string"`)}}}},
		{"parameters of another type", llm.Request{Model: model, Messages: []llm.Message{user("hi")},
			Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"array"}`)}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			peer, c := newPair(t)
			_, err := c.Chat(context.Background(), tc.req)
			e := llmError(t, err)
			if e.Kind != llm.KindInvalid || e.Status != 0 || e.Message == "" {
				t.Errorf("error = %+v", e)
			}
			if n := len(peer.Requests()); n != 0 {
				t.Errorf("peer received %d requests", n)
			}
		})
	}
}

// The API's own 400 for a request the adapter lets through (a tool name it refuses).
func TestProviderRefusesRequest(t *testing.T) {
	t.Parallel()
	_, c := newPair(t)
	_, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}, Tools: []llm.Tool{{Name: "no spaces allowed"}}})
	e := llmError(t, err)
	if e.Kind != llm.KindInvalid || e.Status != 400 || !strings.HasPrefix(e.Message, "tools.0.custom.name: ") {
		t.Errorf("error = %+v", e)
	}
}

func assertNoKey(t *testing.T, err error, key string) {
	t.Helper()
	var texts []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		texts = append(texts, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
	}
	for _, s := range texts {
		if strings.Contains(s, key) {
			t.Fatalf("the key is in an error: %s", s)
		}
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(*anthropictest.Server)
	}{
		{"provider quotes the key", func(p *anthropictest.Server) {
			p.Fail(anthropictest.Failure{Status: 400, Message: "bad request with key " + p.APIKey()})
		}},
		{"rate limited", func(p *anthropictest.Server) { p.Fail(anthropictest.Failure{Status: 429}) }},
		{"server error", func(p *anthropictest.Server) { p.Fail(anthropictest.Failure{Status: 500}) }},
		{"overloaded mid-stream", func(p *anthropictest.Server) { p.Fail(anthropictest.Failure{Status: 529, MidStream: true}) }},
		{"timeout", func(p *anthropictest.Server) { p.Hang(1) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			peer, c := newPair(t)
			tc.setup(peer)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := c.Chat(ctx, llm.Request{Model: model, Messages: []llm.Message{user("hi")}, OnText: func(string) {}})
			if err == nil {
				t.Fatal("no error")
			}
			assertNoKey(t, err, peer.APIKey())
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, cfg := range []anthropic.Config{
		{},
		{APIKey: "k", BaseURL: "not a url"},
		{APIKey: "k", BaseURL: "ftp://example.com"},
	} {
		if _, err := anthropic.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted it", cfg)
		} else if cfg.APIKey != "" && strings.Contains(err.Error(), cfg.APIKey+"\"") {
			t.Errorf("New's error names the key: %v", err)
		}
	}
	if _, err := anthropic.New(anthropic.Config{APIKey: "k"}); err != nil {
		t.Errorf("New with the public base URL: %v", err)
	}
}

// The SDK reads ANTHROPIC_* variables by default; the adapter uses its Config alone.
func TestEnvironmentIsIgnored(t *testing.T) {
	peer := anthropictest.NewServer(t, anthropictest.Options{})
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: yes")
	c := newClient(t, peer.URL(), peer.APIKey())
	if _, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	if h := peer.Requests()[0].Header.Get("X-From-Env"); h != "" {
		t.Errorf("a header from the environment was sent: %q", h)
	}
}

// A gateway in front of the API answers with its own page, not Anthropic's error body.
func TestErrorBodyThatIsNotAnthropics(t *testing.T) {
	t.Parallel()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
	}))
	defer gw.Close()
	c := newClient(t, gw.URL, "sk-ant-gateway-key")
	_, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}})
	e := llmError(t, err)
	if e.Kind != llm.KindUnavailable || e.Status != 502 || !strings.HasPrefix(e.Message, "Bad Gateway: <html>") {
		t.Errorf("error = %+v", e)
	}
}

// One client serves many goroutines at once.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	_, c := newPair(t)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			text := fmt.Sprintf("call %d", i)
			req := llm.Request{Model: model, Messages: []llm.Message{user(text)}}
			if i%2 == 0 {
				req.OnText = func(string) {}
			}
			resp, err := c.Chat(context.Background(), req)
			if err == nil && resp.Text != "You said: "+text {
				err = fmt.Errorf("call %d answered %q", i, resp.Text)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
