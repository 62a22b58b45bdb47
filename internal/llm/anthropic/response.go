package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// toResponse maps a message (answered whole, or assembled from a stream):
//
//   - Text is the text blocks joined with nothing between them, as the streamed deltas join.
//   - Each tool_use block is a tool call with its id, name and input (the arguments).
//   - Other blocks (thinking, server tools' blocks) are dropped: llm has no place for them.
//   - Usage: InputTokens counts the input read from or written to the prompt cache too
//     (Anthropic's input_tokens leaves them out), so it is the whole prompt as other
//     providers count it; OutputTokens is output_tokens.
//   - Model is the model the API says answered.
func toResponse(m *anthropic.Message) *llm.Response {
	r := &llm.Response{
		Stop:  stopReason(m.StopReason),
		Model: string(m.Model),
		Usage: llm.Usage{
			InputTokens:  m.Usage.InputTokens + m.Usage.CacheCreationInputTokens + m.Usage.CacheReadInputTokens,
			OutputTokens: m.Usage.OutputTokens,
		},
	}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := json.RawMessage(bytes.TrimSpace(b.Input))
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			r.ToolCalls = append(r.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: append(json.RawMessage(nil), args...)})
		}
	}
	r.Text = text.String()
	return r
}

// stopReason maps Anthropic's stop_reason:
//
//   - end_turn, stop_sequence: StopEnd.
//   - tool_use: StopToolCalls.
//   - max_tokens: StopMaxTokens; model_context_window_exceeded too (the answer was cut, by
//     the context window rather than by max_tokens).
//   - refusal (the safety classifiers stopped the answer): StopFiltered.
//   - pause_turn (a server tool's long turn paused; this adapter offers none) and anything
//     new: StopEnd.
func stopReason(s anthropic.StopReason) llm.StopReason {
	switch s {
	case anthropic.StopReasonToolUse:
		return llm.StopToolCalls
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case anthropic.StopReasonRefusal:
		return llm.StopFiltered
	default:
		return llm.StopEnd
	}
}
