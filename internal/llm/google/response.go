package google

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// accumulator builds one llm.Response from an answer, or from the events of a streamed one:
// text and function calls are gathered in order, the finish reason, usage and model version
// are the last ones given (each event's usage is the total so far, not a delta).
type accumulator struct {
	onText  func(string)
	model   string
	firstID int

	text        strings.Builder
	calls       []llm.ToolCall
	finish      genai.FinishReason
	finishMsg   string
	blocked     genai.BlockedReason
	usage       *genai.GenerateContentResponseUsageMetadata
	version     string
	sawAnything bool
}

// newAccumulator numbers the answer's tool calls after those already in the conversation
// (call_0, call_1…), so that ids stay unique within it.
func newAccumulator(req llm.Request, onText func(string)) *accumulator {
	n := 0
	for _, m := range req.Messages {
		n += len(m.ToolCalls)
	}
	return &accumulator{onText: onText, model: req.Model, firstID: n}
}

func (a *accumulator) add(r *genai.GenerateContentResponse) {
	if r == nil {
		return
	}
	a.sawAnything = true
	if r.UsageMetadata != nil {
		a.usage = r.UsageMetadata
	}
	if r.ModelVersion != "" {
		a.version = r.ModelVersion
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		a.blocked = r.PromptFeedback.BlockReason
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		return
	}
	c := r.Candidates[0]
	if c.FinishReason != "" && c.FinishReason != genai.FinishReasonUnspecified {
		a.finish = c.FinishReason
		a.finishMsg = c.FinishMessage
	}
	if c.Content == nil {
		return
	}
	for _, p := range c.Content.Parts {
		switch {
		case p == nil || p.Thought:
			// Thought summaries are the model's reasoning, not its answer.
		case p.FunctionCall != nil:
			id := p.FunctionCall.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", a.firstID+len(a.calls))
			}
			args := p.FunctionCall.Args
			if args == nil {
				args = map[string]any{}
			}
			raw, err := json.Marshal(args)
			if err != nil {
				raw = []byte("{}")
			}
			a.calls = append(a.calls, llm.ToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: raw})
		case p.Text != "":
			a.text.WriteString(p.Text)
			if a.onText != nil {
				a.onText(p.Text)
			}
		}
	}
}

func (a *accumulator) response() (*llm.Response, error) {
	if !a.sawAnything {
		return nil, &llm.Error{Kind: llm.KindUnavailable, Message: "the API answered nothing"}
	}
	if failedCall(a.finish) {
		msg := fmt.Sprintf("the model made an invalid function call (finishReason %s)", a.finish)
		if a.finishMsg != "" {
			msg += ": " + a.finishMsg
		}
		return nil, &llm.Error{Kind: llm.KindUnavailable, Message: msg}
	}
	resp := &llm.Response{
		Text:      a.text.String(),
		ToolCalls: a.calls,
		Stop:      stopReason(a.finish, a.blocked, len(a.calls) > 0),
		Model:     a.version,
	}
	if resp.Model == "" {
		resp.Model = a.model
	}
	if u := a.usage; u != nil {
		// Tool-use prompts count as input, thoughts as output (they are billed so), so that
		// input and output add up to totalTokenCount.
		resp.Usage = llm.Usage{
			InputTokens:  int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount),
			OutputTokens: int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
		}
	}
	return resp, nil
}

// failedCall reports finish reasons that say the model's function call was unusable: the
// answer holds nothing to act on, but another try or another model may do better.
func failedCall(f genai.FinishReason) bool {
	switch f {
	case genai.FinishReasonMalformedFunctionCall, genai.FinishReasonUnexpectedToolCall, genai.FinishReasonTooManyToolCalls:
		return true
	}
	return false
}

// stopReason maps Gemini's finishReason (STOP even when the model calls functions) and a
// blocked prompt to a StopReason.
func stopReason(f genai.FinishReason, blocked genai.BlockedReason, calls bool) llm.StopReason {
	if blocked != "" {
		return llm.StopFiltered
	}
	switch f {
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonLanguage,
		genai.FinishReasonImageSafety, genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return llm.StopFiltered
	case genai.FinishReasonMaxTokens, genai.FinishReasonContinuation:
		// CONTINUATION: the answer is unfinished and automatic continuation is off.
		return llm.StopMaxTokens
	}
	if calls {
		return llm.StopToolCalls
	}
	return llm.StopEnd
}
