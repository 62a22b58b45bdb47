package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// MessagesRequest is the body of POST /v1/messages as the peer decoded it. Content given as a
// plain string (which the API allows for system and messages) is decoded as one text block.
type MessagesRequest struct {
	Model      string          `json:"model"`
	MaxTokens  *int64          `json:"max_tokens"`
	System     Blocks          `json:"system"`
	Messages   []Message       `json:"messages"`
	Tools      []Tool          `json:"tools"`
	Stream     *bool           `json:"stream"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	// The sampling parameters, removed in API version 2026-10-21 (a request of that version
	// that sends any of them is refused with a 400).
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	TopK        *int64   `json:"top_k"`
}

// SystemText is the system prompt: the text of the system blocks, joined.
func (r MessagesRequest) SystemText() string { return r.System.Text() }

// Message is one turn of the conversation.
type Message struct {
	Role    string `json:"role"`
	Content Blocks `json:"content"`
}

// Block is one content block: text, tool_use or tool_result (the fields of the others are not
// kept).
type Block struct {
	Type string `json:"type"`
	// Text of a text block.
	Text string `json:"text,omitempty"`
	// ID, Name and Input of a tool_use block.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError of a tool_result block.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   Blocks `json:"content,omitempty"`
	IsError   *bool  `json:"is_error,omitempty"`
}

// Blocks is a content array; it decodes a plain string as one text block too.
type Blocks []Block

// UnmarshalJSON accepts a string or an array of blocks.
func (b *Blocks) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = Blocks{{Type: "text", Text: s}}
		return nil
	}
	var blocks []Block
	if err := json.Unmarshal(data, &blocks); err != nil {
		return err
	}
	*b = blocks
	return nil
}

// Text is the text of the text blocks, joined.
func (b Blocks) Text() string {
	var s strings.Builder
	for _, blk := range b {
		if blk.Type == "text" {
			s.WriteString(blk.Text)
		}
	}
	return s.String()
}

// Tool is a tool the request offers the model.
type Tool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validate checks what the Messages API checks of a request body, returning the message of its
// 400 invalid_request_error; "" when the body is acceptable.
func validate(version string, r *MessagesRequest) string {
	if r.Model == "" {
		return "model: Field required"
	}
	if r.MaxTokens == nil {
		return "max_tokens: Field required"
	}
	if *r.MaxTokens < 1 {
		return "max_tokens: Input should be greater than or equal to 1"
	}
	if version == Version {
		switch {
		case r.Temperature != nil:
			return "temperature: Extra inputs are not permitted"
		case r.TopP != nil:
			return "top_p: Extra inputs are not permitted"
		case r.TopK != nil:
			return "top_k: Extra inputs are not permitted"
		}
	} else if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1) {
		return "temperature: Input should be less than or equal to 1 and greater than or equal to 0"
	}
	for _, blk := range r.System {
		if blk.Type != "text" {
			return fmt.Sprintf("system: Input tag '%s' found using 'type' does not match any of the expected tags: 'text'", blk.Type)
		}
		if blk.Text == "" {
			return "system: text content blocks must be non-empty"
		}
	}
	if msg := validateTools(r.Tools); msg != "" {
		return msg
	}
	if r.Messages == nil {
		return "messages: Field required"
	}
	if len(r.Messages) == 0 {
		return "messages: at least one message is required"
	}
	return validateMessages(version, r.Messages)
}

func validateTools(tools []Tool) string {
	seen := map[string]bool{}
	for i, t := range tools {
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool: not the peer's business
		}
		if !toolName.MatchString(t.Name) {
			return fmt.Sprintf("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		if seen[t.Name] {
			return "tools: Tool names must be unique."
		}
		seen[t.Name] = true
		if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
			return fmt.Sprintf("tools.%d.custom.input_schema: Field required", i)
		}
		var schema struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return fmt.Sprintf("tools.%d.custom.input_schema: Input should be a valid dictionary", i)
		}
		if schema.Type != "object" {
			return fmt.Sprintf("tools.%d.custom.input_schema.type: Input should be 'object'", i)
		}
	}
	return ""
}

func validateMessages(version string, msgs []Message) string {
	for i, m := range msgs {
		switch {
		case m.Role == "user" || m.Role == "assistant":
		case m.Role == "system" && version == Version:
		default:
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		last := i == len(msgs)-1
		if len(m.Content) == 0 && !(last && m.Role == "assistant") {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		sawOther := false
		for j, blk := range m.Content {
			switch blk.Type {
			case "text":
				if blk.Text == "" {
					return "messages: text content blocks must be non-empty"
				}
				sawOther = true
			case "tool_use":
				if m.Role != "assistant" {
					return fmt.Sprintf("messages.%d.content.%d: `tool_use` blocks can only be in `assistant` messages", i, j)
				}
				if blk.ID == "" {
					return fmt.Sprintf("messages.%d.content.%d.tool_use.id: Field required", i, j)
				}
				if blk.Name == "" {
					return fmt.Sprintf("messages.%d.content.%d.tool_use.name: Field required", i, j)
				}
				var input map[string]any
				if err := json.Unmarshal(blk.Input, &input); err != nil || input == nil {
					return fmt.Sprintf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
				}
				sawOther = true
			case "tool_result":
				if m.Role != "user" {
					return fmt.Sprintf("messages.%d.content.%d: `tool_result` blocks can only be in `user` messages", i, j)
				}
				if blk.ToolUseID == "" {
					return fmt.Sprintf("messages.%d.content.%d.tool_result.tool_use_id: Field required", i, j)
				}
				if sawOther {
					return fmt.Sprintf("messages.%d: `tool_result` blocks must come first in the content array, before any other content", i)
				}
				for _, inner := range blk.Content {
					if inner.Type == "text" && inner.Text == "" {
						return "messages: text content blocks must be non-empty"
					}
				}
			default:
				sawOther = true
			}
		}
	}
	// Each tool_use must be answered by a tool_result in the very next message, and each
	// tool_result must answer a tool_use of the message just before it.
	for i, m := range msgs {
		if m.Role == "assistant" {
			var unanswered []string
			var next Blocks
			if i+1 < len(msgs) && msgs[i+1].Role == "user" {
				next = msgs[i+1].Content
			}
			for _, blk := range m.Content {
				if blk.Type == "tool_use" && !hasResult(next, blk.ID) {
					unanswered = append(unanswered, blk.ID)
				}
			}
			if len(unanswered) > 0 {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(unanswered, ", "))
			}
		}
		if m.Role == "user" {
			var prev Blocks
			if i > 0 && msgs[i-1].Role == "assistant" {
				prev = msgs[i-1].Content
			}
			for j, blk := range m.Content {
				if blk.Type == "tool_result" && !hasUse(prev, blk.ToolUseID) {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, blk.ToolUseID)
				}
			}
		}
	}
	return ""
}

func hasResult(blocks Blocks, id string) bool {
	for _, b := range blocks {
		if b.Type == "tool_result" && b.ToolUseID == id {
			return true
		}
	}
	return false
}

func hasUse(blocks Blocks, id string) bool {
	for _, b := range blocks {
		if b.Type == "tool_use" && b.ID == id {
			return true
		}
	}
	return false
}

// The answer's wire shapes.

type wireMessage struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []wireBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        wireUsage   `json:"usage"`
}

type wireBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type wireUsage struct {
	InputTokens              int64  `json:"input_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

type wireError struct {
	Type  string         `json:"type"`
	Error wireErrorInner `json:"error"`
	// RequestID is in the body as well as in the request-id header.
	RequestID string `json:"request_id,omitempty"`
}

type wireErrorInner struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
