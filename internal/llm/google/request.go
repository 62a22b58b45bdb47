package google

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// skipSignature is the thoughtSignature Google documents for function calls whose own
// signature is not at hand ("skip_thought_signature_validator", read as proto JSON reads
// bytes: base64). Gemini 3 models refuse a history whose function call turns carry no
// signature; llm.ToolCall has nowhere to keep the real one, so every function call turn sent
// back carries this one on its first call.
var skipSignature, _ = base64.URLEncoding.DecodeString("skip_thought_signature_validator")

// checkModel refuses a model name the SDK would refuse or put into the path wrongly.
func checkModel(model string) error {
	if model == "" {
		return invalidf("no model named")
	}
	if strings.ContainsAny(model, "?&#") || strings.Contains(model, "..") {
		return invalidf("model name %q is not valid", model)
	}
	return nil
}

func invalidf(format string, args ...any) *llm.Error {
	return &llm.Error{Kind: llm.KindInvalid, Message: fmt.Sprintf(format, args...)}
}

// buildRequest maps req to the SDK's contents and config.
func buildRequest(req llm.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	contents, err := buildContents(req.Messages)
	if err != nil {
		return nil, nil, err
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = llm.DefaultMaxTokens
	}
	off := false
	config := &genai.GenerateContentConfig{
		MaxOutputTokens: int32(min(maxTokens, 1<<31-1)),
		// Continuing an unfinished answer would send more requests behind the runtime's back.
		AutomaticContinuation: &off,
	}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		config.Temperature = &t
	}
	if req.System != "" {
		config.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, len(req.Tools))
		for i, t := range req.Tools {
			d, err := declaration(t)
			if err != nil {
				return nil, nil, err
			}
			decls[i] = d
		}
		config.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	return contents, config, nil
}

// declaration maps a tool to a function declaration. Its JSON Schema goes in
// parametersJsonSchema, which takes JSON Schema as it is (additionalProperties, $ref, $defs,
// anyOf…), unlike parameters and its OpenAPI subset; only the $schema keyword, which has no
// meaning there, is dropped.
func declaration(t llm.Tool) (*genai.FunctionDeclaration, error) {
	if t.Name == "" {
		return nil, invalidf("a tool has no name")
	}
	d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
	raw := bytes.TrimSpace(t.Parameters)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return d, nil
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil || schema == nil {
		return nil, invalidf("tool %s: parameters are not a JSON Schema object", t.Name)
	}
	delete(schema, "$schema")
	if _, ok := schema["type"]; !ok {
		schema["type"] = "object"
	}
	d.ParametersJsonSchema = schema
	return d, nil
}

// buildContents maps the conversation to Gemini's turns: user turns, model turns (the
// assistant's text and its function calls), and the tools' results as functionResponse parts
// of a user turn, in the order of the calls they answer. Gemini's calls carry no ids: a
// result is tied to its call by its place and the function's name. Turns of one role in a row
// are merged into one.
func buildContents(msgs []llm.Message) ([]*genai.Content, error) {
	var (
		contents  []*genai.Content
		lastCalls []llm.ToolCall
	)
	add := func(role string, parts []*genai.Part) {
		if len(parts) == 0 {
			return
		}
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, parts...)
			return
		}
		contents = append(contents, &genai.Content{Role: role, Parts: parts})
	}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case llm.RoleUser:
			if m.Text != "" {
				add(genai.RoleUser, []*genai.Part{{Text: m.Text}})
			}
		case llm.RoleAssistant:
			var parts []*genai.Part
			if m.Text != "" {
				parts = append(parts, &genai.Part{Text: m.Text})
			}
			for j, tc := range m.ToolCalls {
				args, err := arguments(tc)
				if err != nil {
					return nil, err
				}
				p := &genai.Part{FunctionCall: &genai.FunctionCall{Name: tc.Name, Args: args}}
				if j == 0 {
					p.ThoughtSignature = skipSignature
				}
				parts = append(parts, p)
			}
			add(genai.RoleModel, parts)
			lastCalls = m.ToolCalls
		case llm.RoleTool:
			j := i
			for j < len(msgs) && msgs[j].Role == llm.RoleTool {
				j++
			}
			parts, err := results(msgs[i:j], lastCalls)
			if err != nil {
				return nil, err
			}
			add(genai.RoleUser, parts)
			i = j - 1
		default:
			return nil, invalidf("message %d has an unknown role %q", i, m.Role)
		}
	}
	if len(contents) == 0 {
		return nil, invalidf("the request has no messages")
	}
	return contents, nil
}

func arguments(tc llm.ToolCall) (map[string]any, error) {
	raw := bytes.TrimSpace(tc.Arguments)
	args := map[string]any{}
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return args, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, invalidf("tool call %s (%s): arguments are not a JSON object", tc.ID, tc.Name)
	}
	return args, nil
}

// results maps a run of tool results to functionResponse parts, put in the order of calls
// (the assistant turn before them); results that answer none of them follow in their own
// order. A result is {"output": text}, or {"error": text} when the call failed, the keys
// Google documents for a function's output and its error.
func results(msgs []llm.Message, calls []llm.ToolCall) ([]*genai.Part, error) {
	at := func(m llm.Message) int {
		if i := slices.IndexFunc(calls, func(c llm.ToolCall) bool { return c.ID != "" && c.ID == m.ToolCallID }); i >= 0 {
			return i
		}
		return len(calls)
	}
	ordered := slices.Clone(msgs)
	slices.SortStableFunc(ordered, func(a, b llm.Message) int { return at(a) - at(b) })
	parts := make([]*genai.Part, len(ordered))
	for k, m := range ordered {
		name := m.ToolName
		if i := at(m); i < len(calls) && calls[i].Name != "" {
			name = calls[i].Name
		}
		if name == "" {
			return nil, invalidf("tool result %q answers no known tool call", m.ToolCallID)
		}
		response := map[string]any{"output": m.Text}
		if m.IsError {
			response = map[string]any{"error": m.Text}
		}
		parts[k] = &genai.Part{FunctionResponse: &genai.FunctionResponse{Name: name, Response: response}}
	}
	return parts, nil
}
