package googletest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// SkipSignature is Google's documented placeholder thoughtSignature for function calls the
// model did not make itself (history from another model, or rebuilt without its signature).
const SkipSignature = "skip_thought_signature_validator"

var functionName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`)

// checkGenerate checks a generate request as the API does, with the API's messages.
func (s *Server) checkGenerate(req *GenerateContentRequest) *apiError {
	if len(req.Contents) == 0 {
		return invalid("* GenerateContentRequest.contents: contents is not specified\n")
	}
	if si := req.SystemInstruction; si != nil {
		if len(si.Parts) == 0 {
			return invalid("* GenerateContentRequest.system_instruction.parts: contents.parts must not be empty.\n")
		}
		for j, p := range si.Parts {
			if p.Text == nil {
				return invalid(fmt.Sprintf("* GenerateContentRequest.system_instruction.parts[%d]: system instruction parts must be text.\n", j))
			}
		}
	}
	for i, c := range req.Contents {
		if c.Role != "" && c.Role != "user" && c.Role != "model" {
			return invalid("Please use a valid role: user, model.")
		}
		if len(c.Parts) == 0 {
			return invalid(fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.\n", i))
		}
		for j, p := range c.Parts {
			if e := checkPart(i, j, c.Role, p); e != nil {
				return e
			}
		}
	}
	if e := s.checkTurns(req.Contents); e != nil {
		return e
	}
	for i, t := range req.Tools {
		for j, d := range t.FunctionDeclarations {
			if e := checkDeclaration(i, j, d); e != nil {
				return e
			}
		}
	}
	if g := req.GenerationConfig; g != nil {
		if g.Temperature != nil && (*g.Temperature < 0 || *g.Temperature > 2) {
			return invalid("* GenerateContentRequest.generation_config.temperature: temperature must be in the range [0.0, 2.0].\n")
		}
		if g.MaxOutputTokens != nil && *g.MaxOutputTokens < 0 {
			return invalid("* GenerateContentRequest.generation_config.max_output_tokens: max_output_tokens must be positive.\n")
		}
		if g.CandidateCount != nil && (*g.CandidateCount < 1 || *g.CandidateCount > 8) {
			return invalid("* GenerateContentRequest.generation_config.candidate_count: candidate_count must be in the range [1, 8].\n")
		}
	}
	return nil
}

func checkPart(i, j int, role string, p Part) *apiError {
	set := 0
	for _, ok := range []bool{p.Text != nil, p.FunctionCall != nil, p.FunctionResponse != nil, p.InlineData != nil,
		p.FileData != nil, p.ExecutableCode != nil, p.CodeExecutionResult != nil} {
		if ok {
			set++
		}
	}
	at := fmt.Sprintf("* GenerateContentRequest.contents[%d].parts[%d]", i, j)
	switch {
	case set == 0:
		return invalid(at + ".data: required oneof field 'data' must have one initialized field\n")
	case set > 1:
		return invalid(at + ".data: oneof field 'data' is already set. Cannot set more than one field of a oneof.\n")
	}
	if fc := p.FunctionCall; fc != nil {
		if fc.Name == "" {
			return invalid(at + ".function_call.name: Name cannot be empty.\n")
		}
		if role != "model" {
			return invalid(at + ".function_call: function calls may only appear in turns with role model.\n")
		}
		if len(fc.Args) > 0 && !isObject(fc.Args) {
			return invalid(at + ".function_call.args: args must be a JSON object.\n")
		}
	}
	if fr := p.FunctionResponse; fr != nil {
		if fr.Name == "" {
			return invalid(at + ".function_response.name: Name cannot be empty.\n")
		}
		if role == "model" {
			return invalid(at + ".function_response: function responses may only appear in turns with role user.\n")
		}
		if len(fr.Response) > 0 && !isObject(fr.Response) {
			return invalid(at + ".function_response.response: response must be a JSON object.\n")
		}
	}
	return nil
}

// checkTurns enforces the API's rules on function calling turns, and (Gemini 3) signatures.
func (s *Server) checkTurns(contents []Content) *apiError {
	for i, c := range contents {
		calls := 0
		first := -1
		for j, p := range c.Parts {
			if p.FunctionCall != nil {
				if first < 0 {
					first = j
				}
				calls++
			}
		}
		if calls == 0 {
			continue
		}
		if i == 0 || contents[i-1].Role == "model" {
			return invalid("Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
		}
		if i+1 < len(contents) {
			responses := 0
			for _, p := range contents[i+1].Parts {
				if p.FunctionResponse != nil {
					responses++
				}
			}
			if contents[i+1].Role == "model" || responses != calls {
				return invalid("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
		}
		if s.opts.RequireThoughtSignatures {
			p := c.Parts[first]
			if p.ThoughtSignature == "" {
				return invalid(fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, first+1))
			}
			if !s.validSignature(p.ThoughtSignature) {
				return invalid("Corrupted thought signature.")
			}
		}
	}
	return nil
}

// validSignature reports whether sig (base64, as proto JSON carries bytes) is one the server
// issued or Google's placeholder.
func (s *Server) validSignature(sig string) bool {
	b, ok := decodeBytes(sig)
	if !ok {
		return false
	}
	if skip, _ := decodeBytes(SkipSignature); bytes.Equal(b, skip) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signatures[string(b)]
}

// decodeBytes decodes a proto JSON bytes field: standard or URL-safe base64, padded or not.
func decodeBytes(s string) ([]byte, bool) {
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, true
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return b, err == nil
}

func (s *Server) issueSignature() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextSig++
	sig := []byte(fmt.Sprintf("googletest-signature-%d", s.nextSig))
	s.signatures[string(sig)] = true
	return sig
}

// schemaKeys are the fields of the API's Schema (an OpenAPI 3.0 subset).
var schemaKeys = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true, "enum": true,
	"maxItems": true, "minItems": true, "properties": true, "propertyOrdering": true, "required": true,
	"minProperties": true, "maxProperties": true, "minLength": true, "maxLength": true, "pattern": true,
	"example": true, "anyOf": true, "default": true, "items": true, "minimum": true, "maximum": true,
}

func checkDeclaration(i, j int, d FunctionDeclaration) *apiError {
	at := fmt.Sprintf("tools[%d].function_declarations[%d]", i, j)
	if d.Name == "" {
		return invalid(fmt.Sprintf("* GenerateContentRequest.%s.name: Name cannot be empty.\n", at))
	}
	if !functionName.MatchString(d.Name) {
		return invalid(fmt.Sprintf("* GenerateContentRequest.%s.name: Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons and dashes, with a maximum length of 128.\n", at))
	}
	if len(d.Parameters) > 0 && len(d.ParametersJSONSchema) > 0 {
		return invalid(fmt.Sprintf("* GenerateContentRequest.%s: parameters and parameters_json_schema are mutually exclusive.\n", at))
	}
	if len(d.Parameters) > 0 {
		var schema any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			return invalid("Invalid JSON payload received. Unexpected token.")
		}
		if e := checkSchema(schema, at+".parameters"); e != nil {
			return e
		}
	}
	if len(d.ParametersJSONSchema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(d.ParametersJSONSchema, &schema); err != nil || schema["type"] != "object" {
			return invalid(fmt.Sprintf("* GenerateContentRequest.%s.parameters_json_schema: the schema must describe an object (type: object).\n", at))
		}
	}
	return nil
}

// checkSchema refuses what the proto behind parameters has no field for, as the API does
// (additionalProperties, $schema, $ref, oneOf, const…).
func checkSchema(v any, at string) *apiError {
	m, ok := v.(map[string]any)
	if !ok {
		return invalid(fmt.Sprintf("Invalid JSON payload received. Invalid value at '%s': expected an object.", at))
	}
	for k, x := range m {
		name := camel(k)
		if !schemaKeys[name] {
			return invalid(fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, at))
		}
		switch name {
		case "properties":
			props, ok := x.(map[string]any)
			if !ok {
				return invalid(fmt.Sprintf("Invalid JSON payload received. Invalid value at '%s.properties'.", at))
			}
			n := 0
			for _, p := range props {
				if e := checkSchema(p, fmt.Sprintf("%s.properties[%d].value", at, n)); e != nil {
					return e
				}
				n++
			}
		case "items":
			if e := checkSchema(x, at+".items"); e != nil {
				return e
			}
		case "anyOf":
			list, _ := x.([]any)
			for n, p := range list {
				if e := checkSchema(p, fmt.Sprintf("%s.any_of[%d]", at, n)); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// DefaultText is the text of the default answer to req: "You said: " and the text of the last
// user turn, or, when that turn carries function responses, "Got name: response" for each.
func DefaultText(req *GenerateContentRequest) string {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role == "model" {
			continue
		}
		var got []string
		for _, p := range c.Parts {
			if fr := p.FunctionResponse; fr != nil {
				got = append(got, fmt.Sprintf("Got %s: %s", fr.Name, compact(fr.Response)))
			}
		}
		if len(got) > 0 {
			return strings.Join(got, "; ")
		}
		return "You said: " + c.text()
	}
	return "You said: "
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// words is the server's token count: words separated by white space.
func words(s string) int { return len(strings.Fields(s)) }

func promptTokens(req *GenerateContentRequest) int {
	n := 0
	if req.SystemInstruction != nil {
		n += words(req.SystemInstruction.text())
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			switch {
			case p.Text != nil:
				n += words(*p.Text)
			case p.FunctionCall != nil:
				n += 1 + words(string(p.FunctionCall.Args))
			case p.FunctionResponse != nil:
				n += 1 + words(string(p.FunctionResponse.Response))
			}
		}
	}
	return max(n, 1)
}

// pieces are the text's streamed pieces: the reply's chunks, or its words with the space
// after each.
func pieces(r Reply) []string {
	if len(r.Chunks) > 0 {
		return r.Chunks
	}
	if r.Text == "" {
		return nil
	}
	var out []string
	rest := r.Text
	for rest != "" {
		i := strings.IndexAny(rest, " \n")
		if i < 0 {
			out = append(out, rest)
			break
		}
		j := i + 1
		for j < len(rest) && (rest[j] == ' ' || rest[j] == '\n') {
			j++
		}
		out = append(out, rest[:j])
		rest = rest[j:]
	}
	return out
}

// generate answers a generate request: one JSON answer, server-sent events, or (streamed
// without alt=sse) a JSON array of the events.
func (s *Server) generate(w http.ResponseWriter, model string, req *GenerateContentRequest, stream, sse bool) {
	rep, ok := s.nextReply()
	if !ok {
		rep = Reply{Text: DefaultText(req)}
	}
	chunks := pieces(rep)
	text := strings.Join(chunks, "")
	sig := rep.Signature
	if sig == nil && s.opts.RequireThoughtSignatures && len(rep.Calls) > 0 {
		sig = s.issueSignature()
	}
	prompt := promptTokens(req)
	usage := rep.Usage
	if usage == nil {
		out := words(text)
		for _, c := range rep.Calls {
			out += 1 + words(string(c.Args))
		}
		usage = &UsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: out, TotalTokenCount: prompt + out}
	}
	version := rep.ModelVersion
	if version == "" {
		version = model
	}
	finish := rep.FinishReason
	if finish == "" {
		finish = "STOP"
	}
	s.mu.Lock()
	id := fmt.Sprintf("googletest-%d", len(s.requests))
	s.mu.Unlock()

	var callParts []Part
	for i, c := range rep.Calls {
		if len(c.Args) == 0 {
			c.Args = json.RawMessage(`{}`)
		}
		p := Part{FunctionCall: &c}
		if i == 0 && sig != nil {
			p.ThoughtSignature = base64.StdEncoding.EncodeToString(sig)
		}
		callParts = append(callParts, p)
	}
	var thought []Part
	if rep.Thought != "" {
		p := TextPart(rep.Thought)
		p.Thought = true
		thought = []Part{p}
	}

	var events []GenerateContentResponse
	switch {
	case rep.BlockReason != "":
		events = []GenerateContentResponse{{
			PromptFeedback: &PromptFeedback{BlockReason: rep.BlockReason},
			UsageMetadata:  &UsageMetadata{PromptTokenCount: usage.PromptTokenCount, TotalTokenCount: usage.PromptTokenCount},
			ModelVersion:   version, ResponseID: id,
		}}
	case !stream:
		parts := append([]Part(nil), thought...)
		if text != "" {
			parts = append(parts, TextPart(text))
		}
		parts = append(parts, callParts...)
		events = []GenerateContentResponse{{
			Candidates:    []Candidate{{Content: content(parts), FinishReason: finish, FinishMessage: rep.FinishMessage, ContinuationToken: token(rep)}},
			UsageMetadata: usage, ModelVersion: version, ResponseID: id,
		}}
	default:
		// Every event carries the usage so far (the prompt's); the last one the whole answer's.
		partial := &UsageMetadata{PromptTokenCount: usage.PromptTokenCount, TotalTokenCount: usage.PromptTokenCount}
		ev := func(parts []Part) GenerateContentResponse {
			return GenerateContentResponse{Candidates: []Candidate{{Content: content(parts)}}, UsageMetadata: partial, ModelVersion: version, ResponseID: id}
		}
		if len(thought) > 0 {
			events = append(events, ev(thought))
		}
		for _, c := range chunks {
			events = append(events, ev([]Part{TextPart(c)}))
		}
		if rep.Abort {
			s.stream(w, events, sse, true, nil)
			return
		}
		if rep.StreamError != nil {
			s.stream(w, events, sse, false, failure(*rep.StreamError))
			return
		}
		if len(callParts) > 0 || len(events) == 0 {
			events = append(events, ev(callParts))
		}
		last := &events[len(events)-1]
		last.Candidates[0].FinishReason = finish
		last.Candidates[0].FinishMessage = rep.FinishMessage
		last.Candidates[0].ContinuationToken = token(rep)
		last.UsageMetadata = usage
	}
	if !stream {
		writeJSON(w, http.StatusOK, events[0])
		return
	}
	s.stream(w, events, sse, false, nil)
}

func token(r Reply) string {
	if r.ContinuationToken == nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(r.ContinuationToken)
}

func content(parts []Part) *Content {
	if len(parts) == 0 {
		return nil
	}
	return &Content{Role: "model", Parts: parts}
}

// stream writes events as server-sent events ("data: {json}" and a blank line each), or as
// the JSON array the API streams without alt=sse; abort cuts the connection after them, fail
// ends them with an error event.
func (s *Server) stream(w http.ResponseWriter, events []GenerateContentResponse, sse, abort bool, fail *apiError) {
	flusher, _ := w.(http.Flusher)
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	}
	w.WriteHeader(http.StatusOK)
	if !sse {
		_, _ = w.Write([]byte("["))
	}
	payloads := make([]any, 0, len(events)+1)
	for _, e := range events {
		payloads = append(payloads, e)
	}
	if fail != nil {
		payloads = append(payloads, map[string]any{"error": fail})
	}
	for i, e := range payloads {
		b, _ := json.Marshal(e)
		if sse {
			_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		} else {
			if i > 0 {
				_, _ = w.Write([]byte(",\r\n"))
			}
			_, _ = w.Write(b)
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if abort {
		panic(http.ErrAbortHandler)
	}
	if !sse {
		_, _ = w.Write([]byte("]"))
	}
}
