package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

func TestStreamText(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			text := "Paris is the capital of France, on the Seine."
			srv.Reply(openaitest.Reply{Text: text, Usage: &openaitest.Usage{PromptTokens: 31, CompletionTokens: 12}})
			var deltas []string
			resp, err := c.Chat(context.Background(), llm.Request{
				Model:    model(f),
				Messages: []llm.Message{{Role: llm.RoleUser, Text: "Capital of France?"}},
				OnText:   func(s string) { deltas = append(deltas, s) },
			})
			if err != nil {
				t.Fatalf("chat: %v", err)
			}
			if len(deltas) < 2 || strings.Join(deltas, "") != text {
				t.Fatalf("deltas %q", deltas)
			}
			if resp.Text != text || resp.Stop != llm.StopEnd || resp.Model != model(f) ||
				resp.Usage != (llm.Usage{InputTokens: 31, OutputTokens: 12}) || len(resp.ToolCalls) != 0 {
				t.Fatalf("response %+v", resp)
			}
			got := srv.LastRequest()
			if !got.Chat.Stream {
				t.Fatal("stream not asked for")
			}
			// OpenAI sends usage in a stream only when asked; Mistral refuses stream_options
			// and sends it anyway.
			switch f {
			case openaitest.OpenAI:
				if so := got.Chat.StreamOptions; so == nil || !so.IncludeUsage {
					t.Fatalf("stream_options %+v", so)
				}
			case openaitest.Mistral:
				if got.Has("stream_options") {
					t.Fatal("stream_options sent to Mistral")
				}
			}
		})
	}
}

func TestStreamToolCalls(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			srv.Reply(openaitest.Reply{
				Text: "Let me check both.",
				ToolCalls: []openaitest.ToolCall{
					{Name: "get_weather", Arguments: `{"city": "Paris", "unit": "celsius"}`},
					{Name: "get_time", Arguments: `{"timezone": "Europe/Paris"}`},
				},
				Usage: &openaitest.Usage{PromptTokens: 80, CompletionTokens: 40},
			})
			var streamed strings.Builder
			resp, err := c.Chat(context.Background(), llm.Request{
				Model:    model(f),
				Messages: []llm.Message{{Role: llm.RoleUser, Text: "Weather and time in Paris?"}},
				Tools: []llm.Tool{
					{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
					{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"timezone":{"type":"string"}}}`)},
				},
				OnText: func(s string) { streamed.WriteString(s) },
			})
			if err != nil {
				t.Fatalf("chat: %v", err)
			}
			if streamed.String() != "Let me check both." || resp.Text != "Let me check both." {
				t.Fatalf("text %q, streamed %q", resp.Text, streamed.String())
			}
			if resp.Stop != llm.StopToolCalls || resp.Usage != (llm.Usage{InputTokens: 80, OutputTokens: 40}) || len(resp.ToolCalls) != 2 {
				t.Fatalf("response %+v", resp)
			}
			wants := []struct{ name, args string }{
				{"get_weather", `{"city":"Paris","unit":"celsius"}`},
				{"get_time", `{"timezone":"Europe/Paris"}`},
			}
			for i, w := range wants {
				tc := resp.ToolCalls[i]
				if tc.ID == "" || tc.Name != w.name || !jsonEqual(tc.Arguments, w.args) {
					t.Fatalf("call %d: %+v (%s)", i, tc, tc.Arguments)
				}
			}
			if resp.ToolCalls[0].ID == resp.ToolCalls[1].ID {
				t.Fatal("both calls have one id")
			}
		})
	}
}

// A stream that ends before its answer does (the connection dropped, or closed cleanly with
// no finish_reason) is a retryable failure, not a short answer.
func TestStreamCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flavor openaitest.Flavor
		reply  openaitest.Reply
	}{
		{openaitest.OpenAI, openaitest.Reply{Text: "one two three four five", CutAfter: 3}},
		{openaitest.Mistral, openaitest.Reply{Text: "one two three four five", CutAfter: 3}},
		{openaitest.OpenAI, openaitest.Reply{Text: "one two three four five", EndAfter: 3}},
		{openaitest.Mistral, openaitest.Reply{Text: "one two three four five", EndAfter: 3}},
	} {
		f := tc.flavor
		t.Run(fmt.Sprintf("%s/cut=%d/end=%d", f, tc.reply.CutAfter, tc.reply.EndAfter), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			srv.Reply(tc.reply)
			var deltas []string
			_, err := c.Chat(context.Background(), llm.Request{
				Model: model(f), Messages: []llm.Message{{Role: llm.RoleUser, Text: "count"}},
				OnText: func(s string) { deltas = append(deltas, s) },
			})
			e := llmError(t, err)
			if e.Kind != llm.KindUnavailable || e.Status != 0 || !llm.Retryable(err) {
				t.Fatalf("error %+v", e)
			}
			if strings.Join(deltas, "") != "one two " {
				t.Fatalf("deltas before the cut: %q", deltas)
			}
		})
	}
}

func TestStreamStallCutByDeadline(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv, c := peer(t, f)
			srv.Reply(openaitest.Reply{Text: "one two three", StallAfter: 2})
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.Chat(ctx, llm.Request{
				Model: model(f), Messages: []llm.Message{{Role: llm.RoleUser, Text: "count"}},
				OnText: func(string) {},
			})
			e := llmError(t, err)
			if e.Kind != llm.KindUnavailable || e.Status != 0 || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %+v", e)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatal("the deadline did not cut the stream")
			}
		})
	}
}

// An error event in the middle of a stream is a retryable failure with the provider's message.
func TestStreamErrorEvent(t *testing.T) {
	t.Parallel()
	srv, c := peer(t, openaitest.OpenAI)
	srv.Reply(openaitest.Reply{Text: "one two three", ErrorAfter: 2})
	_, err := c.Chat(context.Background(), llm.Request{
		Model: model(openaitest.OpenAI), Messages: []llm.Message{{Role: llm.RoleUser, Text: "count"}},
		OnText: func(string) {},
	})
	e := llmError(t, err)
	if e.Kind != llm.KindUnavailable || e.Status != 0 || e.Message != "The server had an error while processing your request. Sorry about that!" {
		t.Fatalf("error %+v", e)
	}
}
