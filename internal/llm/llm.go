// Package llm is how agents talk to language models: one request and response shape for every
// model provider's API (OpenAI and the servers compatible with it, Mistral, Anthropic, Google),
// tool calls included, and one classification of their errors, so that the agent runtime can
// tell a retryable failure (the next model) from one that must fail the execution at once.
// Each provider's adapter lives in a package below this one, beside a loopback peer that
// speaks its API for tests.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Model answers chat requests; one value serves one provider account (its key and base URL)
// and may be used by many goroutines at once.
type Model interface {
	// Chat sends req and returns the model's answer: text, tool calls, or both. When
	// req.OnText is set the answer is streamed, OnText receiving each piece of text as it
	// arrives, and the returned Response is the whole answer all the same. Errors are *Error.
	Chat(ctx context.Context, req Request) (*Response, error)
}

// Embedder turns texts into vectors (knowledge bases). Not every provider has one.
type Embedder interface {
	// Embed returns one vector per input, in order. Errors are *Error.
	Embed(ctx context.Context, req EmbedRequest) (*Embeddings, error)
}

// KnowledgeHeading opens the part of a system prompt that gives the model the chunks of its
// knowledge bases, each "[n] <document title>" on a line and its text below, separated by blank
// lines (the sandbox model answers from them).
const KnowledgeHeading = "Knowledge (from the documents you were given; answer from it when it applies, and say so when it does not cover the question):"

// EmbedRequest is what to embed, with which model.
type EmbedRequest struct {
	Model  string
	Inputs []string
	// Dimensions asks for shorter vectors where the API can make them (OpenAI's dimensions,
	// Gemini's outputDimensionality); 0 is the model's own length.
	Dimensions int
}

// Role is who a message of the conversation is from.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries a tool's result back to the model: ToolCallID names the call it answers.
	RoleTool Role = "tool"
)

// Message is one turn of the conversation sent to the model.
type Message struct {
	Role Role
	Text string
	// ToolCalls are the calls an assistant turn made (sent back so the model sees its own
	// calls before their results).
	ToolCalls []ToolCall
	// ToolCallID and ToolName name the call a RoleTool message is the result of; IsError says
	// the call failed and Text is why.
	ToolCallID string
	ToolName   string
	IsError    bool
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments: an object schema.
	Parameters json.RawMessage
}

// ToolCall is the model asking for a tool to run.
type ToolCall struct {
	// ID identifies the call within the answer (the provider's, or made up where the API has
	// none, as Google's); the result must name it.
	ID   string
	Name string
	// Arguments is a JSON object.
	Arguments json.RawMessage
}

// Request is one call to a model.
type Request struct {
	Model  string
	System string
	// Messages are the conversation so far, oldest first; the last is usually the user's.
	Messages []Message
	Tools    []Tool
	// Temperature is 0 to 2; nil: the provider's default. Anthropic's current API version takes
	// none, so its adapter sends none.
	Temperature *float64
	// MaxTokens bounds the answer; 0: the adapter's default (1024).
	MaxTokens int
	// OnText, when set, streams the answer's text.
	OnText func(text string)
}

// StopReason is why the model stopped.
type StopReason string

const (
	StopEnd       StopReason = "end"        // it finished its answer
	StopToolCalls StopReason = "tool_calls" // it wants tools run
	StopMaxTokens StopReason = "max_tokens" // the answer was cut at MaxTokens
	StopFiltered  StopReason = "filtered"   // the provider's content filter stopped it
)

// Response is a model's answer.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Stop      StopReason
	Usage     Usage
	// Model is the model that answered, as the provider names it (it may differ from the
	// request's alias).
	Model string
}

// Usage is what a call consumed.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Embeddings are an Embed's vectors and usage.
type Embeddings struct {
	Vectors [][]float32
	Usage   Usage
	Model   string
}

// Kind classifies a failed call by what the caller should do about it.
type Kind string

const (
	// KindRateLimited (429) and KindUnavailable (5xx, overloaded, a connection that failed, a
	// timeout) may succeed later or on another model: the runtime moves to the next model.
	KindRateLimited Kind = "rate_limited"
	KindUnavailable Kind = "unavailable"
	// KindUnauthorized (401, 403) and KindInvalid (400, 404, 422: a bad request, an unknown
	// model) fail the execution at once: another try would fail the same way.
	KindUnauthorized Kind = "unauthorized"
	KindInvalid      Kind = "invalid"
)

// Error is a failed model call.
type Error struct {
	Kind Kind
	// Status is the HTTP status, 0 when there was no answer.
	Status int
	// Message is the provider's message (never the key), for the execution's error.
	Message string
	// RetryAfter is when the provider said to try again (Retry-After and its variants); 0
	// when it did not.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("model call failed (%s, HTTP %d): %s", e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("model call failed (%s): %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether err is a failure another model (or a later try) may not have.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Kind == KindRateLimited || e.Kind == KindUnavailable)
}

// KindOfStatus is the Kind of an HTTP status an API answered with.
func KindOfStatus(status int) Kind {
	switch {
	case status == 429:
		return KindRateLimited
	case status == 401 || status == 403:
		return KindUnauthorized
	case status == 408 || status >= 500:
		return KindUnavailable
	default:
		return KindInvalid
	}
}

// DefaultMaxTokens bounds an answer when the request does not.
const DefaultMaxTokens = 1024
