package openai

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// params is req as a chat completion request.
func (c *Client) params(req llm.Request) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{Model: req.Model}
	if req.System != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.System))
	}
	names := map[string]string{} // tool call id → tool name, for Mistral's named tool results
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			p.Messages = append(p.Messages, oai.UserMessage(m.Text))
		case llm.RoleAssistant:
			var a oai.ChatCompletionAssistantMessageParam
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = oai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				args := string(bytes.TrimSpace(tc.Arguments))
				if args == "" || args == "null" {
					args = "{}"
				}
				names[tc.ID] = tc.Name
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.callID(tc.ID),
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			p.Messages = append(p.Messages, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case llm.RoleTool:
			text := m.Text
			if m.IsError {
				text = toolError(m.Text)
			}
			t := oai.ChatCompletionToolMessageParam{ToolCallID: c.callID(m.ToolCallID)}
			t.Content.OfString = oai.String(text)
			if c.flavor == FlavorMistral {
				name := m.ToolName
				if name == "" {
					name = names[m.ToolCallID]
				}
				if name != "" {
					// Mistral's tool message has a name, OpenAI's does not.
					t.SetExtraFields(map[string]any{"name": name})
				}
			}
			p.Messages = append(p.Messages, oai.ChatCompletionMessageParamUnion{OfTool: &t})
		default:
			return p, invalid("message %d has the unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := parameters(t.Parameters)
		if err != nil {
			return p, invalid("tool %s: %v", t.Name, err)
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = oai.String(t.Description)
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(def))
	}
	if req.Temperature != nil {
		p.Temperature = oai.Float(*req.Temperature)
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = llm.DefaultMaxTokens
	}
	if c.completionTokens {
		p.MaxCompletionTokens = oai.Int(int64(maxTokens))
	} else {
		p.MaxTokens = oai.Int(int64(maxTokens))
	}
	return p, nil
}

// toolError is the content of a tool result that failed: this API has no error flag.
func toolError(text string) string {
	if text == "" {
		return "Error: the tool call failed."
	}
	return "Error: " + text
}

// parameters is a tool's JSON Schema as the SDK sends it. Each top-level value stays the raw JSON
// it was, so nothing in the schema is re-encoded (large numbers, key order).
func parameters(raw json.RawMessage) (shared.FunctionParameters, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("parameters are not a JSON Schema object")
	}
	out := make(shared.FunctionParameters, len(fields))
	for k, v := range fields {
		out[k] = v
	}
	return out, nil
}

var mistralCallID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// maxOpenAICallID is the longest tool call id OpenAI takes back.
const maxOpenAICallID = 40

// callID is the id to send for a tool call id: itself when the provider takes it, else one
// derived from it (the same id always gives the same one).
func (c *Client) callID(id string) string {
	if c.flavor == FlavorMistral {
		if mistralCallID.MatchString(id) {
			return id
		}
		return derivedID(id, 9)
	}
	if len(id) <= maxOpenAICallID {
		return id
	}
	return "call_" + derivedID(id, 24)
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// derivedID is n letters and digits (n at most 32) derived from id by SHA-256.
func derivedID(id string, n int) string {
	sum := sha256.Sum256([]byte(id))
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[int(sum[i])%len(alnum)]
	}
	return string(b)
}
