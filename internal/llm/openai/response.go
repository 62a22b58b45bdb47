package openai

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	oai "github.com/openai/openai-go/v3"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// response is a non-streamed answer as an llm.Response (its first choice: one is asked for).
func response(cc *oai.ChatCompletion) (*llm.Response, error) {
	if len(cc.Choices) == 0 {
		return nil, broken("the answer has no choices")
	}
	ch := cc.Choices[0]
	r := &llm.Response{
		Text:  ch.Message.Content,
		Model: cc.Model,
		Usage: llm.Usage{InputTokens: cc.Usage.PromptTokens, OutputTokens: cc.Usage.CompletionTokens},
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered
		}
		raw := tc.Function.Arguments
		if raw == "" {
			// Mistral may send the arguments as an object rather than a string.
			raw = tc.Function.JSON.Arguments.Raw()
		}
		call, err := toolCall(tc.ID, tc.Function.Name, raw)
		if err != nil {
			return nil, err
		}
		r.ToolCalls = append(r.ToolCalls, call)
	}
	return finish(r, ch.FinishReason, ch.Message.Refusal)
}

// toolCall is a call of the answer; its arguments must be a JSON object.
func toolCall(id, name, args string) (llm.ToolCall, error) {
	a := bytes.TrimSpace([]byte(args))
	if len(a) == 0 || string(a) == "null" {
		a = []byte("{}")
	}
	if !json.Valid(a) || a[0] != '{' {
		return llm.ToolCall{}, broken("the model called %s with arguments that are not a JSON object", name)
	}
	return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(a)}, nil
}

// finish sets the stop reason from the choice's finish_reason.
//
//   - stop → end; length, and Mistral's model_length (the context is full) → max_tokens;
//     tool_calls (and the older function_call) → tool_calls; content_filter → filtered.
//   - Some compatible servers (older Ollama) say stop for an answer of tool calls: an answer
//     with tool calls stops for tool_calls whatever the reason says.
//   - A refusal (OpenAI's refusal field, with no content) becomes the text, stopped as filtered.
//   - Mistral's error (the generation failed) is a failure of the call, retryable.
func finish(r *llm.Response, reason, refusal string) (*llm.Response, error) {
	switch reason {
	case "length", "model_length":
		r.Stop = llm.StopMaxTokens
	case "tool_calls", "function_call":
		r.Stop = llm.StopToolCalls
	case "content_filter":
		r.Stop = llm.StopFiltered
	case "error":
		return nil, broken("the model stopped with an error")
	default:
		r.Stop = llm.StopEnd
	}
	if r.Stop == llm.StopEnd && len(r.ToolCalls) > 0 {
		r.Stop = llm.StopToolCalls
	}
	if r.Text == "" && refusal != "" {
		r.Text, r.Stop = refusal, llm.StopFiltered
	}
	return r, nil
}

// accumulator assembles a streamed answer: text deltas, tool calls by their index (the id and
// name come once, the arguments in pieces), the finish reason and the usage (OpenAI's last
// chunk with no choices, or Mistral's last chunk).
type accumulator struct {
	text     strings.Builder
	refusal  strings.Builder
	calls    map[int64]*partialCall
	order    []int64
	reason   string
	finished bool
	usage    llm.Usage
	model    string
}

type partialCall struct {
	id, name string
	args     strings.Builder
}

func (a *accumulator) add(chunk oai.ChatCompletionChunk, onText func(string)) {
	if a.model == "" {
		a.model = chunk.Model
	}
	if chunk.JSON.Usage.Valid() {
		a.usage = llm.Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if d.Content != "" {
			a.text.WriteString(d.Content)
			onText(d.Content)
		}
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			if a.calls == nil {
				a.calls = map[int64]*partialCall{}
			}
			p := a.calls[tc.Index]
			if p == nil {
				p = &partialCall{}
				a.calls[tc.Index] = p
				a.order = append(a.order, tc.Index)
			}
			if tc.ID != "" {
				p.id = tc.ID
			}
			if p.name == "" {
				p.name = tc.Function.Name
			}
			p.args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			a.reason, a.finished = ch.FinishReason, true
		}
	}
}

func (a *accumulator) response() (*llm.Response, error) {
	if !a.finished {
		return nil, broken("the stream ended before the answer did")
	}
	r := &llm.Response{Text: a.text.String(), Usage: a.usage, Model: a.model}
	order := slices.Clone(a.order)
	slices.Sort(order)
	for _, i := range order {
		p := a.calls[i]
		call, err := toolCall(p.id, p.name, p.args.String())
		if err != nil {
			return nil, err
		}
		r.ToolCalls = append(r.ToolCalls, call)
	}
	return finish(r, a.reason, a.refusal.String())
}
