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
	"github.com/switchboard-io/switchboard/internal/llm/embedtest"
)

// Model is the sandbox model, and its embedder.
type Model struct{}

var (
	_ llm.Model    = Model{}
	_ llm.Embedder = Model{}
)

// EmbeddingDimensions is the length of the sandbox's vectors: fixed, whatever the model name,
// as a real embedding model's are; 256 tells texts apart well enough for a knowledge base's
// tests and keeps stored vectors small.
const EmbeddingDimensions = 256

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
		if title, sentence := fromKnowledge(req.System, last.Text); sentence != "" {
			resp.Text = fmt.Sprintf("[%s] From %s: %s", req.Model, title, sentence)
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

// fromKnowledge is the sentence of the knowledge in system that shares most words with the
// question (by embedtest's vectors), and its document's title; none near enough (a word's
// hashed dimensions may meet another's by chance): "".
func fromKnowledge(system, question string) (title, sentence string) {
	_, knowledge, ok := strings.Cut(system, llm.KnowledgeHeading)
	if !ok {
		return "", ""
	}
	q := embedtest.Vector(question, EmbeddingDimensions)
	best := float32(0.25)
	for _, block := range strings.Split(knowledge, "\n\n[") {
		head, text, _ := strings.Cut(strings.TrimSpace(block), "\n")
		_, docTitle, _ := strings.Cut(head, "] ")
		for _, s := range sentences.FindAllString(text, -1) {
			s = strings.TrimSpace(s)
			if score := dot(q, embedtest.Vector(s, EmbeddingDimensions)); score > best {
				best, title, sentence = score, docTitle, s
			}
		}
	}
	return title, sentence
}

var sentences = regexp.MustCompile(`[^.!?\n]+[.!?]?`)

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Embed answers embedtest vectors, in which texts that share words are near each other, so that
// a knowledge base answers related questions with no provider account. Usage counts words as
// tokens, as Chat does. An empty input is refused, as OpenAI's API refuses it.
func (Model) Embed(ctx context.Context, req llm.EmbedRequest) (*llm.Embeddings, error) {
	if err := ctx.Err(); err != nil {
		return nil, &llm.Error{Kind: llm.KindUnavailable, Message: err.Error(), Err: err}
	}
	dims := EmbeddingDimensions
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	out := &llm.Embeddings{Vectors: make([][]float32, len(req.Inputs)), Model: req.Model}
	for i, in := range req.Inputs {
		if in == "" {
			return nil, &llm.Error{Kind: llm.KindInvalid, Message: fmt.Sprintf("input %d is empty", i)}
		}
		out.Vectors[i] = embedtest.Vector(in, dims)
		out.Usage.InputTokens += int64(len(strings.Fields(in)))
	}
	return out, nil
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
