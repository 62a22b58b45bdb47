package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/openai"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

func ptr[T any](v T) *T { return &v }

func TestChatText(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			resp, err := c.Chat(context.Background(), llm.Request{
				Model:       model(f),
				System:      "Be brief.",
				Messages:    []llm.Message{{Role: llm.RoleUser, Text: "hello there"}},
				Temperature: ptr(0.3),
			})
			if err != nil {
				t.Fatalf("chat: %v", err)
			}
			want := &llm.Response{
				Text:  openaitest.DefaultReply("hello there"),
				Stop:  llm.StopEnd,
				Model: model(f),
				// The peer counts words: 1+2 and 1+2 in, 4 out.
				Usage: llm.Usage{InputTokens: 6, OutputTokens: 4},
			}
			if !reflect.DeepEqual(resp, want) {
				t.Fatalf("response:\n got %+v\nwant %+v", resp, want)
			}

			got := srv.LastRequest()
			if got.Path != "/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer "+srv.APIKey() {
				t.Fatalf("request: %s with Authorization %q", got.Path, got.Header.Get("Authorization"))
			}
			req := got.Chat
			if req.Model != model(f) || len(req.Messages) != 2 ||
				req.Messages[0].Role != "system" || req.Messages[0].Content != "Be brief." ||
				req.Messages[1].Role != "user" || req.Messages[1].Content != "hello there" {
				t.Fatalf("messages: %+v", req.Messages)
			}
			if req.Temperature == nil || *req.Temperature != 0.3 {
				t.Fatalf("temperature: %v", req.Temperature)
			}
			// Compatible servers and Mistral take max_tokens; the default bound is llm's.
			if req.MaxTokens == nil || *req.MaxTokens != llm.DefaultMaxTokens || got.Has("max_completion_tokens") {
				t.Fatalf("max_tokens %v, max_completion_tokens sent: %v", req.MaxTokens, got.Has("max_completion_tokens"))
			}
			for _, absent := range []string{"stream", "stream_options", "tools", "parallel_tool_calls", "n"} {
				if got.Has(absent) {
					t.Errorf("%s was sent", absent)
				}
			}
		})
	}
}

func TestChatScriptedReply(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			srv.Reply(openaitest.Reply{
				Text: "Cut sho", FinishReason: "length", Model: model(f) + "-2025",
				Usage: &openaitest.Usage{PromptTokens: 120, CompletionTokens: 7},
			})
			resp, err := c.Chat(context.Background(), llm.Request{
				Model: model(f), MaxTokens: 7,
				Messages: []llm.Message{{Role: llm.RoleUser, Text: "tell me a long story"}},
			})
			if err != nil {
				t.Fatalf("chat: %v", err)
			}
			want := &llm.Response{
				Text: "Cut sho", Stop: llm.StopMaxTokens, Model: model(f) + "-2025",
				Usage: llm.Usage{InputTokens: 120, OutputTokens: 7},
			}
			if !reflect.DeepEqual(resp, want) {
				t.Fatalf("response:\n got %+v\nwant %+v", resp, want)
			}
			if mt := srv.LastRequest().Chat.MaxTokens; mt == nil || *mt != 7 {
				t.Fatalf("max_tokens: %v", mt)
			}
		})
	}
}

func TestStopReasons(t *testing.T) {
	t.Parallel()
	cases := []struct {
		flavor openaitest.Flavor
		reply  openaitest.Reply
		want   llm.StopReason
	}{
		{openaitest.OpenAI, openaitest.Reply{Text: "done", FinishReason: "stop"}, llm.StopEnd},
		{openaitest.OpenAI, openaitest.Reply{Text: "cut", FinishReason: "length"}, llm.StopMaxTokens},
		{openaitest.OpenAI, openaitest.Reply{Text: "", FinishReason: "content_filter"}, llm.StopFiltered},
		{openaitest.OpenAI, openaitest.Reply{ToolCalls: []openaitest.ToolCall{{Name: "f"}}}, llm.StopToolCalls},
		// Older Ollama says stop for an answer of tool calls.
		{openaitest.OpenAI, openaitest.Reply{ToolCalls: []openaitest.ToolCall{{Name: "f"}}, FinishReason: "stop"}, llm.StopToolCalls},
		{openaitest.Mistral, openaitest.Reply{Text: "full", FinishReason: "model_length"}, llm.StopMaxTokens},
		{openaitest.Mistral, openaitest.Reply{ToolCalls: []openaitest.ToolCall{{Name: "f"}}}, llm.StopToolCalls},
	}
	for _, tc := range cases {
		t.Run(string(tc.flavor)+"/"+tc.reply.FinishReason, func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, tc.flavor)
			for _, stream := range []bool{false, true} {
				srv.Reply(tc.reply)
				req := llm.Request{Model: model(tc.flavor), Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}
				if stream {
					req.OnText = func(string) {}
				}
				resp, err := c.Chat(context.Background(), req)
				if err != nil {
					t.Fatalf("chat (stream %v): %v", stream, err)
				}
				if resp.Stop != tc.want {
					t.Fatalf("stream %v: stop %q, want %q", stream, resp.Stop, tc.want)
				}
			}
		})
	}
}

// Mistral's error finish reason is a failed generation: a retryable failure, not an answer.
func TestMistralErrorFinishIsRetryable(t *testing.T) {
	t.Parallel()
	srv, c := peer(t, openaitest.Mistral)
	srv.Reply(openaitest.Reply{Text: "half", FinishReason: "error"})
	_, err := c.Chat(context.Background(), llm.Request{Model: model(openaitest.Mistral), Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if e := llmError(t, err); e.Kind != llm.KindUnavailable || !llm.Retryable(err) {
		t.Fatalf("error: %+v", e)
	}
}

// The public OpenAI API gets max_completion_tokens (required by its reasoning models), at its
// public URL when none is configured.
func TestPublicOpenAIGetsMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	srv := openaitest.New(openaitest.Options{})
	t.Cleanup(srv.Close)
	rd := newRedirect(t, srv)
	c := client(t, openaitest.OpenAI, srv.APIKey(), "", &http.Client{Transport: rd})
	if _, err := c.Chat(context.Background(), llm.Request{
		Model: "o4-mini", MaxTokens: 500, Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}},
	}); err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := rd.asked(); len(got) != 1 || got[0] != "https://api.openai.com/v1/chat/completions" {
		t.Fatalf("asked %v", got)
	}
	got := srv.LastRequest()
	if mct := got.Chat.MaxCompletionTokens; mct == nil || *mct != 500 || got.Has("max_tokens") {
		t.Fatalf("max_completion_tokens %v, max_tokens sent: %v", mct, got.Has("max_tokens"))
	}
}

func TestMistralDefaultBaseURL(t *testing.T) {
	t.Parallel()
	srv := openaitest.New(openaitest.Options{Flavor: openaitest.Mistral})
	t.Cleanup(srv.Close)
	rd := newRedirect(t, srv)
	c := client(t, openaitest.Mistral, srv.APIKey(), "", &http.Client{Transport: rd})
	if _, err := c.Chat(context.Background(), llm.Request{Model: "mistral-large-latest", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}); err != nil {
		t.Fatalf("chat: %v", err)
	}
	if _, err := c.Embed(context.Background(), llm.EmbedRequest{Model: "mistral-embed", Inputs: []string{"hi"}}); err != nil {
		t.Fatalf("embed: %v", err)
	}
	want := []string{"https://api.mistral.ai/v1/chat/completions", "https://api.mistral.ai/v1/embeddings"}
	if got := rd.asked(); !slices.Equal(got, want) {
		t.Fatalf("asked %v, want %v", got, want)
	}
	if got := srv.LastRequest(); got.Has("max_completion_tokens") {
		t.Fatal("max_completion_tokens sent to Mistral")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]openai.Config{
		"unknown flavor":    {Flavor: "anthropic"},
		"relative base URL": {BaseURL: "api.openai.com/v1"},
		"ftp base URL":      {BaseURL: "ftp://example.com/v1"},
	} {
		if _, err := openai.New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"},"days":{"type":"integer","maximum":9007199254740993}},"required":["city"]}`)

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			tools := []llm.Tool{{Name: "get_weather", Description: "Current weather of a city", Parameters: weatherSchema}}
			user := llm.Message{Role: llm.RoleUser, Text: "Weather in Paris?"}

			// Step 1: the model calls the tool.
			srv.Reply(openaitest.Reply{ToolCalls: []openaitest.ToolCall{{Name: "get_weather", Arguments: `{"city": "Paris"}`}}})
			first, err := c.Chat(context.Background(), llm.Request{
				Model: model(f), System: "You are a weather bot.", Messages: []llm.Message{user}, Tools: tools,
				Temperature: ptr(0.0), MaxTokens: 256,
			})
			if err != nil {
				t.Fatalf("chat 1: %v", err)
			}
			if first.Stop != llm.StopToolCalls || first.Text != "" || len(first.ToolCalls) != 1 {
				t.Fatalf("answer 1: %+v", first)
			}
			call := first.ToolCalls[0]
			if call.ID == "" || call.Name != "get_weather" || !jsonEqual(call.Arguments, `{"city":"Paris"}`) {
				t.Fatalf("call: %+v (%s)", call, call.Arguments)
			}
			if f == openaitest.Mistral && !regexp.MustCompile(`^[a-zA-Z0-9]{9}$`).MatchString(call.ID) {
				t.Fatalf("Mistral's call id %q", call.ID)
			}

			r1 := srv.LastRequest()
			req1 := r1.Chat
			if len(req1.Tools) != 1 || req1.Tools[0].Type != "function" || req1.Tools[0].Function.Name != "get_weather" ||
				req1.Tools[0].Function.Description != "Current weather of a city" || !jsonEqual(req1.Tools[0].Function.Parameters, string(weatherSchema)) {
				t.Fatalf("tools: %+v", req1.Tools)
			}
			if !strings.Contains(string(r1.Body), "9007199254740993") {
				t.Fatal("the schema's large number was re-encoded")
			}
			if req1.Temperature == nil || *req1.Temperature != 0 || req1.MaxTokens == nil || *req1.MaxTokens != 256 {
				t.Fatalf("temperature %v, max_tokens %v", req1.Temperature, req1.MaxTokens)
			}
			if r1.Has("tool_choice") || r1.Has("parallel_tool_calls") {
				t.Fatal("tool_choice or parallel_tool_calls sent")
			}

			// Step 2: the result goes back, the model answers.
			srv.Reply(openaitest.Reply{Text: "It is 18°C and sunny in Paris."})
			second, err := c.Chat(context.Background(), llm.Request{
				Model: model(f), System: "You are a weather bot.", Tools: tools,
				Messages: []llm.Message{
					user,
					{Role: llm.RoleAssistant, ToolCalls: first.ToolCalls},
					{Role: llm.RoleTool, ToolCallID: call.ID, ToolName: "get_weather", Text: `{"temp_c":18,"sky":"sunny"}`},
				},
			})
			if err != nil {
				t.Fatalf("chat 2: %v", err)
			}
			if second.Text != "It is 18°C and sunny in Paris." || second.Stop != llm.StopEnd || len(second.ToolCalls) != 0 {
				t.Fatalf("answer 2: %+v", second)
			}

			r2 := srv.LastRequest()
			msgs := r2.Chat.Messages
			var roles []string
			for _, m := range msgs {
				roles = append(roles, m.Role)
			}
			if want := []string{"system", "user", "assistant", "tool"}; !slices.Equal(roles, want) {
				t.Fatalf("roles %v, want %v", roles, want)
			}
			if msgs[0].Content != "You are a weather bot." {
				t.Fatalf("system: %q", msgs[0].Content)
			}
			a := msgs[2]
			if a.HasContent || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != call.ID || a.ToolCalls[0].Type != "function" ||
				a.ToolCalls[0].Function.Name != "get_weather" || !jsonEqual(json.RawMessage(a.ToolCalls[0].Function.Arguments), `{"city":"Paris"}`) {
				t.Fatalf("assistant turn: %+v", a)
			}
			tool := msgs[3]
			if tool.ToolCallID != call.ID || tool.Content != `{"temp_c":18,"sky":"sunny"}` {
				t.Fatalf("tool result: %+v", tool)
			}
			// Mistral's tool results are named; OpenAI's tool message has no name.
			wantFields := []string{"content", "role", "tool_call_id"}
			if f == openaitest.Mistral {
				wantFields = []string{"content", "name", "role", "tool_call_id"}
				if tool.Name != "get_weather" {
					t.Fatalf("tool result name %q", tool.Name)
				}
			}
			if !slices.Equal(tool.Fields, wantFields) {
				t.Fatalf("tool result fields %v, want %v", tool.Fields, wantFields)
			}
		})
	}
}

// A failed tool call has no flag of its own in this API: the content says so.
func TestToolErrorResult(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			id := "call_weather_1"
			if f == openaitest.Mistral {
				id = "Wx7Tq2Lm9"
			}
			_, err := c.Chat(context.Background(), llm.Request{
				Model: model(f),
				Messages: []llm.Message{
					{Role: llm.RoleUser, Text: "Weather in Atlantis?"},
					{Role: llm.RoleAssistant, Text: "Let me look.", ToolCalls: []llm.ToolCall{{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{"city":"Atlantis"}`)}}},
					// No ToolName: Mistral's name comes from the call.
					{Role: llm.RoleTool, ToolCallID: id, IsError: true, Text: "unknown city"},
				},
			})
			if err != nil {
				t.Fatalf("chat: %v", err)
			}
			msgs := srv.LastRequest().Chat.Messages
			if a := msgs[1]; !a.HasContent || a.Content != "Let me look." || a.ToolCalls[0].ID != id {
				t.Fatalf("assistant turn: %+v", a)
			}
			tool := msgs[2]
			if tool.Content != "Error: unknown city" || tool.ToolCallID != id {
				t.Fatalf("tool result: %+v", tool)
			}
			if f == openaitest.Mistral && tool.Name != "get_weather" {
				t.Fatalf("tool result name %q", tool.Name)
			}
		})
	}
}

// Ids of calls made elsewhere (another provider's, a made-up one) are replaced where the
// provider would refuse them, the call and its result still linked.
func TestForeignToolCallIDs(t *testing.T) {
	t.Parallel()
	anthropic := "toolu_01A09q90qw90lq917835lq9"
	long := "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f"
	mistralShaped := "abcDEF123"
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			ids := []string{anthropic, long, mistralShaped}
			var calls []llm.ToolCall
			msgs := []llm.Message{{Role: llm.RoleUser, Text: "three lookups"}}
			for _, id := range ids {
				calls = append(calls, llm.ToolCall{ID: id, Name: "lookup", Arguments: json.RawMessage(`{}`)})
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: calls})
			for _, id := range ids {
				msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: id, ToolName: "lookup", Text: "result of " + id})
			}
			if _, err := c.Chat(context.Background(), llm.Request{Model: model(f), Messages: msgs}); err != nil {
				t.Fatalf("chat: %v", err) // the peer refuses ids its provider would
			}
			sent := srv.LastRequest().Chat.Messages
			seen := map[string]bool{}
			for i, id := range ids {
				got := sent[1].ToolCalls[i].ID
				if sent[2+i].ToolCallID != got || sent[2+i].Content != "result of "+id {
					t.Fatalf("result %d linked to %q, call is %q", i, sent[2+i].ToolCallID, got)
				}
				if seen[got] {
					t.Fatalf("two calls sent as %q", got)
				}
				seen[got] = true
				switch {
				case f == openaitest.Mistral && id == mistralShaped, f == openaitest.OpenAI && id != long:
					if got != id {
						t.Fatalf("id %q sent as %q, want it unchanged", id, got)
					}
				case f == openaitest.Mistral:
					if !regexp.MustCompile(`^[a-zA-Z0-9]{9}$`).MatchString(got) {
						t.Fatalf("id %q sent as %q", id, got)
					}
				default:
					if got == id || len(got) > 40 {
						t.Fatalf("id %q sent as %q", id, got)
					}
				}
			}
		})
	}
}

func TestChatRefusesBadInput(t *testing.T) {
	t.Parallel()
	srv, c := peer(t, openaitest.OpenAI)
	for name, req := range map[string]llm.Request{
		"unknown role":   {Model: "m", Messages: []llm.Message{{Role: "narrator", Text: "x"}}},
		"schema string":  {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}, Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`"object"`)}}},
		"schema garbage": {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}, Tools: []llm.Tool{{Name: "f", Parameters: json.RawMessage(`{`)}}},
	} {
		_, err := c.Chat(context.Background(), req)
		if e := llmError(t, err); e.Kind != llm.KindInvalid || e.Status != 0 {
			t.Errorf("%s: %+v", name, e)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// A tool without parameters gets the empty object schema the API expects.
func TestToolWithoutParameters(t *testing.T) {
	t.Parallel()
	srv, c := peer(t, openaitest.OpenAI)
	if _, err := c.Chat(context.Background(), llm.Request{
		Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}, Tools: []llm.Tool{{Name: "now"}},
	}); err != nil {
		t.Fatalf("chat: %v", err)
	}
	tool := srv.LastRequest().Chat.Tools[0]
	if !jsonEqual(tool.Function.Parameters, `{"type":"object","properties":{}}`) || tool.Function.Description != "" {
		t.Fatalf("tool: %+v %s", tool, tool.Function.Parameters)
	}
}

func jsonEqual(got json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}
