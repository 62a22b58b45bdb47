package google_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/google"
	"github.com/switchboard-io/switchboard/internal/llm/google/googletest"
)

const model = "gemini-2.5-flash"

func start(t *testing.T, opts googletest.Options) (*googletest.Server, *google.Client) {
	t.Helper()
	s := googletest.New(opts)
	t.Cleanup(s.Close)
	key := opts.APIKey
	if key == "" {
		key = googletest.Key
	}
	c, err := google.New(google.Config{APIKey: key, BaseURL: s.URL()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, c
}

func user(text string) llm.Message { return llm.Message{Role: llm.RoleUser, Text: text} }

// body decodes what the peer received into a generic map, for assertions on the exact wire.
func body(t *testing.T, r googletest.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body %s: %v", r.Body, err)
	}
	return m
}

func asLLMError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return e
}

func TestChatText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reply     *googletest.Reply
		req       llm.Request
		wantText  string
		wantUsage llm.Usage
		wantModel string
		wantMax   float64
	}{
		{
			name:      "default answer",
			req:       llm.Request{Model: model, Messages: []llm.Message{user("hello there")}},
			wantText:  "You said: hello there",
			wantUsage: llm.Usage{InputTokens: 2, OutputTokens: 4},
			wantModel: model,
			wantMax:   llm.DefaultMaxTokens,
		},
		{
			name: "scripted answer with thoughts",
			reply: &googletest.Reply{
				Text: "Forty-two.", Thought: "Let me think about it.", ModelVersion: "gemini-2.5-flash-001",
				Usage: &googletest.UsageMetadata{PromptTokenCount: 11, ToolUsePromptTokenCount: 2, CandidatesTokenCount: 7, ThoughtsTokenCount: 3, TotalTokenCount: 23},
			},
			req:       llm.Request{Model: model, Messages: []llm.Message{user("question")}, MaxTokens: 50},
			wantText:  "Forty-two.",
			wantUsage: llm.Usage{InputTokens: 13, OutputTokens: 10},
			wantModel: "gemini-2.5-flash-001",
			wantMax:   50,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c := start(t, googletest.Options{})
			if tt.reply != nil {
				s.Enqueue(*tt.reply)
			}
			resp, err := c.Chat(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Text != tt.wantText || resp.Stop != llm.StopEnd || len(resp.ToolCalls) != 0 {
				t.Errorf("response = %+v, want text %q, stop end, no tool calls", resp, tt.wantText)
			}
			if resp.Usage != tt.wantUsage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tt.wantUsage)
			}
			if resp.Model != tt.wantModel {
				t.Errorf("model = %q, want %q", resp.Model, tt.wantModel)
			}

			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("peer got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != "generateContent" || r.Model != model || r.Status != http.StatusOK {
				t.Errorf("request = %s %s (%d), want generateContent %s (200)", r.Method, r.Model, r.Status, model)
			}
			if got := r.Header.Get("x-goog-api-key"); got != googletest.Key {
				t.Errorf("x-goog-api-key = %q, want the key", got)
			}
			if strings.Contains(r.Query, "key=") {
				t.Errorf("the key went into the query: %q", r.Query)
			}
			b := body(t, r)
			want := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": tt.req.Messages[0].Text}}}}
			if !reflect.DeepEqual(b["contents"], want) {
				t.Errorf("contents = %v, want %v", b["contents"], want)
			}
			gc, _ := b["generationConfig"].(map[string]any)
			if gc["maxOutputTokens"] != tt.wantMax {
				t.Errorf("maxOutputTokens = %v, want %v", gc["maxOutputTokens"], tt.wantMax)
			}
			if _, ok := gc["temperature"]; ok {
				t.Errorf("temperature sent though the request set none: %v", gc)
			}
			if _, ok := b["systemInstruction"]; ok {
				t.Errorf("systemInstruction sent though the request has no system prompt")
			}
		})
	}
}

var weatherSchema = json.RawMessage(`{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"properties": {"city": {"type": "string", "description": "City name"}},
	"required": ["city"],
	"additionalProperties": false
}`)

// TestChatToolRoundTrip runs the model calling two tools, their results going back (out of
// order, one failed), and the model answering, against a peer that checks thought signatures
// as Gemini 3 models do.
func TestChatToolRoundTrip(t *testing.T) {
	t.Parallel()
	s, c := start(t, googletest.Options{RequireThoughtSignatures: true})
	temp := 0.3
	tools := []llm.Tool{
		{Name: "get_weather", Description: "Current weather", Parameters: weatherSchema},
		{Name: "get_time", Description: "Current time"},
	}
	req := llm.Request{
		Model:       model,
		System:      "Be brief.",
		Messages:    []llm.Message{user("Weather and time in Paris?")},
		Tools:       tools,
		Temperature: &temp,
		MaxTokens:   200,
	}
	s.Enqueue(googletest.Reply{Text: "Checking.", Calls: []googletest.FunctionCall{
		{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
		{Name: "get_time"},
	}})

	first, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("first Chat: %v", err)
	}
	if first.Stop != llm.StopToolCalls || first.Text != "Checking." {
		t.Errorf("first answer = %+v, want text and stop tool_calls", first)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call_0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "call_1", Name: "get_time", Arguments: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(first.ToolCalls, wantCalls) {
		t.Errorf("tool calls = %s, want %s", fmtCalls(first.ToolCalls), fmtCalls(wantCalls))
	}

	b := body(t, s.Requests()[0])
	wantSystem := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Be brief."}}}
	if !reflect.DeepEqual(b["systemInstruction"], wantSystem) {
		t.Errorf("systemInstruction = %v, want %v", b["systemInstruction"], wantSystem)
	}
	gc := b["generationConfig"].(map[string]any)
	if gc["temperature"] != 0.3 || gc["maxOutputTokens"] != 200.0 {
		t.Errorf("generationConfig = %v, want temperature 0.3, maxOutputTokens 200", gc)
	}
	wantTools := []any{map[string]any{"functionDeclarations": []any{
		map[string]any{"name": "get_weather", "description": "Current weather", "parametersJsonSchema": map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"city": map[string]any{"type": "string", "description": "City name"}},
			"required":             []any{"city"},
			"additionalProperties": false,
		}},
		map[string]any{"name": "get_time", "description": "Current time"},
	}}}
	if !reflect.DeepEqual(b["tools"], wantTools) {
		t.Errorf("tools = %v\nwant %v", b["tools"], wantTools)
	}

	// The results come back in the other order, the weather one failed.
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Text: first.Text, ToolCalls: first.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", ToolName: "get_time", Text: "14:05"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_0", ToolName: "get_weather", Text: "service down", IsError: true},
	)
	s.Enqueue(googletest.Reply{Calls: []googletest.FunctionCall{{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris, FR"}`)}}})
	second, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("second Chat: %v", err)
	}
	if len(second.ToolCalls) != 1 || second.ToolCalls[0].ID != "call_2" {
		t.Errorf("second answer's calls = %s, want one numbered call_2 after the two before it", fmtCalls(second.ToolCalls))
	}

	b = body(t, s.Requests()[1])
	skip, _ := base64.URLEncoding.DecodeString(googletest.SkipSignature)
	wantContents := []any{
		map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Weather and time in Paris?"}}},
		map[string]any{"role": "model", "parts": []any{
			map[string]any{"text": "Checking."},
			map[string]any{"functionCall": map[string]any{"name": "get_weather", "args": map[string]any{"city": "Paris"}},
				"thoughtSignature": base64.StdEncoding.EncodeToString(skip)},
			map[string]any{"functionCall": map[string]any{"name": "get_time"}}, // empty args are left out
		}},
		map[string]any{"role": "user", "parts": []any{
			map[string]any{"functionResponse": map[string]any{"name": "get_weather", "response": map[string]any{"error": "service down"}}},
			map[string]any{"functionResponse": map[string]any{"name": "get_time", "response": map[string]any{"output": "14:05"}}},
		}},
	}
	if !reflect.DeepEqual(b["contents"], wantContents) {
		got, _ := json.MarshalIndent(b["contents"], "", " ")
		t.Errorf("contents =\n%s\nwant results in call order, linked by name, no ids", got)
	}

	// The model answers after the second call's result.
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: second.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_2", ToolName: "get_weather", Text: "18°C, cloudy"},
	)
	third, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("third Chat: %v", err)
	}
	if want := `Got get_weather: {"output":"18°C, cloudy"}`; third.Text != want || third.Stop != llm.StopEnd {
		t.Errorf("final answer = %+v, want %q, stop end", third, want)
	}
}

func fmtCalls(calls []llm.ToolCall) string {
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "[%s %s %s]", c.ID, c.Name, c.Arguments)
	}
	return b.String()
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reply      googletest.Reply
		wantDeltas []string
		wantCalls  []llm.ToolCall
		wantStop   llm.StopReason
		wantUsage  llm.Usage
	}{
		{
			name:       "text",
			reply:      googletest.Reply{Chunks: []string{"Hel", "lo ", "world"}, Usage: &googletest.UsageMetadata{PromptTokenCount: 9, CandidatesTokenCount: 3, TotalTokenCount: 12}},
			wantDeltas: []string{"Hel", "lo ", "world"},
			wantStop:   llm.StopEnd,
			wantUsage:  llm.Usage{InputTokens: 9, OutputTokens: 3},
		},
		{
			name: "text, a thought and tool calls",
			reply: googletest.Reply{Text: "Let me look.", Thought: "The user wants a lookup.",
				Calls: []googletest.FunctionCall{
					{Name: "lookup", Args: json.RawMessage(`{"q":"a"}`)},
					{Name: "lookup", Args: json.RawMessage(`{"q":"b"}`)},
				},
				Usage: &googletest.UsageMetadata{PromptTokenCount: 20, CandidatesTokenCount: 8, ThoughtsTokenCount: 5, TotalTokenCount: 33}},
			wantDeltas: []string{"Let ", "me ", "look."},
			wantCalls: []llm.ToolCall{
				{ID: "call_0", Name: "lookup", Arguments: json.RawMessage(`{"q":"a"}`)},
				{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":"b"}`)},
			},
			wantStop:  llm.StopToolCalls,
			wantUsage: llm.Usage{InputTokens: 20, OutputTokens: 13},
		},
		{
			name:       "cut at max tokens",
			reply:      googletest.Reply{Text: "One two", FinishReason: "MAX_TOKENS"},
			wantDeltas: []string{"One ", "two"},
			wantStop:   llm.StopMaxTokens,
			wantUsage:  llm.Usage{InputTokens: 1, OutputTokens: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c := start(t, googletest.Options{})
			s.Enqueue(tt.reply)
			var deltas []string
			resp, err := c.Chat(context.Background(), llm.Request{
				Model: model, Messages: []llm.Message{user("go")},
				OnText: func(s string) { deltas = append(deltas, s) },
			})
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if !reflect.DeepEqual(deltas, tt.wantDeltas) {
				t.Errorf("deltas = %q, want %q", deltas, tt.wantDeltas)
			}
			if resp.Text != strings.Join(deltas, "") {
				t.Errorf("text %q is not the deltas joined %q", resp.Text, strings.Join(deltas, ""))
			}
			if !reflect.DeepEqual(resp.ToolCalls, tt.wantCalls) {
				t.Errorf("tool calls = %s, want %s", fmtCalls(resp.ToolCalls), fmtCalls(tt.wantCalls))
			}
			if resp.Stop != tt.wantStop || resp.Usage != tt.wantUsage || resp.Model != model {
				t.Errorf("stop, usage, model = %s, %+v, %s; want %s, %+v, %s", resp.Stop, resp.Usage, resp.Model, tt.wantStop, tt.wantUsage, model)
			}
			r := s.Requests()[0]
			if !r.Stream() || r.Query != "alt=sse" {
				t.Errorf("request = %s?%s, want streamGenerateContent?alt=sse", r.Method, r.Query)
			}
		})
	}
}

func TestChatStopReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reply    googletest.Reply
		wantStop llm.StopReason
		wantErr  bool
	}{
		{reply: googletest.Reply{Text: "a", FinishReason: "STOP"}, wantStop: llm.StopEnd},
		{reply: googletest.Reply{Text: "a", FinishReason: "MAX_TOKENS"}, wantStop: llm.StopMaxTokens},
		{reply: googletest.Reply{FinishReason: "SAFETY"}, wantStop: llm.StopFiltered},
		{reply: googletest.Reply{Text: "a", FinishReason: "RECITATION"}, wantStop: llm.StopFiltered},
		{reply: googletest.Reply{FinishReason: "PROHIBITED_CONTENT"}, wantStop: llm.StopFiltered},
		{reply: googletest.Reply{BlockReason: "SAFETY"}, wantStop: llm.StopFiltered},
		{reply: googletest.Reply{Text: "a", FinishReason: "OTHER"}, wantStop: llm.StopEnd},
		// Automatic continuation is off: the unfinished answer comes back as it is, after
		// one request.
		{reply: googletest.Reply{Text: "a", FinishReason: "CONTINUATION", ContinuationToken: []byte("resume-here")}, wantStop: llm.StopMaxTokens},
		{reply: googletest.Reply{FinishReason: "MALFORMED_FUNCTION_CALL", FinishMessage: "Malformed function call: print(x"}, wantErr: true},
	}
	for _, tt := range tests {
		name := tt.reply.FinishReason
		if tt.reply.BlockReason != "" {
			name = "prompt blocked"
		}
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%t", name, stream), func(t *testing.T) {
				t.Parallel()
				s, c := start(t, googletest.Options{})
				s.Enqueue(tt.reply)
				req := llm.Request{Model: model, Messages: []llm.Message{user("hi")}}
				if stream {
					req.OnText = func(string) {}
				}
				resp, err := c.Chat(context.Background(), req)
				if tt.wantErr {
					e := asLLMError(t, err)
					// The SDK drops the Gemini API's finishMessage: only the reason is left to say.
					if e.Kind != llm.KindUnavailable || !strings.Contains(e.Message, tt.reply.FinishReason) {
						t.Errorf("error = %+v, want unavailable naming %s", e, tt.reply.FinishReason)
					}
					return
				}
				if err != nil {
					t.Fatalf("Chat: %v", err)
				}
				if resp.Stop != tt.wantStop {
					t.Errorf("stop = %s, want %s", resp.Stop, tt.wantStop)
				}
				if n := len(s.Requests()); n != 1 {
					t.Errorf("peer got %d requests, want 1", n)
				}
			})
		}
	}
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		failure     googletest.Failure
		wrongKey    bool
		wantKind    llm.Kind
		wantStatus  int
		wantMessage string
		wantRetry   time.Duration
	}{
		{name: "429 with RetryInfo", failure: googletest.Failure{Status: 429},
			wantKind: llm.KindRateLimited, wantStatus: 429, wantMessage: "You exceeded your current quota", wantRetry: 13 * time.Second},
		{name: "429 with a fractional retryDelay", failure: googletest.Failure{Status: 429, RetryDelay: 1500 * time.Millisecond},
			wantKind: llm.KindRateLimited, wantStatus: 429, wantMessage: "You exceeded your current quota", wantRetry: 1500 * time.Millisecond},
		{name: "429 with Retry-After", failure: googletest.Failure{Status: 429, RetryAfter: "7"},
			wantKind: llm.KindRateLimited, wantStatus: 429, wantMessage: "You exceeded your current quota", wantRetry: 7 * time.Second},
		{name: "429 saying nothing of when", failure: googletest.Failure{Status: 429, NoRetryInfo: true},
			wantKind: llm.KindRateLimited, wantStatus: 429, wantMessage: "You exceeded your current quota"},
		{name: "500", failure: googletest.Failure{Status: 500},
			wantKind: llm.KindUnavailable, wantStatus: 500, wantMessage: "An internal error has occurred"},
		{name: "503", failure: googletest.Failure{Status: 503},
			wantKind: llm.KindUnavailable, wantStatus: 503, wantMessage: "The model is overloaded. Please try again later."},
		{name: "504", failure: googletest.Failure{Status: 504},
			wantKind: llm.KindUnavailable, wantStatus: 504, wantMessage: "Deadline expired"},
		{name: "400", failure: googletest.Failure{Status: 400, Message: "Unable to submit request because it has an empty text parameter."},
			wantKind: llm.KindInvalid, wantStatus: 400, wantMessage: "Unable to submit request because it has an empty text parameter."},
		{name: "404", failure: googletest.Failure{Status: 404},
			wantKind: llm.KindInvalid, wantStatus: 404, wantMessage: "Requested entity was not found."},
		{name: "401", failure: googletest.Failure{Status: 401},
			wantKind: llm.KindUnauthorized, wantStatus: 401, wantMessage: "Request had invalid authentication credentials."},
		{name: "403", failure: googletest.Failure{Status: 403},
			wantKind: llm.KindUnauthorized, wantStatus: 403, wantMessage: "The caller does not have permission"},
		{name: "wrong key (Google answers 400 API_KEY_INVALID)", wrongKey: true,
			wantKind: llm.KindUnauthorized, wantStatus: 400, wantMessage: "API key not valid. Please pass a valid API key."},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%t", tt.name, stream), func(t *testing.T) {
				t.Parallel()
				s, c := start(t, googletest.Options{})
				key := googletest.Key
				if tt.wrongKey {
					key = "AIzaSyWrong-key-that-must-stay-secret-000"
					var err error
					if c, err = google.New(google.Config{APIKey: key, BaseURL: s.URL()}); err != nil {
						t.Fatal(err)
					}
				} else {
					s.Fail(tt.failure)
				}
				req := llm.Request{Model: model, Messages: []llm.Message{user("hi")}}
				if stream {
					req.OnText = func(string) { t.Error("OnText called on a failed call") }
				}
				_, err := c.Chat(context.Background(), req)
				e := asLLMError(t, err)
				if e.Kind != tt.wantKind || e.Status != tt.wantStatus || e.RetryAfter != tt.wantRetry {
					t.Errorf("error = kind %s, status %d, retry after %s; want %s, %d, %s", e.Kind, e.Status, e.RetryAfter, tt.wantKind, tt.wantStatus, tt.wantRetry)
				}
				if !strings.HasPrefix(e.Message, tt.wantMessage) {
					t.Errorf("message = %q, want it to start with %q", e.Message, tt.wantMessage)
				}
				if llm.Retryable(err) != (tt.wantKind == llm.KindRateLimited || tt.wantKind == llm.KindUnavailable) {
					t.Errorf("Retryable = %t for kind %s", llm.Retryable(err), e.Kind)
				}
				if strings.Contains(err.Error(), key) || strings.Contains(fmt.Sprintf("%+v %v", e, e.Err), key) {
					t.Errorf("the key is in the error: %v", err)
				}
				if n := len(s.Requests()); n != 1 {
					t.Errorf("peer got %d requests, want 1 (no retries by the SDK)", n)
				}
			})
		}
	}
}

// TestChatStreamErrorEvent: the answer began (HTTP 200), then the API sent an error event.
func TestChatStreamErrorEvent(t *testing.T) {
	t.Parallel()
	s, c := start(t, googletest.Options{})
	s.Enqueue(googletest.Reply{Text: "So far so", StreamError: &googletest.Failure{Status: 503}})
	var got strings.Builder
	_, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")},
		OnText: func(s string) { got.WriteString(s) }})
	e := asLLMError(t, err)
	if e.Kind != llm.KindUnavailable || e.Status != 503 || e.Message != "The model is overloaded. Please try again later." {
		t.Errorf("error = %+v, want unavailable, 503, Google's message", e)
	}
	if got.String() != "So far so" {
		t.Errorf("OnText got %q before the error, want the text sent before it", got.String())
	}
}

func TestChatNoRetries(t *testing.T) {
	t.Parallel()
	s, c := start(t, googletest.Options{})
	s.FailN(503, 3)
	for i, stream := range []bool{false, true} {
		req := llm.Request{Model: model, Messages: []llm.Message{user("hi")}}
		if stream {
			req.OnText = func(string) {}
		}
		if _, err := c.Chat(context.Background(), req); !llm.Retryable(err) {
			t.Fatalf("stream=%t: error %v, want a retryable one", stream, err)
		}
		if n := len(s.Requests()); n != i+1 {
			t.Fatalf("stream=%t: peer got %d requests, want %d", stream, n, i+1)
		}
	}
}

func TestChatTransportFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		setup       func(s *googletest.Server)
		timeout     time.Duration
		wantMessage string
	}{
		{name: "hang cut by the context deadline", setup: func(s *googletest.Server) { s.Hang(1) },
			timeout: 200 * time.Millisecond, wantMessage: "the request timed out"},
		{name: "stream cut mid-answer", setup: func(s *googletest.Server) {
			s.Enqueue(googletest.Reply{Text: "half an answer", Abort: true})
		}, timeout: 10 * time.Second},
		{name: "nobody listening", setup: func(s *googletest.Server) { s.Close() },
			timeout: 10 * time.Second, wantMessage: "send request:"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			if tt.name == "stream cut mid-answer" && !stream {
				continue
			}
			t.Run(fmt.Sprintf("%s stream=%t", tt.name, stream), func(t *testing.T) {
				t.Parallel()
				s, c := start(t, googletest.Options{})
				tt.setup(s)
				ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
				defer cancel()
				req := llm.Request{Model: model, Messages: []llm.Message{user("hi")}}
				if stream {
					req.OnText = func(string) {}
				}
				began := time.Now()
				_, err := c.Chat(ctx, req)
				e := asLLMError(t, err)
				if e.Kind != llm.KindUnavailable || e.Status != 0 {
					t.Errorf("error = %+v, want unavailable with status 0", e)
				}
				if !strings.HasPrefix(e.Message, tt.wantMessage) {
					t.Errorf("message = %q, want it to start with %q", e.Message, tt.wantMessage)
				}
				if time.Since(began) > tt.timeout+2*time.Second {
					t.Errorf("the call took %s, past its deadline", time.Since(began))
				}
			})
		}
	}
}

// TestKeyRedacted checks the key stays out of errors even when an answer quotes it.
func TestKeyRedacted(t *testing.T) {
	t.Parallel()
	const key = "AIzaSyQuoted-back-by-a-proxy-0123456789"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"key %s is not allowed here","status":"INVALID_ARGUMENT"}}`, r.Header.Get("x-goog-api-key"))
	}))
	t.Cleanup(echo.Close)
	c, err := google.New(google.Config{APIKey: key, BaseURL: echo.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}})
	e := asLLMError(t, err)
	if e.Message != "key [redacted] is not allowed here" {
		t.Errorf("message = %q, want the key redacted", e.Message)
	}
	if strings.Contains(fmt.Sprintf("%v %+v %v", err, e, e.Err), key) {
		t.Errorf("the key is in the error: %v / %v", err, e.Err)
	}
	if _, err := google.New(google.Config{APIKey: key, BaseURL: "ftp://" + key}); err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("New with a bad base URL: %v", err)
	}
}

func TestChatInvalidRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  llm.Request
	}{
		{name: "no model", req: llm.Request{Messages: []llm.Message{user("hi")}}},
		{name: "no messages", req: llm.Request{Model: model}},
		{name: "arguments not an object", req: llm.Request{Model: model, Messages: []llm.Message{user("hi"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_0", Name: "f", Arguments: json.RawMessage(`[1]`)}}}}}},
		{name: "parameters not a schema", req: llm.Request{Model: model, Messages: []llm.Message{user("hi")},
			Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`"string"`)}}}},
		{name: "result of no call", req: llm.Request{Model: model, Messages: []llm.Message{user("hi"),
			{Role: llm.RoleTool, ToolCallID: "call_9", Text: "x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c := start(t, googletest.Options{})
			_, err := c.Chat(context.Background(), tt.req)
			if e := asLLMError(t, err); e.Kind != llm.KindInvalid || e.Status != 0 {
				t.Errorf("error = %+v, want invalid, status 0", e)
			}
			if n := len(s.Requests()); n != 0 {
				t.Errorf("peer got %d requests, want none", n)
			}
		})
	}
}

func TestEmbed(t *testing.T) {
	t.Parallel()
	const embedModel = "text-embedding-004"
	tests := []struct {
		name        string
		inputs      int
		wantBatches []int
	}{
		{name: "three texts", inputs: 3, wantBatches: []int{3}},
		{name: "more than a batch", inputs: 250, wantBatches: []int{100, 100, 50}},
		{name: "nothing", inputs: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c := start(t, googletest.Options{})
			inputs := make([]string, tt.inputs)
			for i := range inputs {
				inputs[i] = fmt.Sprintf("text number %d", i)
			}
			got, err := c.Embed(context.Background(), llm.EmbedRequest{Model: embedModel, Inputs: inputs})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if len(got.Vectors) != len(inputs) || got.Model != embedModel || got.Usage != (llm.Usage{}) {
				t.Fatalf("embeddings = %d vectors, model %q, usage %+v; want %d, %q, no usage (the API reports none)",
					len(got.Vectors), got.Model, got.Usage, len(inputs), embedModel)
			}
			for i, v := range got.Vectors {
				if want := googletest.Vector(inputs[i], googletest.DefaultDimensions); !reflect.DeepEqual(v, want) {
					t.Fatalf("vector %d = %v, want %v (the vector of its own input)", i, v, want)
				}
			}
			reqs := s.Requests()
			if len(reqs) != len(tt.wantBatches) {
				t.Fatalf("peer got %d requests, want %d", len(reqs), len(tt.wantBatches))
			}
			n := 0
			for i, r := range reqs {
				if r.Method != "batchEmbedContents" || r.Model != embedModel || len(r.Batch.Requests) != tt.wantBatches[i] {
					t.Fatalf("request %d = %s %s with %d texts, want batchEmbedContents %s with %d", i, r.Method, r.Model, len(r.Batch.Requests), embedModel, tt.wantBatches[i])
				}
				for _, q := range r.Batch.Requests {
					if q.Model != "models/"+embedModel || q.Content.Text() != inputs[n] {
						t.Fatalf("batch entry %d = %s %q, want models/%s %q", n, q.Model, q.Content.Text(), embedModel, inputs[n])
					}
					n++
				}
			}
		})
	}
}

func TestEmbedErrors(t *testing.T) {
	t.Parallel()
	s, c := start(t, googletest.Options{})
	s.Fail(googletest.Failure{Status: 429, RetryDelay: 2 * time.Second})
	_, err := c.Embed(context.Background(), llm.EmbedRequest{Model: "gemini-embedding-001", Inputs: []string{"a"}})
	if e := asLLMError(t, err); e.Kind != llm.KindRateLimited || e.Status != 429 || e.RetryAfter != 2*time.Second {
		t.Errorf("error = %+v, want rate limited, 429, retry after 2s", e)
	}
	_, err = c.Embed(context.Background(), llm.EmbedRequest{Model: "gemini-embedding-001", Inputs: []string{"a", ""}})
	if e := asLLMError(t, err); e.Kind != llm.KindInvalid {
		t.Errorf("empty input: error = %+v, want invalid", e)
	}
}

func TestNewKeepsTheCallersClient(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{})
	t.Cleanup(s.Close)
	hc := &http.Client{Timeout: 3 * time.Second}
	c, err := google.New(google.Config{APIKey: googletest.Key, BaseURL: s.URL(), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if hc.Transport != nil {
		t.Errorf("New changed the caller's client: transport %T", hc.Transport)
	}
	if _, err := c.Chat(context.Background(), llm.Request{Model: model, Messages: []llm.Message{user("hi")}}); err != nil {
		t.Errorf("Chat through the caller's client: %v", err)
	}
	if _, err := google.New(google.Config{BaseURL: s.URL()}); err == nil {
		t.Errorf("New without a key succeeded")
	}
}

func TestChatConcurrent(t *testing.T) {
	t.Parallel()
	s, c := start(t, googletest.Options{})
	s.Fail(googletest.Failure{Status: 429, Times: 3})
	const n = 12
	errs := make(chan error, n)
	for i := range n {
		go func() {
			req := llm.Request{Model: model, Messages: []llm.Message{user(fmt.Sprintf("message %d", i))}}
			if i%2 == 0 {
				req.OnText = func(string) {}
			}
			resp, err := c.Chat(context.Background(), req)
			switch {
			case err != nil && !llm.Retryable(err):
				errs <- fmt.Errorf("call %d: %w", i, err)
			case err == nil && resp.Text != fmt.Sprintf("You said: message %d", i):
				errs <- fmt.Errorf("call %d got another call's answer %q", i, resp.Text)
			default:
				errs <- nil
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
