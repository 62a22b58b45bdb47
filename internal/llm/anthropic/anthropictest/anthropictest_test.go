package anthropictest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/llm/anthropic/anthropictest"
)

type call struct {
	method, path string
	key          string // sent as x-api-key; "" for none
	bearer       string // sent as Authorization: Bearer; "" for none
	version      string // "-" for none
	body         string
}

// do sends a raw request to the peer, as curl would to Anthropic.
func do(t *testing.T, s *anthropictest.Server, c call) *http.Response {
	t.Helper()
	if c.method == "" {
		c.method = http.MethodPost
	}
	if c.path == "" {
		c.path = "/v1/messages"
	}
	req, err := http.NewRequest(c.method, s.URL()+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	if c.key != "" {
		req.Header.Set("x-api-key", c.key)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	switch c.version {
	case "-":
	case "":
		req.Header.Set("anthropic-version", anthropictest.Version)
	default:
		req.Header.Set("anthropic-version", c.version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type errorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func decodeError(t *testing.T, resp *http.Response) errorBody {
	t.Helper()
	var b errorBody
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatalf("the error body is not JSON: %v", err)
	}
	if b.Type != "error" || b.Error.Type == "" || b.Error.Message == "" {
		t.Errorf("error body = %+v, want {type: error, error: {type, message}}", b)
	}
	if b.RequestID == "" || b.RequestID != resp.Header.Get("request-id") {
		t.Errorf("request_id %q, request-id header %q", b.RequestID, resp.Header.Get("request-id"))
	}
	return b
}

const hello = `{"model":"claude-sonnet-5","max_tokens":100,"messages":[{"role":"user","content":"Hello"}]}`

func TestPeerRefusesAsTheAPIDoes(t *testing.T) {
	t.Parallel()
	key := anthropictest.DefaultAPIKey
	toolTurns := func(results string) string {
		return `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}},{"type":"tool_use","id":"toolu_2","name":"f","input":{}}]},` +
			results + `]}`
	}
	cases := []struct {
		name     string
		call     call
		status   int
		errType  string
		contains string
	}{
		{"no key", call{body: hello}, 401, "authentication_error", "x-api-key header is required"},
		{"wrong key", call{key: "sk-ant-nope", body: hello}, 401, "authentication_error", "invalid x-api-key"},
		{"wrong bearer", call{bearer: "sk-ant-nope", body: hello}, 401, "authentication_error", "invalid x-api-key"},
		{"no version", call{key: key, version: "-", body: hello}, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"unknown version", call{key: key, version: "2024-01-01", body: hello}, 400, "invalid_request_error", "anthropic-version"},
		{"unknown path", call{key: key, path: "/v1/complete", body: hello}, 404, "not_found_error", ""},
		{"malformed body", call{key: key, body: `{"model":`}, 400, "invalid_request_error", "error parsing the body"},
		{"no model", call{key: key, body: `{"max_tokens":1,"messages":[{"role":"user","content":"x"}]}`}, 400, "invalid_request_error", "model: Field required"},
		{"no max_tokens", call{key: key, body: `{"model":"m","messages":[{"role":"user","content":"x"}]}`}, 400, "invalid_request_error", "max_tokens: Field required"},
		{"no messages", call{key: key, body: `{"model":"m","max_tokens":1}`}, 400, "invalid_request_error", "messages: Field required"},
		{"bad role", call{key: key, body: `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`}, 400, "invalid_request_error", "messages.0.role"},
		{"empty text block", call{key: key, body: `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`}, 400, "invalid_request_error", "text content blocks must be non-empty"},
		{"temperature in 2026-10-21", call{key: key, body: `{"model":"m","max_tokens":1,"temperature":0.5,"messages":[{"role":"user","content":"x"}]}`}, 400, "invalid_request_error", "temperature"},
		{"temperature over 1 in 2023-06-01", call{key: key, version: anthropictest.LegacyVersion, body: `{"model":"m","max_tokens":1,"temperature":1.5,"messages":[{"role":"user","content":"x"}]}`}, 400, "invalid_request_error", "temperature"},
		{"schema not an object", call{key: key, body: `{"model":"m","max_tokens":1,"tools":[{"name":"f","input_schema":{"type":"string"}}],"messages":[{"role":"user","content":"x"}]}`}, 400, "invalid_request_error", "input_schema.type"},
		{"results split over two turns", call{key: key, body: toolTurns(
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"b"}]}`)},
			400, "invalid_request_error", "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_2"},
		{"result of an unknown call", call{key: key, body: toolTurns(
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"},{"type":"tool_result","tool_use_id":"toolu_2"},{"type":"tool_result","tool_use_id":"toolu_9"}]}`)},
			400, "invalid_request_error", "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"},
		{"text before results", call{key: key, body: toolTurns(
			`{"role":"user","content":[{"type":"text","text":"here"},{"type":"tool_result","tool_use_id":"toolu_1"},{"type":"tool_result","tool_use_id":"toolu_2"}]}`)},
			400, "invalid_request_error", "must come first"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := anthropictest.NewServer(t, anthropictest.Options{})
			resp := do(t, s, tc.call)
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.status)
			}
			b := decodeError(t, resp)
			if b.Error.Type != tc.errType || !strings.Contains(b.Error.Message, tc.contains) {
				t.Errorf("error = %+v, want type %s and a message with %q", b.Error, tc.errType, tc.contains)
			}
		})
	}
}

func TestPeerAnswersAMessage(t *testing.T) {
	t.Parallel()
	for _, c := range []call{
		{key: anthropictest.DefaultAPIKey, body: hello},
		{bearer: anthropictest.DefaultAPIKey, body: hello},
		{key: anthropictest.DefaultAPIKey, version: anthropictest.LegacyVersion,
			body: `{"model":"claude-sonnet-5","max_tokens":100,"temperature":0.3,"messages":[{"role":"user","content":"Hello"}]}`},
	} {
		s := anthropictest.NewServer(t, anthropictest.Options{})
		resp := do(t, s, c)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		content, _ := m["content"].([]any)
		usage, _ := m["usage"].(map[string]any)
		if m["type"] != "message" || m["role"] != "assistant" || m["model"] != "claude-sonnet-5" || m["stop_reason"] != "end_turn" ||
			len(content) != 1 || content[0].(map[string]any)["text"] != "You said: Hello" || usage["output_tokens"] != 3.0 {
			t.Errorf("message = %v", m)
		}
		if !strings.HasPrefix(m["id"].(string), "msg_") {
			t.Errorf("id = %v", m["id"])
		}
	}
}

// The stream is the API's server-sent events, in the API's order.
func TestPeerStreamsEvents(t *testing.T) {
	t.Parallel()
	s := anthropictest.NewServer(t, anthropictest.Options{})
	s.Enqueue(anthropictest.Reply{Text: "Hi there", ToolUses: []anthropictest.ToolUse{{ID: "toolu_1", Name: "f", Input: json.RawMessage(`{"a":"ü"}`)}}})
	resp := do(t, s, call{key: anthropictest.DefaultAPIKey, body: `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []string
	var partial strings.Builder
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("data of %s is not JSON: %v", name, err)
			}
			if data["type"] != name {
				t.Errorf("event %s carries type %v", name, data["type"])
			}
			kind := name
			if d, ok := data["delta"].(map[string]any); ok && name == "content_block_delta" {
				kind += "/" + d["type"].(string)
				if pj, ok := d["partial_json"].(string); ok {
					partial.WriteString(pj)
				}
			}
			if len(events) == 0 || events[len(events)-1] != kind {
				events = append(events, kind)
			}
		}
	}
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta/text_delta", "content_block_stop",
		"content_block_start", "content_block_delta/input_json_delta", "content_block_stop", "message_delta", "message_stop"}
	if strings.Join(events, " ") != strings.Join(want, " ") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, " "), strings.Join(want, " "))
	}
	if partial.String() != `{"a":"ü"}` {
		t.Errorf("input_json_delta pieces join to %q", partial.String())
	}
}

func TestPeerRateLimitHeaders(t *testing.T) {
	t.Parallel()
	s := anthropictest.NewServer(t, anthropictest.Options{})
	s.Fail(anthropictest.Failure{Status: 429, RetryAfter: 2500 * time.Millisecond, Limit: "requests", Times: 2})
	for i := 0; i < 2; i++ {
		resp := do(t, s, call{key: anthropictest.DefaultAPIKey, body: hello})
		if resp.StatusCode != 429 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		h := resp.Header
		if h.Get("retry-after") != "3" || h.Get("anthropic-ratelimit-requests-remaining") != "0" || h.Get("anthropic-ratelimit-tokens-remaining") == "0" {
			t.Errorf("headers = %v", h)
		}
		reset, err := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-requests-reset"))
		if err != nil || time.Until(reset) > 3*time.Second {
			t.Errorf("requests reset %q (%v)", h.Get("anthropic-ratelimit-requests-reset"), err)
		}
		if b := decodeError(t, resp); b.Error.Type != "rate_limit_error" {
			t.Errorf("error = %+v", b.Error)
		}
	}
	if resp := do(t, s, call{key: anthropictest.DefaultAPIKey, body: hello}); resp.StatusCode != 200 {
		t.Errorf("after two failures: status %d", resp.StatusCode)
	}
	s.Fail(anthropictest.Failure{Status: 529})
	resp := do(t, s, call{key: anthropictest.DefaultAPIKey, body: hello})
	if b := decodeError(t, resp); resp.StatusCode != 529 || b.Error.Type != "overloaded_error" || b.Error.Message != "Overloaded" {
		t.Errorf("529: status %d, error %+v", resp.StatusCode, b.Error)
	}
}

func TestPeerRecordsRequestsWithoutTheKey(t *testing.T) {
	t.Parallel()
	s := anthropictest.NewServer(t, anthropictest.Options{APIKey: "sk-ant-custom"})
	do(t, s, call{key: "sk-ant-custom", body: hello})
	do(t, s, call{key: "sk-ant-other", body: hello}) // refused: not recorded
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Auth != "x-api-key" || r.Version != anthropictest.Version || r.Body.Model != "claude-sonnet-5" || r.Body.Messages[0].Content.Text() != "Hello" {
		t.Errorf("request = %+v", r)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, "sk-ant-custom") {
				t.Errorf("the key is recorded in %s", k)
			}
		}
	}
}

func TestPeerCloseEndsHangs(t *testing.T) {
	t.Parallel()
	s := anthropictest.New(anthropictest.Options{})
	s.Hang(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(hello))
		req.Header.Set("x-api-key", anthropictest.DefaultAPIKey)
		req.Header.Set("anthropic-version", anthropictest.Version)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	for len(s.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the hanging request")
	}
	<-done
}
