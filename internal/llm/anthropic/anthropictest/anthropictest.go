// Package anthropictest runs a local Anthropic Messages API for tests: POST /v1/messages and
// GET /v1/models as Anthropic's API reference documents them (the anthropic-version header,
// the key in x-api-key or, as the v2 SDKs send it, Authorization: Bearer; JSON answers;
// server-sent events when the request asks for a stream; Anthropic's error bodies, statuses and
// rate-limit headers).
//
// By default it answers each request with a deterministic reply made from the last user
// message. Tests queue their own answers (Enqueue), force errors (Fail), make requests hang
// until their context ends (Hang), and read back every request received (Requests).
package anthropictest

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The API versions the peer accepts in anthropic-version.
const (
	// Version is the version the v2 SDKs send: the sampling parameters (temperature, top_p,
	// top_k) are gone from it, and a request that sends one is refused with a 400.
	Version = "2026-10-21"
	// LegacyVersion is the version before it, which takes temperature in 0..1.
	LegacyVersion = "2023-06-01"
)

// DefaultAPIKey is the key the peer expects when Options.APIKey is empty.
const DefaultAPIKey = "sk-ant-api03-anthropictest-0123456789abcdef"

// DefaultRetryAfter is the retry-after of a 429 whose Failure does not set one.
const DefaultRetryAfter = 7 * time.Second

// Options configure a peer.
type Options struct {
	// APIKey is the only key the peer accepts; empty: DefaultAPIKey.
	APIKey string
	// Models are the models GET /v1/models lists, newest first as Anthropic lists them; empty:
	// DefaultModels. Messages may name any model all the same.
	Models []string
}

// DefaultModels are the models GET /v1/models lists when Options.Models is empty.
var DefaultModels = []string{"claude-sonnet-5", "claude-sonnet-4-5", "claude-haiku-4-5"}

// ToolUse is a tool call in a scripted reply, as Anthropic's tool_use block carries it.
type ToolUse struct {
	// ID is the tool_use id; empty: the peer makes one up (toolu_…).
	ID   string
	Name string
	// Input is the arguments, a JSON object; empty: {}.
	Input json.RawMessage
}

// Usage is a reply's token counts, as the usage object of a message carries them.
type Usage struct {
	InputTokens              int64
	OutputTokens             int64
	CacheCreationInputTokens int64
	CacheReadInputTokens     int64
}

// Reply is a scripted answer.
type Reply struct {
	Text string
	// TextDeltas are the text_delta pieces of the text when the answer is streamed; empty: the
	// text is cut after each space. When set, Text is ignored and the text is their concatenation.
	TextDeltas []string
	ToolUses   []ToolUse
	// StopReason is the message's stop_reason; empty: tool_use when there are ToolUses,
	// end_turn otherwise.
	StopReason string
	// Usage is the message's usage; nil: counted (a token per word).
	Usage *Usage
	// Model is the model the message names; empty: the request's.
	Model string
	// Stall makes the peer stop part-way and hang until the request's context ends: after
	// message_start and the first text delta when streaming, before answering otherwise.
	Stall bool
}

// Failure is an error the peer answers with instead of a reply.
type Failure struct {
	// Status is the HTTP status: 400, 401, 403, 404, 413, 429, 500, 503, 504, 529…
	Status int
	// Type is the error type; empty: the one Anthropic uses for Status (rate_limit_error,
	// overloaded_error…).
	Type string
	// Message is the error message; empty: one like Anthropic's for Status.
	Message string
	// RetryAfter is sent in the retry-after header, in whole seconds (rounded up). Zero:
	// DefaultRetryAfter for a 429, no header otherwise; negative: no header.
	RetryAfter time.Duration
	// Limit names the rate limit a 429 exhausted: requests, tokens, input-tokens or
	// output-tokens (empty: input-tokens). Its anthropic-ratelimit-<limit>-remaining is 0 and
	// its -reset is Reset from now; the other limits have some left and reset in a second.
	Limit string
	// Reset is when the exhausted limit of a 429 resets, from now; zero: RetryAfter.
	Reset time.Duration
	// Times is how many requests answer this failure; zero: one.
	Times int
	// MidStream makes a streaming request answer 200 and fail after message_start with an SSE
	// error event, as the API does when it is overloaded mid-answer. A request that does not
	// stream gets the status.
	MidStream bool
}

// Request is a request the peer received (authenticated, with a valid anthropic-version, to
// POST /v1/messages, or to GET /v1/models for ListRequests).
type Request struct {
	// Path is the request's path: /v1/messages, or /v1/models.
	Path string
	// Version is its anthropic-version header.
	Version string
	// Auth says how the key came: "x-api-key" or "bearer".
	Auth string
	// Header is its header without the key.
	Header http.Header
	// Raw is the body as sent (empty for GET /v1/models).
	Raw json.RawMessage
	// Body is the body decoded (zero when it was not JSON).
	Body MessagesRequest
	// Stream says the request asked for server-sent events.
	Stream bool
}

// Server is a running peer.
type Server struct {
	key    string
	models []string
	srv    *httptest.Server
	done   chan struct{}

	mu       sync.Mutex
	closed   bool
	replies  []Reply
	failures []Failure
	hangs    int
	requests []Request
	lists    []Request
	seq      int
}

// New starts a peer on loopback. Close stops it.
func New(opts Options) *Server {
	s := &Server{key: opts.APIKey, models: append([]string(nil), opts.Models...), done: make(chan struct{})}
	if s.key == "" {
		s.key = DefaultAPIKey
	}
	if len(s.models) == 0 {
		s.models = append([]string(nil), DefaultModels...)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// NewServer starts a peer for a test, which it stops when the test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s := New(opts)
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL to configure a client with (the API's paths are below it).
func (s *Server) URL() string { return s.srv.URL }

// APIKey is the key the peer accepts.
func (s *Server) APIKey() string { return s.key }

// Close ends hanging requests and stops the peer; it may be called more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Models are the models GET /v1/models lists.
func (s *Server) Models() []string { return append([]string(nil), s.models...) }

// Enqueue queues answers: each valid message request that is not failed or hung takes the next
// one; once they run out, message requests get the default reply.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Fail makes the next valid requests (f.Times of them, messages or the list of models) answer
// f; failures queued one after the other answer in order. Failures come before queued replies.
func (s *Server) Fail(f Failure) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f)
}

// Hang makes the next n valid requests (messages or the list of models) hang until their
// context ends (the client gives up) or the peer closes, without answering. Hangs come before
// failures and replies.
func (s *Server) Hang(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hangs += n
}

// Requests are the message requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ListRequests are the GET /v1/models requests received so far, oldest first: a credential
// check is not a model call, so Requests leaves them out.
func (s *Server) ListRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.lists...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seq++
	reqID := fmt.Sprintf("req_anthropictest%06d", s.seq)
	s.mu.Unlock()
	w.Header().Set("request-id", reqID)

	auth, ok := s.authenticate(w, r, reqID)
	if !ok {
		return
	}
	version := r.Header.Get("anthropic-version")
	switch version {
	case Version, LegacyVersion:
	case "":
		writeError(w, reqID, Failure{Status: http.StatusBadRequest, Message: "anthropic-version: header is required"})
		return
	default:
		writeError(w, reqID, Failure{Status: http.StatusBadRequest, Message: fmt.Sprintf("anthropic-version: %q is not a valid version", version)})
		return
	}
	if r.URL.Path == "/v1/models" {
		s.listModels(w, r, reqID, Request{Path: r.URL.Path, Version: version, Auth: auth, Header: keyless(r.Header)})
		return
	}
	if r.URL.Path != "/v1/messages" {
		writeError(w, reqID, Failure{Status: http.StatusNotFound, Message: "Not Found"})
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, reqID, Failure{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Message: "Method Not Allowed"})
		return
	}

	raw, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return // the client went away
	}
	rec := Request{Path: r.URL.Path, Version: version, Auth: auth, Header: keyless(r.Header), Raw: json.RawMessage(raw)}
	decodeErr := json.Unmarshal(raw, &rec.Body)
	rec.Stream = rec.Body.Stream != nil && *rec.Body.Stream
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()

	if decodeErr != nil {
		writeError(w, reqID, Failure{Status: http.StatusBadRequest, Message: "There was an error parsing the body of your request: " + decodeErr.Error()})
		return
	}
	if msg := validate(version, &rec.Body); msg != "" {
		writeError(w, reqID, Failure{Status: http.StatusBadRequest, Message: msg})
		return
	}

	s.mu.Lock()
	hang, fail := s.takeFaultLocked()
	var reply *Reply
	if !hang && fail == nil && len(s.replies) > 0 {
		reply = &s.replies[0]
		s.replies = s.replies[1:]
	}
	s.mu.Unlock()

	switch {
	case hang:
		s.stall(r)
	case fail != nil && fail.MidStream && rec.Stream:
		msg := s.message(&rec.Body, &Reply{}, false)
		sse := startSSE(w)
		sse.event("message_start", map[string]any{"type": "message_start", "message": msg.start()})
		sse.event("error", errorBody(*fail, reqID))
	case fail != nil:
		writeError(w, reqID, *fail)
	default:
		scripted := reply != nil
		if !scripted {
			reply = defaultReply(&rec.Body)
		}
		msg := s.message(&rec.Body, reply, !scripted)
		if rec.Stream {
			s.stream(w, r, msg, reply)
			return
		}
		if reply.Stall {
			s.stall(r)
			return
		}
		writeJSON(w, http.StatusOK, msg.wire())
	}
}

// takeFaultLocked takes the next hang or failure, if any; s.mu is held.
func (s *Server) takeFaultLocked() (hang bool, fail *Failure) {
	switch {
	case s.hangs > 0:
		s.hangs--
		return true, nil
	case len(s.failures) > 0:
		f := s.failures[0]
		if s.failures[0].Times--; s.failures[0].Times <= 0 {
			s.failures = s.failures[1:]
		}
		return false, &f
	}
	return false, nil
}

// keyless is h without the key.
func keyless(h http.Header) http.Header {
	h = h.Clone()
	h.Del("x-api-key")
	h.Del("Authorization")
	return h
}

// listModels answers GET /v1/models as Anthropic does: a page of at most limit models (1 to
// 1000, 20 by default), after after_id when it is set, with has_more, first_id and last_id.
// before_id is not served.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request, reqID string, rec Request) {
	if r.Method != http.MethodGet {
		writeError(w, reqID, Failure{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Message: "Method Not Allowed"})
		return
	}
	s.mu.Lock()
	s.lists = append(s.lists, rec)
	hang, fail := s.takeFaultLocked()
	s.mu.Unlock()
	switch {
	case hang:
		s.stall(r)
		return
	case fail != nil:
		writeError(w, reqID, *fail)
		return
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, reqID, Failure{Status: http.StatusBadRequest, Message: "limit: Input should be greater than or equal to 1 and less than or equal to 1000"})
			return
		}
		limit = n
	}
	start, end := 0, len(s.models)
	if after := q.Get("after_id"); after != "" {
		start = slices.Index(s.models, after) + 1
		if start == 0 {
			start = end
		}
	}
	page := s.models[start:min(start+limit, end)]
	data := make([]map[string]any, len(page))
	for i, id := range page {
		data[i] = map[string]any{"type": "model", "id": id, "display_name": displayName(id),
			"created_at": time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -30*(start+i)).Format(time.RFC3339)}
	}
	var first, last any
	if len(page) > 0 {
		first, last = page[0], page[len(page)-1]
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": start+len(page) < end, "first_id": first, "last_id": last})
}

// displayName is a model's display name as Anthropic writes them: claude-sonnet-4-5 is
// "Claude Sonnet 4.5".
func displayName(id string) string {
	parts := strings.Split(id, "-")
	var words, version []string
	for _, p := range parts {
		switch {
		case p == "":
		case p[0] >= '0' && p[0] <= '9':
			version = append(version, p)
		default:
			words = append(words, strings.ToUpper(p[:1])+p[1:])
		}
	}
	if len(version) > 0 {
		words = append(words, strings.Join(version, "."))
	}
	return strings.Join(words, " ")
}

// authenticate checks the key: x-api-key, or Authorization: Bearer as the v2 SDKs send it.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, reqID string) (string, bool) {
	auth, got := "x-api-key", r.Header.Get("x-api-key")
	if got == "" {
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			auth, got = "bearer", bearer
		}
	}
	switch {
	case got == "":
		writeError(w, reqID, Failure{Status: http.StatusUnauthorized, Message: "x-api-key header is required"})
		return "", false
	case subtle.ConstantTimeCompare([]byte(got), []byte(s.key)) != 1:
		writeError(w, reqID, Failure{Status: http.StatusUnauthorized, Message: "invalid x-api-key"})
		return "", false
	}
	return auth, true
}

// stall waits until the request's context ends or the peer closes.
func (s *Server) stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
}

// defaultReply answers the last user message: its text echoed, or its tool results summed up.
func defaultReply(req *MessagesRequest) *Reply {
	var last Message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			last = req.Messages[i]
			break
		}
	}
	var results []string
	for _, b := range last.Content {
		if b.Type == "tool_result" {
			state := "returned"
			if b.IsError != nil && *b.IsError {
				state = "failed"
			}
			results = append(results, fmt.Sprintf("%s %s %q", b.ToolUseID, state, b.Content.Text()))
		}
	}
	text := "You said: " + last.Content.Text()
	if len(results) > 0 {
		text = "Tool results: " + strings.Join(results, "; ")
		if t := last.Content.Text(); t != "" {
			text += ". You said: " + t
		}
	}
	return &Reply{Text: text}
}

// answer is a reply made into a message for one request.
type answer struct {
	id, model  string
	deltas     []string // the text, in pieces
	toolUses   []ToolUse
	stopReason string
	usage      Usage
}

func (s *Server) message(req *MessagesRequest, reply *Reply, truncate bool) *answer {
	s.mu.Lock()
	s.seq++
	a := &answer{id: fmt.Sprintf("msg_anthropictest%06d", s.seq), model: reply.Model}
	for i, tu := range reply.ToolUses {
		if tu.ID == "" {
			tu.ID = fmt.Sprintf("toolu_anthropictest%06d%02d", s.seq, i)
		}
		if len(tu.Input) == 0 {
			tu.Input = json.RawMessage(`{}`)
		}
		a.toolUses = append(a.toolUses, tu)
	}
	s.mu.Unlock()
	if a.model == "" {
		a.model = req.Model
	}
	a.deltas = reply.TextDeltas
	if len(a.deltas) == 0 && reply.Text != "" {
		a.deltas = splitAfterSpaces(reply.Text)
	}
	a.stopReason = reply.StopReason
	if a.stopReason == "" {
		a.stopReason = "end_turn"
		if len(a.toolUses) > 0 {
			a.stopReason = "tool_use"
		}
	}
	// A default reply is cut at max_tokens, a token a word.
	if truncate && req.MaxTokens != nil && int64(len(a.deltas)) > *req.MaxTokens {
		a.deltas = a.deltas[:*req.MaxTokens]
		a.stopReason = "max_tokens"
	}
	if reply.Usage != nil {
		a.usage = *reply.Usage
	} else {
		a.usage = Usage{InputTokens: countInput(req), OutputTokens: int64(len(a.deltas) + 10*len(a.toolUses))}
	}
	return a
}

func (a *answer) text() string { return strings.Join(a.deltas, "") }

func (a *answer) wire() wireMessage {
	m := wireMessage{ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: []wireBlock{},
		StopReason: &a.stopReason, Usage: a.wireUsage()}
	if t := a.text(); t != "" {
		m.Content = append(m.Content, wireBlock{Type: "text", Text: &t})
	}
	for _, tu := range a.toolUses {
		m.Content = append(m.Content, wireBlock{Type: "tool_use", ID: tu.ID, Name: tu.Name, Input: tu.Input})
	}
	return m
}

// start is the message of message_start: no content yet, no stop reason, the input tokens.
func (a *answer) start() wireMessage {
	u := a.wireUsage()
	u.OutputTokens = 1
	return wireMessage{ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: []wireBlock{}, Usage: u}
}

func (a *answer) wireUsage() wireUsage {
	return wireUsage{InputTokens: a.usage.InputTokens, OutputTokens: a.usage.OutputTokens,
		CacheCreationInputTokens: a.usage.CacheCreationInputTokens, CacheReadInputTokens: a.usage.CacheReadInputTokens,
		ServiceTier: "standard"}
}

func splitAfterSpaces(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func countInput(req *MessagesRequest) int64 {
	n := len(strings.Fields(req.SystemText()))
	for _, m := range req.Messages {
		n += 3
		for _, b := range m.Content {
			n += len(strings.Fields(b.Text)) + len(strings.Fields(b.Content.Text())) + len(b.Input)/4
		}
	}
	for _, t := range req.Tools {
		n += len(strings.Fields(t.Description)) + len(t.InputSchema)/4
	}
	return int64(n)
}

// errorTypes are the error types Anthropic answers each status with.
var errorTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	402: "billing_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	503: "api_error",
	504: "timeout_error",
	529: "overloaded_error",
}

var errorMessages = map[int]string{
	401: "invalid x-api-key",
	402: "Your credit balance is too low to access the Anthropic API.",
	403: "Your API key does not have permission to use the specified resource.",
	404: "The requested resource could not be found.",
	413: "Request exceeds the maximum allowed number of bytes.",
	429: "This request would exceed your organization's rate limit of 50,000 input tokens per minute.",
	500: "Internal server error",
	503: "Service temporarily unavailable",
	504: "Request timed out",
	529: "Overloaded",
}

func errorBody(f Failure, reqID string) wireError {
	typ, msg := f.Type, f.Message
	if typ == "" {
		typ = errorTypes[f.Status]
		if typ == "" {
			typ = "api_error"
			if f.Status < 500 {
				typ = "invalid_request_error"
			}
		}
	}
	if msg == "" {
		msg = errorMessages[f.Status]
		if msg == "" {
			msg = http.StatusText(f.Status)
		}
	}
	return wireError{Type: "error", Error: wireErrorInner{Type: typ, Message: msg}, RequestID: reqID}
}

// writeError answers f with Anthropic's error body and, for 429s, its rate-limit headers.
func writeError(w http.ResponseWriter, reqID string, f Failure) {
	h := w.Header()
	retryAfter := f.RetryAfter
	if retryAfter == 0 && f.Status == http.StatusTooManyRequests {
		retryAfter = DefaultRetryAfter
	}
	if retryAfter > 0 {
		h.Set("retry-after", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
	}
	if f.Status == http.StatusTooManyRequests {
		limit, reset := f.Limit, f.Reset
		if limit == "" {
			limit = "input-tokens"
		}
		if reset == 0 {
			reset = max(retryAfter, 0)
		}
		now := time.Now().UTC()
		for _, l := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
			h.Set("anthropic-ratelimit-"+l+"-limit", "50000")
			if l == limit {
				h.Set("anthropic-ratelimit-"+l+"-remaining", "0")
				h.Set("anthropic-ratelimit-"+l+"-reset", now.Add(reset).Format(time.RFC3339))
			} else {
				h.Set("anthropic-ratelimit-"+l+"-remaining", "42000")
				h.Set("anthropic-ratelimit-"+l+"-reset", now.Add(time.Second).Format(time.RFC3339))
			}
		}
	}
	if f.Status == http.StatusTooManyRequests || f.Status >= 500 {
		h.Set("x-should-retry", "true")
	}
	writeJSON(w, f.Status, errorBody(f, reqID))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
