// Package openaitest runs a local OpenAI Chat Completions API for tests, or Mistral's (the same
// API with its own differences): POST /v1/chat/completions, streamed as server-sent events when
// the request asks, POST /v1/embeddings and GET /v1/models, with the provider's bearer auth, its
// request checks and its error bodies and rate-limit headers.
//
// Answers are scripted: by default a reply derived from the last user message (DefaultReply);
// tests queue replies (text, tool calls, usage), force error statuses, make requests hang until
// they end, and read back every request received, decoded.
package openaitest

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Flavor is the provider the server behaves as.
type Flavor string

const (
	// OpenAI is OpenAI's API: errors as {"error": {message, type, param, code}}, tool call ids
	// of at most 40 characters, stream usage only when stream_options asks for it.
	OpenAI Flavor = "openai"
	// Mistral is Mistral's: errors as {object: "error", message, type, param, code} at the root
	// (422 for a body its schema refuses, unknown fields included), tool call ids of exactly
	// nine letters and digits, tool results named, usage in the last chunk of every stream.
	Mistral Flavor = "mistral"
)

// DefaultAPIKey is the key the server accepts when Options.APIKey is empty.
const DefaultAPIKey = "sk-test-switchboard-0123456789abcdef"

// RateLimitWait is how long a 429 of the server tells the client to wait: OpenAI's
// x-ratelimit-reset-requests (with its requests exhausted), Mistral's Retry-After.
const RateLimitWait = 20 * time.Second

const maxBody = 8 << 20

// Options configure a Server.
type Options struct {
	// Flavor is the provider to behave as; "" is OpenAI.
	Flavor Flavor
	// APIKey is the only bearer token accepted; "" is DefaultAPIKey.
	APIKey string
	// EmbeddingDimensions is the length of the vectors of the embeddings endpoint when the
	// request does not choose one; 0 is the provider's usual: 1536 (text-embedding-3-small) or
	// 1024 (mistral-embed).
	EmbeddingDimensions int
	// Models are the models GET /v1/models lists; empty: DefaultModels of the flavor. Chat and
	// embeddings requests may name any model all the same.
	Models []string
}

// DefaultModels are the models GET /v1/models lists when Options.Models is empty.
func DefaultModels(f Flavor) []string {
	if f == Mistral {
		return []string{"mistral-small-latest", "mistral-large-latest", "mistral-embed"}
	}
	return []string{"gpt-4o-mini", "gpt-4o", "text-embedding-3-small"}
}

// Reply is a scripted chat answer.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// FinishReason is the choice's finish_reason; "" is "tool_calls" when there are tool calls
	// and "stop" otherwise.
	FinishReason string
	// Usage is the answer's token counts; nil counts the words of the request and the answer.
	Usage *Usage
	// Model is the model the answer names; "" is the request's.
	Model string
	// CutAfter, when positive, ends a streamed answer after that many events by dropping the
	// connection: no finish_reason, no [DONE], the HTTP body incomplete.
	CutAfter int
	// EndAfter, when positive, ends a streamed answer after that many events cleanly, as a proxy
	// closing an idle stream would: the HTTP body complete, but no finish_reason and no [DONE].
	EndAfter int
	// ErrorAfter, when positive, ends a streamed answer after that many events with an error
	// event, as OpenAI reports a failure once the stream has begun: data: {"error": {...}}.
	ErrorAfter int
	// StallAfter, when positive, stops a streamed answer after that many events and holds the
	// connection open until the request ends.
	StallAfter int
}

// ToolCall is a tool call of a scripted reply, as the provider sends it.
type ToolCall struct {
	// ID is the call's id; "" is one the provider would make: call_ and 24 letters and digits
	// (OpenAI), 9 letters and digits (Mistral).
	ID   string
	Name string
	// Arguments is the JSON text of the arguments, as the model wrote it.
	Arguments string
}

// Usage is the token counts of a reply.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Failure is an error answer given instead of a reply.
type Failure struct {
	Status int
	// Message is the error's message; "" is the provider's usual one for Status.
	Message string
	// Header is added to the answer; nil is the provider's usual headers for Status (a 429's
	// rate-limit headers).
	Header http.Header
	// Body, when set, is the whole answer body instead of the provider's error body.
	Body string
}

// Request is a request the server received, decoded.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	// Fields are the top-level fields of the JSON body, as sent.
	Fields map[string]json.RawMessage
	// Chat is the body of a chat completion request, when it decoded.
	Chat *ChatRequest
	// Embeddings is the body of an embeddings request, when it decoded.
	Embeddings *EmbeddingsRequest
}

// Has reports whether the body had the top-level field name.
func (r Request) Has(name string) bool {
	_, ok := r.Fields[name]
	return ok
}

type fault struct {
	failure *Failure
	hang    bool
}

// Server is a running peer.
type Server struct {
	flavor  Flavor
	key     string
	dims    int
	models  []string
	srv     *httptest.Server
	done    chan struct{}
	closing sync.Once

	mu       sync.Mutex
	seq      int
	replies  []Reply
	faults   []fault
	requests []Request
	lists    []Request
}

// New starts a server on loopback; Close stops it.
func New(opts Options) *Server {
	s := &Server{flavor: opts.Flavor, key: opts.APIKey, dims: opts.EmbeddingDimensions, done: make(chan struct{})}
	if s.flavor == "" {
		s.flavor = OpenAI
	}
	if s.key == "" {
		s.key = DefaultAPIKey
	}
	if s.dims <= 0 {
		s.dims = 1536
		if s.flavor == Mistral {
			s.dims = 1024
		}
	}
	s.models = append([]string(nil), opts.Models...)
	if len(s.models) == 0 {
		s.models = DefaultModels(s.flavor)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL to configure a client with, as https://api.openai.com/v1 is OpenAI's.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close ends hanging requests and stops the server.
func (s *Server) Close() {
	s.closing.Do(func() { close(s.done) })
	s.srv.Close()
}

// Flavor is the provider the server behaves as.
func (s *Server) Flavor() Flavor { return s.flavor }

// APIKey is the key the server accepts.
func (s *Server) APIKey() string { return s.key }

// EmbeddingDimensions is the length of the vectors the server answers with by default.
func (s *Server) EmbeddingDimensions() int { return s.dims }

// Models are the models GET /v1/models lists.
func (s *Server) Models() []string { return append([]string(nil), s.models...) }

// Reply queues answers for the next chat requests, in order; when the queue is empty, requests
// get DefaultReply.
func (s *Server) Reply(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Fail makes the next times requests (chat, embeddings or the list of models) answer status with the provider's error
// body and headers. Failures and hangs are used up in the order they were queued, before any reply.
func (s *Server) Fail(status, times int) { s.FailWith(Failure{Status: status}, times) }

// FailWith is Fail with a chosen message, headers or body.
func (s *Server) FailWith(f Failure, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range times {
		f := f
		s.faults = append(s.faults, fault{failure: &f})
	}
}

// Hang makes the next times requests wait, answering nothing, until the client gives up (its
// context ends) or the server closes.
func (s *Server) Hang(times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range times {
		s.faults = append(s.faults, fault{hang: true})
	}
}

// Requests are the requests received so far, in order, refused ones included, but for the
// lists of models (ListRequests): a credential check is not a model call.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ListRequests are the GET /v1/models requests received so far, in order, refused ones included.
func (s *Server) ListRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.lists...)
}

// ChatRequests are the decoded bodies of the chat requests received so far, in order.
func (s *Server) ChatRequests() []ChatRequest {
	var out []ChatRequest
	for _, r := range s.Requests() {
		if r.Chat != nil {
			out = append(out, *r.Chat)
		}
	}
	return out
}

// LastRequest is the last request received, a zero Request when there was none.
func (s *Server) LastRequest() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return Request{}
	}
	return s.requests[len(s.requests)-1]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &rec.Fields)

	route := ""
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		route = "chat"
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		route = "embeddings"
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		route = "models"
	}
	idx := -1
	if route == "models" {
		s.mu.Lock()
		s.lists = append(s.lists, rec)
		s.mu.Unlock()
	} else {
		idx = s.record(rec)
	}
	if route == "" {
		s.notFound(w, r)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	if f, ok := s.nextFault(); ok {
		if f.hang {
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			return
		}
		s.fail(w, *f.failure, modelOf(rec.Fields))
		return
	}
	switch route {
	case "chat":
		s.chat(w, r, idx, body)
	case "embeddings":
		s.embeddings(w, idx, body)
	case "models":
		s.listModels(w)
	}
}

// listModels answers GET /v1/models as the provider does: {"object": "list", "data": [...]},
// every model at once (the endpoint has no pages).
func (s *Server) listModels(w http.ResponseWriter) {
	data := make([]map[string]any, len(s.models))
	for i, m := range s.models {
		model := map[string]any{"id": m, "object": "model", "created": 1715367049, "owned_by": "system"}
		if s.flavor == Mistral {
			model["owned_by"] = "mistralai"
			model["name"] = m
			model["capabilities"] = map[string]any{"completion_chat": true, "function_calling": true, "vision": false}
			model["max_context_length"] = 32768
			model["aliases"] = []string{}
			model["deprecation"] = nil
			model["type"] = "base"
		}
		data[i] = model
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) record(r Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	return len(s.requests) - 1
}

func (s *Server) update(idx int, f func(*Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.requests[idx])
}

func (s *Server) nextFault() (fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return fault{}, false
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f, true
}

func (s *Server) nextReply() (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replies) == 0 {
		return Reply{}, false
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r, true
}

func (s *Server) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// authorized checks the bearer token as the provider does, answering its 401 when it is wrong.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	token = strings.TrimSpace(token)
	if ok && token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.key)) == 1 {
		return true
	}
	if s.flavor == Mistral {
		// Mistral's gateway answers auth failures itself, with its own body (not the
		// {object: "error"} of the API behind it).
		msg := "Unauthorized"
		if !ok || token == "" {
			msg = "No API key found in request"
		}
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": msg, "request_id": s.hexID(32)})
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="OpenAI API"`)
	if !ok || token == "" {
		s.writeError(w, http.StatusUnauthorized, apiError{
			Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys.",
			Type:    "invalid_request_error",
		})
		return false
	}
	s.writeError(w, http.StatusUnauthorized, apiError{
		Message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", maskKey(token)),
		Type:    "invalid_request_error",
		Code:    "invalid_api_key",
	})
	return false
}

// maskKey shows a key as OpenAI's 401 does: its first and last few characters.
func maskKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", len(k)-7) + k[len(k)-4:]
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if s.flavor == Mistral {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not Found"})
		return
	}
	s.writeError(w, http.StatusNotFound, apiError{
		Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path),
		Type:    "invalid_request_error",
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func modelOf(fields map[string]json.RawMessage) string {
	var m string
	_ = json.Unmarshal(fields["model"], &m)
	return m
}

func countWords(s string) int { return len(strings.Fields(s)) }
