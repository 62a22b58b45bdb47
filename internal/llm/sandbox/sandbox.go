// Package sandbox is the model of test keys and of `make run`: it answers at once, the same way
// every time, and calls a tool when asked to by a phrase, so that an agent can be tried, and
// tested, with no provider account (docs/agents.md).
package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// Model is the sandbox model.
type Model struct{}

var _ llm.Model = Model{}

// callPhrase is how a message asks the sandbox model for a tool: "call <tool name>", optionally
// followed by the JSON object of its arguments, e.g. call get_order_status {"orderNumber":"A-1"}.
var callPhrase = regexp.MustCompile(`(?i)\bcall ([a-zA-Z0-9_-]{1,64})(\s+(\{.*\}))?`)

// Chat answers the last turn: a tool's result is reported back; a user message that asks for a
// tool the request offers calls it; anything else is echoed with the model's name.
func (Model) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &llm.Error{Kind: llm.KindUnavailable, Message: err.Error(), Err: err}
	}
	resp := &llm.Response{Model: req.Model, Stop: llm.StopEnd}
	var last llm.Message
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1]
	}
	switch {
	case last.Role == llm.RoleTool:
		if last.IsError {
			resp.Text = fmt.Sprintf("The tool %s failed: %s", last.ToolName, last.Text)
		} else {
			resp.Text = fmt.Sprintf("The tool %s answered: %s", last.ToolName, last.Text)
		}
	case last.Role == llm.RoleUser:
		if call := toolCall(last.Text, len(req.Messages)); call != nil {
			resp.ToolCalls, resp.Stop = []llm.ToolCall{*call}, llm.StopToolCalls
			break
		}
		resp.Text = fmt.Sprintf("[%s] You said: %s", req.Model, last.Text)
	default:
		resp.Text = fmt.Sprintf("[%s] Hello! How can I help?", req.Model)
	}
	max := req.MaxTokens
	if max <= 0 {
		max = llm.DefaultMaxTokens
	}
	if words := strings.Fields(resp.Text); len(words) > max {
		resp.Text, resp.Stop = strings.Join(words[:max], " "), llm.StopMaxTokens
	}
	resp.Usage = llm.Usage{InputTokens: inputTokens(req), OutputTokens: int64(len(strings.Fields(resp.Text)) + 10*len(resp.ToolCalls))}
	if req.OnText != nil && resp.Text != "" {
		for _, w := range strings.SplitAfter(resp.Text, " ") {
			req.OnText(w)
		}
	}
	return resp, nil
}

// toolCall is the call the text asks for; arguments that are not a JSON object are sent as {}.
func toolCall(text string, turn int) *llm.ToolCall {
	m := callPhrase.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	args := json.RawMessage(`{}`)
	if m[3] != "" {
		var probe map[string]any
		if json.Unmarshal([]byte(m[3]), &probe) == nil {
			args = json.RawMessage(m[3])
		}
	}
	// An unknown tool is called all the same: the runtime answers it with the valid names, as
	// a real model's mistake would be.
	return &llm.ToolCall{ID: fmt.Sprintf("call_%d", turn), Name: m[1], Arguments: args}
}

// inputTokens counts a request's words as tokens: enough to show budgets and stats working.
func inputTokens(req llm.Request) int64 {
	n := len(strings.Fields(req.System))
	for _, m := range req.Messages {
		n += len(strings.Fields(m.Text))
	}
	return int64(n)
}
