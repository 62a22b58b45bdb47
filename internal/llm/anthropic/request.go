package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// toParams maps an llm.Request to the body of POST /v1/messages:
//
//   - System is the top-level system field (one text block), not a message.
//   - A user message is a user turn with one text block.
//   - An assistant message is an assistant turn: its text block (when it has text) and a
//     tool_use block per call, with the call's id, name and arguments. One with neither is
//     left out: the API refuses empty turns.
//   - Tool results are tool_result blocks (tool_use_id, content, is_error) in a user turn,
//     which must come right after the assistant turn that made the calls; the results of
//     consecutive RoleTool messages go in one user turn, and a user message right after them
//     joins that turn, after the results (the API wants tool_result blocks first). ToolName
//     is not sent: Anthropic links a result to its call by id alone.
//   - MaxTokens is max_tokens, which the API requires: llm.DefaultMaxTokens when 0.
//   - Temperature is not sent. API version 2026-10-21, the one SDK v2 speaks, removed
//     temperature, top_p and top_k: a request with any of them, even at its default, is
//     refused with a 400 (and models from Claude Opus 4.7 on refuse a non-default value in
//     every version). Halving llm's 0..2 into Anthropic's old 0..1 would only turn every
//     request that sets a temperature into an invalid one.
func toParams(req llm.Request) (anthropic.MessageNewParams, error) {
	var p anthropic.MessageNewParams
	if req.Model == "" {
		return p, errors.New("no model named")
	}
	p.Model = anthropic.Model(req.Model)
	p.MaxTokens = int64(req.MaxTokens)
	if p.MaxTokens <= 0 {
		p.MaxTokens = llm.DefaultMaxTokens
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	msgs, err := toMessages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for i, t := range req.Tools {
		tp, err := toTool(t)
		if err != nil {
			return p, fmt.Errorf("tool %d (%s): %w", i, t.Name, err)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

func toMessages(in []llm.Message) ([]anthropic.MessageParam, error) {
	var out []anthropic.MessageParam
	// results is the user turn of tool results being filled, nil when the last turn is not one.
	var results *anthropic.UserMessageParam
	for i, m := range in {
		switch m.Role {
		case llm.RoleUser:
			if m.Text == "" {
				return nil, fmt.Errorf("message %d: a user message without text", i)
			}
			if results != nil {
				results.Content = append(results.Content, anthropic.NewTextBlock(m.Text))
				results = nil
				continue
			}
			out = append(out, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Text)))
		case llm.RoleAssistant:
			results = nil
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("message %d: tool call %d has no id or name", i, j)
				}
				args, err := objectOrEmpty(tc.Arguments)
				if err != nil {
					return nil, fmt.Errorf("message %d: tool call %s: arguments: %w", i, tc.ID, err)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, args, tc.Name))
			}
			if len(blocks) == 0 {
				continue
			}
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool result without the id of its call", i)
			}
			block := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Text != "" {
				// The API refuses empty text blocks: a result without text has no content.
				block.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Text}}}
			}
			if m.IsError {
				block.IsError = anthropic.Bool(true)
			}
			if results == nil {
				out = append(out, anthropic.NewUserMessage())
				results = out[len(out)-1].OfUser
			}
			results.Content = append(results.Content, anthropic.ContentBlockParamUnion{OfToolResult: &block})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no messages")
	}
	return out, nil
}

// toTool maps a tool; its parameters (a JSON Schema of an object) are sent as they are, with
// "type": "object" added when the schema leaves it out (the API requires it).
func toTool(t llm.Tool) (anthropic.ToolParam, error) {
	tp := anthropic.ToolParam{Name: t.Name}
	if t.Description != "" {
		tp.Description = anthropic.String(t.Description)
	}
	schema := map[string]any{}
	if len(bytes.TrimSpace(t.Parameters)) > 0 {
		if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
			return tp, errors.New("parameters are not a JSON object")
		}
	}
	switch typ, ok := schema["type"]; {
	case !ok:
		schema["type"] = "object"
	case typ != "object":
		return tp, fmt.Errorf("parameters are a schema of type %v, not object", typ)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return tp, err
	}
	tp.InputSchema = param.Override[anthropic.ToolInputSchemaParam](json.RawMessage(raw))
	return tp, nil
}

// objectOrEmpty checks a call's arguments are a JSON object; empty arguments are {}.
func objectOrEmpty(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	return raw, nil
}
