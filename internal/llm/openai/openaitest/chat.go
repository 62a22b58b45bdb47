package openaitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ChatRequest is the body of a chat completion request.
type ChatRequest struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	Tools               []Tool         `json:"tools"`
	ToolChoice          any            `json:"tool_choice"`
	Temperature         *float64       `json:"temperature"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options"`
	ParallelToolCalls   *bool          `json:"parallel_tool_calls"`
	N                   *int           `json:"n"`
}

// StreamOptions are the request's stream_options (OpenAI only).
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is a message of a chat request.
type Message struct {
	Role string
	// Content is the message's text: its content string, or its text parts joined.
	Content string
	// HasContent is false when content was null or absent (an assistant turn of tool calls).
	HasContent bool
	// Name is the message's name (Mistral's tool results carry the tool's).
	Name       string
	ToolCalls  []MessageToolCall
	ToolCallID string
	// Prefix is Mistral's assistant prefix flag.
	Prefix bool
	// Fields are the keys the message had, sorted.
	Fields []string
}

// UnmarshalJSON decodes a message, its content a string, an array of text parts or null.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w struct {
		Role       string            `json:"role"`
		Content    json.RawMessage   `json:"content"`
		Name       string            `json:"name"`
		ToolCalls  []MessageToolCall `json:"tool_calls"`
		ToolCallID string            `json:"tool_call_id"`
		Prefix     bool              `json:"prefix"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	*m = Message{Role: w.Role, Name: w.Name, ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID, Prefix: w.Prefix}
	for k := range fields {
		m.Fields = append(m.Fields, k)
	}
	slices.Sort(m.Fields)
	content := bytes.TrimSpace(w.Content)
	switch {
	case len(content) == 0 || string(content) == "null":
	case content[0] == '"':
		m.HasContent = true
		return json.Unmarshal(content, &m.Content)
	case content[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(content, &parts); err != nil {
			return err
		}
		m.HasContent = true
		for _, p := range parts {
			m.Content += p.Text
		}
	default:
		return &json.UnmarshalTypeError{Value: "object", Type: reflect.TypeOf(""), Field: "content"}
	}
	return nil
}

// MessageToolCall is a tool call of an assistant message.
type MessageToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a tool call calls; Arguments is its JSON text (Mistral also
// takes an object, kept here as its text).
type FunctionCall struct {
	Name      string
	Arguments string
}

// UnmarshalJSON decodes a function call, its arguments a string or an object.
func (f *FunctionCall) UnmarshalJSON(b []byte) error {
	var w struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	f.Name = w.Name
	args := bytes.TrimSpace(w.Arguments)
	if len(args) > 0 && args[0] == '"' {
		return json.Unmarshal(args, &f.Arguments)
	}
	f.Arguments = string(args)
	return nil
}

// Tool is a tool of a chat request.
type Tool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef is a function tool's definition.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// DefaultReply is the text of the answer to a request when no reply is queued.
func DefaultReply(lastUserMessage string) string { return "You said: " + lastUserMessage }

func (s *Server) chat(w http.ResponseWriter, r *http.Request, idx int, body []byte) {
	req, e := s.decodeChat(body)
	if req != nil {
		s.update(idx, func(rec *Request) { rec.Chat = req })
	}
	if e != nil {
		s.invalid(w, e)
		return
	}
	reply, ok := s.nextReply()
	if !ok {
		reply = Reply{Text: DefaultReply(lastUser(req.Messages))}
	}
	a := s.answer(req, reply)
	if req.Stream {
		s.stream(w, r, req, a, reply)
		return
	}
	writeJSON(w, http.StatusOK, s.completion(a))
}

// mistralFields are the fields of Mistral's chat request schema; it refuses any other (422).
var mistralFields = map[string]bool{
	"model": true, "messages": true, "temperature": true, "top_p": true, "max_tokens": true, "stream": true,
	"stop": true, "random_seed": true, "metadata": true, "response_format": true, "tools": true, "tool_choice": true,
	"presence_penalty": true, "frequency_penalty": true, "n": true, "prediction": true, "parallel_tool_calls": true,
	"prompt_mode": true, "safe_prompt": true,
}

// mistralMessageFields are the fields of each role's message in Mistral's schema.
var mistralMessageFields = map[string]map[string]bool{
	"system":    {"role": true, "content": true},
	"user":      {"role": true, "content": true},
	"assistant": {"role": true, "content": true, "tool_calls": true, "prefix": true},
	"tool":      {"role": true, "content": true, "tool_call_id": true, "name": true},
}

var (
	mistralCallID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
	toolName      = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

// decodeChat decodes and checks a chat request as the provider does; the request is returned
// whenever it decoded, the error when the provider would refuse it.
func (s *Server) decodeChat(body []byte) (*ChatRequest, *apiError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		if s.flavor == Mistral {
			return nil, schemaError(detail{Type: "json_invalid", Loc: []any{"body", 0}, Msg: "JSON decode error", Input: map[string]any{}})
		}
		return nil, badParam("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)")
	}
	if s.flavor == Mistral {
		if e := mistralSchema(fields); e != nil {
			return nil, e
		}
	}
	var req ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		field := "body"
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			field = te.Field
		}
		if s.flavor == Mistral {
			return nil, schemaError(detail{Type: "type_error", Loc: []any{"body", field}, Msg: "Input should be a valid value", Input: nil})
		}
		return nil, badParam(field, "invalid_type", "Invalid type for '%s'.", field)
	}
	if s.flavor == OpenAI {
		if e := openAIChecks(fields, &req); e != nil {
			return &req, e
		}
	}
	if e := s.checkMessages(&req); e != nil {
		return &req, e
	}
	if e := s.checkTools(req.Tools); e != nil {
		return &req, e
	}
	return &req, nil
}

// mistralSchema is what Mistral's request schema refuses, with its 422.
func mistralSchema(fields map[string]json.RawMessage) *apiError {
	var ds []detail
	for _, k := range []string{"model", "messages"} {
		if _, ok := fields[k]; !ok {
			ds = append(ds, missing(k))
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !mistralFields[k] {
			var v any
			_ = json.Unmarshal(fields[k], &v)
			ds = append(ds, extraForbidden(v, k))
		}
	}
	var msgs []map[string]json.RawMessage
	_ = json.Unmarshal(fields["messages"], &msgs)
	for i, m := range msgs {
		var role string
		_ = json.Unmarshal(m["role"], &role)
		allowed, ok := mistralMessageFields[role]
		if !ok {
			ds = append(ds, detail{
				Type: "union_tag_invalid", Loc: []any{"body", "messages", i}, Input: role,
				Msg: fmt.Sprintf("Input tag '%s' found using 'role' does not match any of the expected tags: 'assistant', 'system', 'tool', 'user'", role),
			})
			continue
		}
		mk := make([]string, 0, len(m))
		for k := range m {
			mk = append(mk, k)
		}
		slices.Sort(mk)
		for _, k := range mk {
			if !allowed[k] {
				var v any
				_ = json.Unmarshal(m[k], &v)
				ds = append(ds, extraForbidden(v, "messages", i, role, k))
			}
		}
	}
	if len(ds) > 0 {
		return schemaError(ds...)
	}
	return nil
}

// openAIChecks are OpenAI's checks of the top-level parameters.
func openAIChecks(fields map[string]json.RawMessage, req *ChatRequest) *apiError {
	if req.Model == "" {
		return badParam("", "", "you must provide a model parameter")
	}
	if _, ok := fields["messages"]; !ok {
		return badParam("messages", "missing_required_parameter", "Missing required parameter: 'messages'.")
	}
	if t := req.Temperature; t != nil && *t > 2 {
		return badParam("temperature", "decimal_above_max_value", "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got %v instead.", *t)
	}
	if t := req.Temperature; t != nil && *t < 0 {
		return badParam("temperature", "decimal_below_min_value", "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got %v instead.", *t)
	}
	if req.MaxTokens != nil && req.MaxCompletionTokens != nil {
		return badParam("max_tokens", "invalid_value", "Invalid request: 'max_tokens' and 'max_completion_tokens' cannot both be set.")
	}
	for name, v := range map[string]*int{"max_tokens": req.MaxTokens, "max_completion_tokens": req.MaxCompletionTokens} {
		if v != nil && *v < 1 {
			return badParam(name, "integer_below_min_value", "Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", name, *v)
		}
	}
	if req.StreamOptions != nil && !req.Stream {
		return badParam("stream_options", "", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	return nil
}

// checkMessages checks the roles and the linkage of tool calls and their results.
func (s *Server) checkMessages(req *ChatRequest) *apiError {
	msgs := req.Messages
	if len(msgs) == 0 {
		if s.flavor == Mistral {
			return &apiError{Message: "Conversation must have at least one message", Type: "invalid_request_error"}
		}
		return badParam("messages", "empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	var pending []string // calls of the last assistant turn not answered yet
	pendingAt := -1
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return badParam(fmt.Sprintf("messages[%d].role", i), "invalid_value", "Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role)
		}
		if m.Role != "tool" && len(pending) > 0 {
			return s.unanswered(pendingAt, pending)
		}
		switch m.Role {
		case "assistant":
			if !m.HasContent && len(m.ToolCalls) == 0 {
				if s.flavor == Mistral {
					return &apiError{Message: "Assistant message must have either content or tool_calls, but not none.", Type: "invalid_request_error"}
				}
				return badParam(fmt.Sprintf("messages.[%d].content", i), "", "Invalid value for 'content': expected a string, got null.")
			}
			for j, c := range m.ToolCalls {
				if e := s.checkCallID(c.ID, fmt.Sprintf("messages[%d].tool_calls[%d].id", i, j)); e != nil {
					return e
				}
				if c.Function.Name == "" {
					return badParam(fmt.Sprintf("messages[%d].tool_calls[%d].function.name", i, j), "missing_required_parameter", "Missing required parameter: 'messages[%d].tool_calls[%d].function.name'.", i, j)
				}
				pending = append(pending, c.ID)
			}
			pendingAt = i
		case "tool":
			if e := s.checkCallID(m.ToolCallID, fmt.Sprintf("messages[%d].tool_call_id", i)); e != nil {
				return e
			}
			if pendingAt < 0 {
				if s.flavor == Mistral {
					return &apiError{Message: "Unexpected role 'tool' after role 'user'", Type: "invalid_request_error"}
				}
				return badParam(fmt.Sprintf("messages.[%d].role", i), "", "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			k := slices.Index(pending, m.ToolCallID)
			if k < 0 {
				if s.flavor == Mistral {
					return &apiError{Message: fmt.Sprintf("Unexpected tool call id %s in tool results", m.ToolCallID), Type: "invalid_request_error"}
				}
				return badParam(fmt.Sprintf("messages.[%d].tool_call_id", i), "", "Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", m.ToolCallID)
			}
			pending = slices.Delete(pending, k, k+1)
		default:
			pendingAt = -1
		}
	}
	if len(pending) > 0 {
		return s.unanswered(pendingAt, pending)
	}
	if s.flavor == Mistral {
		last := msgs[len(msgs)-1]
		if last.Role != "user" && last.Role != "tool" && !(last.Role == "assistant" && last.Prefix) {
			return &apiError{Message: fmt.Sprintf("Expected last role User or Tool (or Assistant with prefix True) for serving but got %s", last.Role), Type: "invalid_request_error"}
		}
	}
	return nil
}

func (s *Server) unanswered(at int, ids []string) *apiError {
	if s.flavor == Mistral {
		return &apiError{Message: "Not the same number of function calls and responses", Type: "invalid_request_error"}
	}
	return badParam(fmt.Sprintf("messages.[%d].role", at+1), "", "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(ids, ", "))
}

// checkCallID checks a tool call id as the provider does: Mistral's nine letters and digits,
// OpenAI's 40 characters at most.
func (s *Server) checkCallID(id, param string) *apiError {
	if s.flavor == Mistral {
		if !mistralCallID.MatchString(id) {
			return &apiError{Message: fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id), Type: "invalid_function_call", Code: "3280"}
		}
		return nil
	}
	if id == "" {
		return badParam(param, "missing_required_parameter", "Missing required parameter: '%s'.", param)
	}
	if len(id) > 40 {
		return badParam(param, "string_above_max_length", "Invalid '%s': string too long. Expected a string with maximum length 40, but got a string with length %d instead.", param, len(id))
	}
	return nil
}

func (s *Server) checkTools(tools []Tool) *apiError {
	for i, t := range tools {
		if t.Type != "function" {
			return badParam(fmt.Sprintf("tools[%d].type", i), "invalid_value", "Invalid value: '%s'. Supported values are: 'function' and 'custom'.", t.Type)
		}
		if !toolName.MatchString(t.Function.Name) {
			if s.flavor == Mistral {
				return &apiError{Message: fmt.Sprintf("Function name was %s but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64.", t.Function.Name), Type: "invalid_request_error"}
			}
			return badParam(fmt.Sprintf("tools[%d].function.name", i), "invalid_value", "Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
		}
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && p[0] != '{' {
			return badParam(fmt.Sprintf("tools[%d].function.parameters", i), "invalid_type", "Invalid type for 'tools[%d].function.parameters': expected an object, but got %s instead.", i, jsonKind(p))
		}
	}
	return nil
}

func jsonKind(b []byte) string {
	switch b[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func lastUser(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// answer is a reply made concrete: ids, finish reason, usage.
type answer struct {
	id, model, fingerprint string
	created                int64
	text                   string
	calls                  []ToolCall
	finish                 string
	usage                  Usage
}

func (s *Server) answer(req *ChatRequest, r Reply) answer {
	a := answer{model: r.Model, text: r.Text, finish: r.FinishReason, created: time.Now().Unix()}
	if a.model == "" {
		a.model = req.Model
	}
	if s.flavor == Mistral {
		a.id = s.hexID(32)
	} else {
		a.id = "chatcmpl-" + s.alnumID(29)
		a.fingerprint = "fp_" + s.hexID(10)
	}
	completion := countWords(r.Text)
	for _, c := range r.ToolCalls {
		if c.ID == "" {
			if s.flavor == Mistral {
				c.ID = s.alnumID(9)
			} else {
				c.ID = "call_" + s.alnumID(24)
			}
		}
		if c.Arguments == "" {
			c.Arguments = "{}"
		}
		completion += 1 + countWords(c.Arguments)
		a.calls = append(a.calls, c)
	}
	if a.finish == "" {
		a.finish = "stop"
		if len(a.calls) > 0 {
			a.finish = "tool_calls"
		}
	}
	if r.Usage != nil {
		a.usage = *r.Usage
	} else {
		prompt := 0
		for _, m := range req.Messages {
			prompt += 1 + countWords(m.Content)
		}
		a.usage = Usage{PromptTokens: prompt, CompletionTokens: completion}
	}
	return a
}

func (u Usage) wire(flavor Flavor) map[string]any {
	m := map[string]any{
		"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens,
		"total_tokens": u.PromptTokens + u.CompletionTokens,
	}
	if flavor == OpenAI {
		m["prompt_tokens_details"] = map[string]any{"cached_tokens": 0, "audio_tokens": 0}
		m["completion_tokens_details"] = map[string]any{
			"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
		}
	}
	return m
}

// completion is the body of a non-streamed answer.
func (s *Server) completion(a answer) map[string]any {
	msg := map[string]any{"role": "assistant"}
	var calls []any
	for i, c := range a.calls {
		call := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		if s.flavor == Mistral {
			call["index"] = i
		}
		calls = append(calls, call)
	}
	if s.flavor == Mistral {
		msg["content"] = a.text
		msg["tool_calls"] = calls
		msg["prefix"] = false
		return map[string]any{
			"id": a.id, "object": "chat.completion", "created": a.created, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": a.finish}},
			"usage":   a.usage.wire(s.flavor),
		}
	}
	if a.text == "" && len(calls) > 0 {
		msg["content"] = nil
	} else {
		msg["content"] = a.text
	}
	msg["refusal"] = nil
	msg["annotations"] = []any{}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": a.id, "object": "chat.completion", "created": a.created, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": a.finish}},
		"usage":   a.usage.wire(s.flavor), "service_tier": "default", "system_fingerprint": a.fingerprint,
	}
}

// chunks are the events of a streamed answer, as the provider sends them.
func (s *Server) chunks(req *ChatRequest, a answer) []map[string]any {
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	chunk := func(delta map[string]any, finish any) map[string]any {
		choice := map[string]any{"index": 0, "delta": delta, "finish_reason": finish}
		m := map[string]any{"id": a.id, "object": "chat.completion.chunk", "created": a.created, "model": a.model, "choices": []any{choice}}
		if s.flavor == OpenAI {
			choice["logprobs"] = nil
			m["system_fingerprint"] = a.fingerprint
			if includeUsage {
				m["usage"] = nil
			}
		}
		return m
	}
	var out []map[string]any
	if s.flavor == Mistral {
		out = append(out, chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	} else {
		out = append(out, chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	}
	for _, piece := range words(a.text) {
		out = append(out, chunk(map[string]any{"content": piece}, nil))
	}
	if s.flavor == Mistral {
		// Mistral sends the calls whole, in one event.
		if len(a.calls) > 0 {
			var calls []any
			for i, c := range a.calls {
				calls = append(calls, map[string]any{"id": c.ID, "function": map[string]any{"name": c.Name, "arguments": c.Arguments}, "index": i})
			}
			out = append(out, chunk(map[string]any{"tool_calls": calls}, nil))
		}
		last := chunk(map[string]any{"content": ""}, a.finish)
		last["usage"] = a.usage.wire(s.flavor)
		return append(out, last)
	}
	for i, c := range a.calls {
		out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil))
		for _, piece := range pieces(c.Arguments, 8) {
			out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": piece},
			}}}, nil))
		}
	}
	out = append(out, chunk(map[string]any{}, a.finish))
	if includeUsage {
		u := chunk(nil, nil)
		u["choices"] = []any{}
		u["usage"] = a.usage.wire(s.flavor)
		out = append(out, u)
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *ChatRequest, a answer, reply Reply) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for i, c := range s.chunks(req, a) {
		if reply.CutAfter > 0 && i == reply.CutAfter {
			if flusher != nil {
				flusher.Flush()
			}
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		}
		if reply.EndAfter > 0 && i == reply.EndAfter {
			return
		}
		if reply.ErrorAfter > 0 && i == reply.ErrorAfter {
			b, _ := json.Marshal(map[string]any{"error": map[string]any{
				"message": "The server had an error while processing your request. Sorry about that!",
				"type":    "server_error", "param": nil, "code": nil,
			}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			return
		}
		if reply.StallAfter > 0 && i == reply.StallAfter {
			if flusher != nil {
				flusher.Flush()
			}
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			return
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// words splits text into pieces that each end after a space, as models stream text.
func words(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			return append(out, text)
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// pieces splits s into pieces of n runes at most.
func pieces(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}
