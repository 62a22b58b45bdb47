// Package googletest runs a local Gemini API for tests: the generateContent,
// streamGenerateContent (server-sent events with alt=sse, a JSON array without), embedContent,
// batchEmbedContents and models.list methods of generativelanguage.googleapis.com/v1beta as
// Google's API reference documents them, behind an API key checked as Google checks it
// (x-goog-api-key or key=), answering with Google's error bodies ({error: {code, message,
// status, details}}).
//
// By default every request gets a deterministic answer derived from its last user turn; tests
// queue answers (text, function calls, usage), force errors, make requests hang until their
// context ends, and read back every request the server received, decoded.
package googletest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Key is the API key the server accepts when Options.APIKey is empty.
const Key = "AIzaSyTest-0123456789abcdefghijklmnopqrs"

// DefaultDimensions is the length of the embedding vectors when neither Options.Dimensions nor
// the request's outputDimensionality set one.
const DefaultDimensions = 8

// MaxBatch is the most requests one batchEmbedContents call may carry.
const MaxBatch = 100

// DefaultModels are the models models.list lists when Options.Models is empty.
var DefaultModels = []string{"gemini-2.5-flash", "gemini-2.5-pro", "gemini-embedding-001"}

// Options configure a Server.
type Options struct {
	// APIKey is the key the server accepts; empty: Key.
	APIKey string
	// Models are the models that exist (as "gemini-2.5-flash", without "models/"); others are
	// answered 404 NOT_FOUND. Empty: every model exists, and models.list lists DefaultModels.
	Models []string
	// Dimensions is the length of embedding vectors; 0: DefaultDimensions.
	Dimensions int
	// RequireThoughtSignatures makes the server behave as Gemini 3 models do: the first
	// functionCall part of every model turn sent back must carry a thoughtSignature, one the
	// server issued or Google's documented "skip_thought_signature_validator" placeholder.
	// Either way, the first function call of every answer carries a signature.
	RequireThoughtSignatures bool
}

// Reply is a scripted answer to one generateContent or streamGenerateContent request.
type Reply struct {
	// Text is the answer's text. Streamed, it is cut into one event per word unless Chunks is
	// set.
	Text string
	// Chunks, when set, are the text's pieces, one streamed event each (and, joined, the text
	// of an answer that is not streamed); Text is then ignored.
	Chunks []string
	// Thought is a thought summary part (thought: true) sent before the text.
	Thought string
	// Calls are function calls, after the text, in the API's own form: the Gemini API gives
	// them no id unless ID is set.
	Calls []FunctionCall
	// Signature is the thoughtSignature of the first function call; nil: none, or one the
	// server makes up when RequireThoughtSignatures is set.
	Signature []byte
	// FinishReason is the candidate's finishReason; empty: STOP.
	FinishReason string
	// FinishMessage is the candidate's finishMessage.
	FinishMessage string
	// ContinuationToken is the candidate's continuationToken (with FinishReason CONTINUATION:
	// the answer is unfinished and a request carrying the token resumes it).
	ContinuationToken []byte
	// BlockReason, when set, blocks the prompt: no candidate, promptFeedback.blockReason set.
	BlockReason string
	// Usage is the answer's usageMetadata; nil: counted from the words of the request and the
	// answer.
	Usage *UsageMetadata
	// ModelVersion is the modelVersion reported; empty: the model of the request's path.
	ModelVersion string
	// Abort, streamed, cuts the connection after the text's events instead of finishing.
	Abort bool
	// StreamError, streamed, ends the answer after the text's events with an error event
	// (data: {"error": …}), as the API reports a failure once the answer has begun.
	StreamError *Failure
}

// Failure is a scripted error answer.
type Failure struct {
	// Status is the HTTP status (400, 401, 403, 404, 429, 500, 503, 504…).
	Status int
	// Message replaces Google's usual message for Status.
	Message string
	// RetryDelay is the retryDelay of the google.rpc.RetryInfo detail; 0 on a 429: 13s. Set
	// on another status it adds the detail there too.
	RetryDelay time.Duration
	// NoRetryInfo leaves the RetryInfo detail out of a 429.
	NoRetryInfo bool
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Times is how many requests in a row get this answer; 0: one.
	Times int
}

// Request is a request the server received.
type Request struct {
	// Method is the API method: generateContent, streamGenerateContent, embedContent,
	// batchEmbedContents, or list (models.list, GET /v1beta/models: in ListRequests only).
	Method string
	// Model is the model of the path, without "models/".
	Model string
	// Query is the URL's query (alt=sse, key=…).
	Query  string
	Header http.Header
	// Body is the body as sent.
	Body []byte
	// Generate is the decoded body of a generateContent or streamGenerateContent request.
	Generate *GenerateContentRequest
	// Embed is the decoded body of an embedContent request.
	Embed *EmbedContentRequest
	// Batch is the decoded body of a batchEmbedContents request.
	Batch *BatchEmbedContentsRequest
	// Status is the HTTP status answered; 0 while a hanging request waits.
	Status int
}

// Stream reports whether the request asked for server-sent events.
func (r Request) Stream() bool { return r.Method == "streamGenerateContent" }

// Server is a running peer.
type Server struct {
	opts Options
	srv  *httptest.Server
	done chan struct{}

	mu         sync.Mutex
	closed     bool
	replies    []Reply
	failures   []Failure
	hangs      int
	requests   []Request
	lists      []Request
	signatures map[string]bool
	nextSig    int
}

// New starts a server on loopback; Close stops it.
func New(opts Options) *Server {
	if opts.APIKey == "" {
		opts.APIKey = Key
	}
	if opts.Dimensions <= 0 {
		opts.Dimensions = DefaultDimensions
	}
	s := &Server{opts: opts, done: make(chan struct{}), signatures: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL to configure the adapter with (the API's is
// https://generativelanguage.googleapis.com).
func (s *Server) URL() string { return s.srv.URL }

// Close releases hanging requests and stops the server.
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

// Enqueue queues answers for the next generate requests, in order; once they are used up the
// server answers by default again.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Fail queues an error answer for the next f.Times requests of any method, models.list
// included (after the key is checked, before the body is).
func (s *Server) Fail(f Failure) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f)
}

// FailN makes the next n requests answer status with Google's usual body for it.
func (s *Server) FailN(status, n int) { s.Fail(Failure{Status: status, Times: n}) }

// Hang makes the next n requests (after the key is checked) wait without answering until the
// client gives up or the server closes.
func (s *Server) Hang(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hangs += n
}

// Requests are the requests received so far, in order, but for models.list (ListRequests): a
// credential check is not a model call.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ListRequests are the models.list requests received so far, in order.
func (s *Server) ListRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.lists...)
}

func (s *Server) recordList(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = append(s.lists, r)
}

// Pending is the number of queued answers not used yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// nextFailure takes the next scripted failure, if any.
func (s *Server) nextFailure() (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) == 0 {
		return Failure{}, false
	}
	f := s.failures[0]
	s.failures[0].Times--
	if s.failures[0].Times <= 0 {
		s.failures = s.failures[1:]
	}
	return f, true
}

func (s *Server) takeHang() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hangs == 0 {
		return false
	}
	s.hangs--
	return true
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

const maxBody = 20 << 20

// serve routes POST /v1beta/models/{model}:{method} and GET /v1beta/models.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1beta/models" {
		s.listModels(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/")
	if !ok {
		writeError(w, notFound("The requested URL "+r.URL.Path+" was not found on this server."))
		return
	}
	rest, ok = strings.CutPrefix(rest, "models/")
	model, method, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || model == "" || strings.Contains(model, "/") {
		writeError(w, notFound("The requested URL "+r.URL.Path+" was not found on this server."))
		return
	}
	switch method {
	case "generateContent", "streamGenerateContent", "embedContent", "batchEmbedContents":
	default:
		writeError(w, notFound("The requested URL "+r.URL.Path+" was not found on this server."))
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, apiErr(http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server."))
		return
	}

	body, err := readBody(r)
	rec := Request{Method: method, Model: model, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	if err != nil {
		rec.Status = http.StatusBadRequest
		s.record(rec)
		writeError(w, invalid("Invalid JSON payload received. Could not read the request body."))
		return
	}

	if e := s.checkKey(r); e != nil {
		rec.Status = e.Code
		s.record(rec)
		writeError(w, e)
		return
	}

	var e *apiError
	switch method {
	case "generateContent", "streamGenerateContent":
		rec.Generate, e = decodeGenerate(body)
	case "embedContent":
		rec.Embed, e = decodeEmbed(body)
	case "batchEmbedContents":
		rec.Batch, e = decodeBatch(body)
	}

	if f, ok := s.nextFailure(); ok {
		rec.Status = f.Status
		s.record(rec)
		writeError(w, failure(f))
		return
	}
	if s.takeHang() {
		s.record(rec)
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	if e == nil {
		e = s.checkModel(model)
	}
	if e == nil {
		switch method {
		case "generateContent", "streamGenerateContent":
			e = s.checkGenerate(rec.Generate)
		case "embedContent":
			e = checkEmbed(model, "EmbedContentRequest", rec.Embed)
		case "batchEmbedContents":
			e = checkBatch(model, rec.Batch)
		}
	}
	if e != nil {
		rec.Status = e.Code
		s.record(rec)
		writeError(w, e)
		return
	}

	rec.Status = http.StatusOK
	s.record(rec)
	switch method {
	case "generateContent":
		s.generate(w, model, rec.Generate, false, false)
	case "streamGenerateContent":
		s.generate(w, model, rec.Generate, true, r.URL.Query().Get("alt") == "sse")
	case "embedContent":
		writeJSON(w, http.StatusOK, map[string]any{"embedding": ContentEmbedding{Values: Vector(rec.Embed.Content.text(), s.dims(rec.Embed))}})
	case "batchEmbedContents":
		out := make([]ContentEmbedding, len(rec.Batch.Requests))
		for i, q := range rec.Batch.Requests {
			out[i] = ContentEmbedding{Values: Vector(q.Content.text(), s.dims(&q))}
		}
		writeJSON(w, http.StatusOK, map[string]any{"embeddings": out})
	}
}

// checkKey checks the API key as Google does: none is a 403 (an unregistered caller), a wrong
// one a 400 with reason API_KEY_INVALID.
func (s *Server) checkKey(r *http.Request) *apiError {
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case key == "":
		return &apiError{Code: http.StatusForbidden, Status: "PERMISSION_DENIED",
			Message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}
	case key != s.opts.APIKey:
		const msg = "API key not valid. Please pass a valid API key."
		return &apiError{Code: http.StatusBadRequest, Status: "INVALID_ARGUMENT", Message: msg, Details: []any{
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
				"metadata": map[string]any{"service": "generativelanguage.googleapis.com"}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": msg},
		}}
	}
	return nil
}

func (s *Server) checkModel(model string) *apiError {
	if len(s.opts.Models) == 0 {
		return nil
	}
	for _, m := range s.opts.Models {
		if m == model {
			return nil
		}
	}
	return notFound("models/" + model + " is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.")
}

func (s *Server) dims(q *EmbedContentRequest) int {
	if q != nil && q.OutputDimensionality != nil && *q.OutputDimensionality > 0 {
		return *q.OutputDimensionality
	}
	return s.opts.Dimensions
}

func readBody(r *http.Request) ([]byte, error) {
	defer r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBody {
		return nil, errors.New("request body too large")
	}
	return b, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
