package googletest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/llm/google/googletest"
)

type answer struct {
	status int
	header http.Header
	body   string
}

func post(t *testing.T, url, key, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-goog-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

type errorBody struct {
	Error struct {
		Code    int              `json:"code"`
		Message string           `json:"message"`
		Status  string           `json:"status"`
		Details []map[string]any `json:"details"`
	} `json:"error"`
}

func googleError(t *testing.T, a answer) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal([]byte(a.body), &e); err != nil || e.Error.Code != a.status {
		t.Fatalf("body %s is not Google's error body for %d: %v", a.body, a.status, err)
	}
	return e
}

const hello = `{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`

func TestRequestsRefused(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{Models: []string{"gemini-2.5-flash"}})
	t.Cleanup(s.Close)
	gen := s.URL() + "/v1beta/models/gemini-2.5-flash:generateContent"
	tests := []struct {
		name        string
		url, key    string
		body        string
		wantStatus  int
		wantGRPC    string
		wantMessage string
	}{
		{name: "no key", url: gen, body: hello, wantStatus: 403, wantGRPC: "PERMISSION_DENIED", wantMessage: "Method doesn't allow unregistered callers"},
		{name: "wrong key", url: gen, key: "AIzaWrong", body: hello, wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: "API key not valid. Please pass a valid API key."},
		{name: "malformed JSON", url: gen, key: googletest.Key, body: `{"contents": [`, wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: "Invalid JSON payload received."},
		{name: "unknown field", url: gen, key: googletest.Key, body: `{"contents":[{"role":"user","parts":[{"text":"a"}]}],"generationConfig":{"maxTokens":5}}`,
			wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: `Invalid JSON payload received. Unknown name "maxTokens": Cannot find field.`},
		{name: "no contents", url: gen, key: googletest.Key, body: `{}`, wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: "* GenerateContentRequest.contents: contents is not specified"},
		{name: "empty part", url: gen, key: googletest.Key, body: `{"contents":[{"role":"user","parts":[{}]}]}`,
			wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' must have one initialized field"},
		{name: "bad role", url: gen, key: googletest.Key, body: `{"contents":[{"role":"assistant","parts":[{"text":"a"}]}]}`,
			wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: "Please use a valid role: user, model."},
		{name: "OpenAPI schema with a JSON Schema keyword", url: gen, key: googletest.Key,
			body:       `{"contents":[{"role":"user","parts":[{"text":"a"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}}]}]}`,
			wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: `Invalid JSON payload received. Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters': Cannot find field.`},
		{name: "missing function responses", url: gen, key: googletest.Key,
			body: `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"functionCall":{"name":"f"}},{"functionCall":{"name":"g"}}]},` +
				`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"x"}}}]}]}`,
			wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."},
		{name: "unknown model", url: s.URL() + "/v1beta/models/gemini-0:generateContent", key: googletest.Key, body: hello,
			wantStatus: 404, wantGRPC: "NOT_FOUND", wantMessage: "models/gemini-0 is not found for API version v1beta"},
		{name: "batch too large", url: s.URL() + "/v1beta/models/gemini-2.5-flash:batchEmbedContents", key: googletest.Key,
			body:       `{"requests":[` + strings.Repeat(`{"model":"models/gemini-2.5-flash","content":{"parts":[{"text":"a"}]}},`, googletest.MaxBatch) + `{"model":"models/gemini-2.5-flash","content":{"parts":[{"text":"a"}]}}]}`,
			wantStatus: 400, wantGRPC: "INVALID_ARGUMENT", wantMessage: "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := post(t, tt.url, tt.key, tt.body)
			if a.status != tt.wantStatus {
				t.Fatalf("status = %d (%s), want %d", a.status, a.body, tt.wantStatus)
			}
			e := googleError(t, a)
			if e.Error.Status != tt.wantGRPC || !strings.HasPrefix(e.Error.Message, tt.wantMessage) {
				t.Errorf("error = %s %q, want %s %q", e.Error.Status, e.Error.Message, tt.wantGRPC, tt.wantMessage)
			}
		})
	}
}

func TestWrongKeyDetails(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{})
	t.Cleanup(s.Close)
	e := googleError(t, post(t, s.URL()+"/v1beta/models/m:generateContent", "AIzaWrong", hello))
	if len(e.Error.Details) == 0 || e.Error.Details[0]["reason"] != "API_KEY_INVALID" {
		t.Errorf("details = %v, want an ErrorInfo with reason API_KEY_INVALID", e.Error.Details)
	}
}

func TestKeyInQueryAndSnakeCase(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{})
	t.Cleanup(s.Close)
	body := `{"system_instruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":12}}`
	a := post(t, s.URL()+"/v1beta/models/m:generateContent?key="+googletest.Key, "", body)
	if a.status != http.StatusOK {
		t.Fatalf("status = %d: %s", a.status, a.body)
	}
	r := s.Requests()[0].Generate
	if r.SystemInstruction.Text() != "Be brief." || *r.GenerationConfig.MaxOutputTokens != 12 {
		t.Errorf("decoded request = %+v, want the snake_case fields read", r)
	}
	var resp googletest.GenerateContentResponse
	if err := json.Unmarshal([]byte(a.body), &resp); err != nil {
		t.Fatal(err)
	}
	c := resp.Candidates[0]
	if c.Content.Role != "model" || c.Content.Text() != "You said: hi" || c.FinishReason != "STOP" || resp.UsageMetadata.PromptTokenCount != 3 {
		t.Errorf("answer = %s", a.body)
	}
}

func TestStreamFormats(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{})
	t.Cleanup(s.Close)
	s.Enqueue(googletest.Reply{Text: "one two three"}, googletest.Reply{Text: "one two"})

	a := post(t, s.URL()+"/v1beta/models/m:streamGenerateContent?alt=sse", googletest.Key, hello)
	if ct := a.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	events := strings.Split(strings.TrimSuffix(a.body, "\r\n\r\n"), "\r\n\r\n")
	if len(events) != 3 {
		t.Fatalf("%d events, want one a word: %q", len(events), a.body)
	}
	var text strings.Builder
	for i, ev := range events {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("event %q is not a data line", ev)
		}
		var r googletest.GenerateContentResponse
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatal(err)
		}
		text.WriteString(r.Candidates[0].Content.Text())
		if last := i == len(events)-1; last != (r.Candidates[0].FinishReason == "STOP") || last != (r.UsageMetadata.CandidatesTokenCount == 3) {
			t.Errorf("event %d = %s: only the last one has the finish reason and the answer's usage", i, data)
		}
	}
	if text.String() != "one two three" {
		t.Errorf("streamed text = %q", text.String())
	}

	a = post(t, s.URL()+"/v1beta/models/m:streamGenerateContent", googletest.Key, hello)
	var list []googletest.GenerateContentResponse
	if err := json.Unmarshal([]byte(a.body), &list); err != nil || len(list) != 2 {
		t.Errorf("without alt=sse the answer is a JSON array of events: %s (%v)", a.body, err)
	}
}

func TestFailuresAndHangs(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{})
	t.Cleanup(s.Close)
	url := s.URL() + "/v1beta/models/m:generateContent"
	s.Fail(googletest.Failure{Status: 429, RetryAfter: "3", Times: 2})
	for i := range 2 {
		a := post(t, url, googletest.Key, hello)
		e := googleError(t, a)
		if a.status != 429 || e.Error.Status != "RESOURCE_EXHAUSTED" || a.header.Get("Retry-After") != "3" {
			t.Fatalf("answer %d = %d %s, Retry-After %q", i, a.status, a.body, a.header.Get("Retry-After"))
		}
		if d := e.Error.Details[len(e.Error.Details)-1]; d["@type"] != "type.googleapis.com/google.rpc.RetryInfo" || d["retryDelay"] != "13s" {
			t.Errorf("last detail = %v, want RetryInfo 13s", d)
		}
	}
	if a := post(t, url, googletest.Key, hello); a.status != http.StatusOK {
		t.Fatalf("after the failures: %d", a.status)
	}

	s.Hang(1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(hello))
	req.Header.Set("x-goog-api-key", googletest.Key)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a hanging request was answered %d", resp.StatusCode)
	}
	reqs := s.Requests()
	if len(reqs) != 4 || reqs[3].Status != 0 {
		t.Errorf("requests = %d, last status %d; want 4, the hanging one unanswered", len(reqs), reqs[len(reqs)-1].Status)
	}
}

func TestCloseReleasesHangs(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{})
	s.Hang(1)
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1beta/models/m:streamGenerateContent?alt=sse", strings.NewReader(hello))
		req.Header.Set("x-goog-api-key", googletest.Key)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = bufio.NewReader(resp.Body).ReadString('\n')
			resp.Body.Close()
		}
		done <- err
	}()
	for len(s.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited on a hanging request")
	}
	if err := <-done; err == nil {
		t.Error("the hanging request got an answer")
	}
}

func TestThoughtSignatures(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{RequireThoughtSignatures: true})
	t.Cleanup(s.Close)
	url := s.URL() + "/v1beta/models/gemini-3-pro-preview:generateContent"
	s.Enqueue(googletest.Reply{Calls: []googletest.FunctionCall{{Name: "f"}, {Name: "g"}}})
	a := post(t, url, googletest.Key, hello)
	var resp googletest.GenerateContentResponse
	if err := json.Unmarshal([]byte(a.body), &resp); err != nil {
		t.Fatal(err)
	}
	parts := resp.Candidates[0].Content.Parts
	if len(parts) != 2 || parts[0].ThoughtSignature == "" || parts[1].ThoughtSignature != "" {
		t.Fatalf("answer = %s, want a signature on the first call only", a.body)
	}
	history := func(sig string) string {
		first := `{"functionCall":{"name":"f","args":{}}}`
		if sig != "" {
			first = fmt.Sprintf(`{"functionCall":{"name":"f","args":{}},"thoughtSignature":%q}`, sig)
		}
		return `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[` + first + `,{"functionCall":{"name":"g"}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}},{"functionResponse":{"name":"g","response":{}}}]}]}`
	}
	for _, tt := range []struct {
		sig         string
		wantStatus  int
		wantMessage string
	}{
		{sig: parts[0].ThoughtSignature, wantStatus: 200},
		{sig: googletest.SkipSignature, wantStatus: 200},
		{sig: "", wantStatus: 400, wantMessage: "Function call is missing a thought_signature in functionCall parts."},
		{sig: "c29tZXRoaW5nIGVsc2U=", wantStatus: 400, wantMessage: "Corrupted thought signature."},
	} {
		a := post(t, url, googletest.Key, history(tt.sig))
		if a.status != tt.wantStatus {
			t.Errorf("signature %q: status %d (%s), want %d", tt.sig, a.status, a.body, tt.wantStatus)
			continue
		}
		if tt.wantStatus != 200 {
			if e := googleError(t, a); !strings.HasPrefix(e.Error.Message, tt.wantMessage) {
				t.Errorf("signature %q: message %q", tt.sig, e.Error.Message)
			}
		}
	}
}

func TestEmbedContent(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{})
	t.Cleanup(s.Close)
	a := post(t, s.URL()+"/v1beta/models/text-embedding-004:embedContent", googletest.Key,
		`{"content":{"parts":[{"text":"hello"}]},"outputDimensionality":4}`)
	var resp struct {
		Embedding googletest.ContentEmbedding `json:"embedding"`
	}
	if err := json.Unmarshal([]byte(a.body), &resp); err != nil || a.status != 200 {
		t.Fatalf("answer %d %s: %v", a.status, a.body, err)
	}
	want := googletest.Vector("hello", 4)
	if fmt.Sprint(resp.Embedding.Values) != fmt.Sprint(want) {
		t.Errorf("vector = %v, want %v", resp.Embedding.Values, want)
	}
}
