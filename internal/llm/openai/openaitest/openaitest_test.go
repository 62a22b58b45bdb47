package openaitest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

func start(t *testing.T, f openaitest.Flavor) *openaitest.Server {
	t.Helper()
	s := openaitest.New(openaitest.Options{Flavor: f})
	t.Cleanup(s.Close)
	return s
}

// post sends body to path with the key, returning the status, headers and decoded body.
func post(t *testing.T, s *openaitest.Server, path, key, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
	}
	return res.StatusCode, res.Header, m
}

// openAIError is the message of OpenAI's {"error": {...}}.
func openAIError(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("not OpenAI's error body: %v", m)
	}
	return e
}

func TestAuth(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	o := start(t, openaitest.OpenAI)
	status, _, m := post(t, o, "/chat/completions", "sk-wrong-key-000000000000", body)
	if e := openAIError(t, m); status != 401 || e["code"] != "invalid_api_key" || !strings.Contains(e["message"].(string), "sk-****") {
		t.Fatalf("wrong key: %d %v", status, m)
	}
	status, _, m = post(t, o, "/chat/completions", "", body)
	if e := openAIError(t, m); status != 401 || !strings.HasPrefix(e["message"].(string), "You didn't provide an API key.") {
		t.Fatalf("no key: %d %v", status, m)
	}
	mi := start(t, openaitest.Mistral)
	status, _, m = post(t, mi, "/chat/completions", "nope", body)
	if status != 401 || m["message"] != "Unauthorized" {
		t.Fatalf("mistral wrong key: %d %v", status, m)
	}
	if status, _, _ = post(t, mi, "/chat/completions", mi.APIKey(), body); status != 200 {
		t.Fatalf("mistral right key: %d", status)
	}
	if n := len(o.Requests()); n != 2 {
		t.Fatalf("%d requests recorded, refused ones included", n)
	}
}

// The peer refuses what its provider refuses, with the provider's status and body.
func TestRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		flavor  openaitest.Flavor
		path    string
		body    string
		status  int
		message string // OpenAI's error.message or Mistral's message (its first detail's msg for a 422)
	}{
		{"not json", openaitest.OpenAI, "/chat/completions", `{`, 400, "We could not parse the JSON body of your request."},
		{"no model", openaitest.OpenAI, "/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "you must provide a model parameter"},
		{"no messages", openaitest.OpenAI, "/chat/completions", `{"model":"gpt-4o"}`, 400, "Missing required parameter: 'messages'."},
		{"bad role", openaitest.OpenAI, "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"bot","content":"hi"}]}`, 400, "Invalid value: 'bot'."},
		{"orphan tool result", openaitest.OpenAI, "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_1","content":"x"}]}`, 400,
			"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."},
		{"unanswered call", openaitest.OpenAI, "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"?"}]}`, 400,
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1"},
		{"long call id", openaitest.OpenAI, "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"` + strings.Repeat("x", 41) + `","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"` + strings.Repeat("x", 41) + `","content":"x"}]}`, 400,
			"Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 41 instead."},
		{"stream_options without stream", openaitest.OpenAI, "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, 400,
			"The 'stream_options' parameter is only allowed when 'stream' is enabled."},
		{"bad tool name", openaitest.OpenAI, "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get weather"}}]}`, 400,
			"Invalid 'tools[0].function.name': string does not match pattern."},
		{"empty embedding input", openaitest.OpenAI, "/embeddings", `{"model":"text-embedding-3-small","input":[]}`, 400, "'$.input' is invalid."},

		{"stream_options", openaitest.Mistral, "/chat/completions", `{"model":"mistral-small-latest","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`, 422, "Extra inputs are not permitted"},
		{"max_completion_tokens", openaitest.Mistral, "/chat/completions", `{"model":"mistral-small-latest","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":10}`, 422, "Extra inputs are not permitted"},
		{"name on a user message", openaitest.Mistral, "/chat/completions", `{"model":"mistral-small-latest","messages":[{"role":"user","content":"hi","name":"bob"}]}`, 422, "Extra inputs are not permitted"},
		{"developer role", openaitest.Mistral, "/chat/completions", `{"model":"mistral-small-latest","messages":[{"role":"developer","content":"hi"}]}`, 422, "Input tag 'developer' found using 'role'"},
		{"no messages", openaitest.Mistral, "/chat/completions", `{"model":"mistral-small-latest"}`, 422, "Field required"},
		{"openai call id", openaitest.Mistral, "/chat/completions", `{"model":"mistral-small-latest","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"call_abc123","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_abc123","name":"f","content":"x"}]}`, 400,
			"Tool call id was call_abc123 but must be a-z, A-Z, 0-9, with a length of 9."},
		{"assistant last", openaitest.Mistral, "/chat/completions", `{"model":"mistral-small-latest","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`, 400,
			"Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant"},
		{"dimensions", openaitest.Mistral, "/embeddings", `{"model":"mistral-embed","input":["x"],"dimensions":8}`, 422, "Extra inputs are not permitted"},
	}
	for _, tc := range cases {
		t.Run(string(tc.flavor)+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, tc.flavor)
			status, _, m := post(t, s, tc.path, s.APIKey(), tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, m)
			}
			var msg string
			switch {
			case tc.flavor == openaitest.OpenAI:
				msg, _ = openAIError(t, m)["message"].(string)
			case status == 422:
				if m["object"] != "error" {
					t.Fatalf("not Mistral's error body: %v", m)
				}
				ds := m["message"].(map[string]any)["detail"].([]any)
				msg = ds[0].(map[string]any)["msg"].(string)
			default:
				if m["object"] != "error" {
					t.Fatalf("not Mistral's error body: %v", m)
				}
				msg, _ = m["message"].(string)
			}
			if !strings.HasPrefix(msg, tc.message) {
				t.Fatalf("message %q, want it to start with %q", msg, tc.message)
			}
		})
	}
}

func TestUnknownPath(t *testing.T) {
	t.Parallel()
	s := start(t, openaitest.OpenAI)
	status, _, m := post(t, s, "/responses", s.APIKey(), `{}`)
	if e := openAIError(t, m); status != 404 || e["message"] != "Invalid URL (POST /v1/responses)" {
		t.Fatalf("%d %v", status, m)
	}
}

// events reads a stream's data lines up to [DONE].
func events(t *testing.T, s *openaitest.Server, body string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.APIKey())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("%d %s", res.StatusCode, ct)
	}
	var out []map[string]any
	sc := bufio.NewScanner(res.Body)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if !done {
		t.Fatal("no [DONE]")
	}
	return out
}

func TestStreamFormat(t *testing.T) {
	t.Parallel()
	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		s := start(t, openaitest.OpenAI)
		s.Reply(openaitest.Reply{Text: "a b", ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"k":"0123456789"}`}}})
		evs := events(t, s, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`)
		last := evs[len(evs)-1]
		if choices := last["choices"].([]any); len(choices) != 0 || last["usage"] == nil {
			t.Fatalf("last event is not the usage: %v", last)
		}
		finish := evs[len(evs)-2]["choices"].([]any)[0].(map[string]any)["finish_reason"]
		if finish != "tool_calls" {
			t.Fatalf("finish_reason %v", finish)
		}
		var args strings.Builder
		for _, e := range evs[:len(evs)-1] {
			if e["usage"] != nil {
				t.Fatalf("usage before the end: %v", e)
			}
			d := e["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
			for _, tc := range asSlice(d["tool_calls"]) {
				args.WriteString(tc.(map[string]any)["function"].(map[string]any)["arguments"].(string))
			}
		}
		if args.String() != `{"k":"0123456789"}` {
			t.Fatalf("arguments %q", args.String())
		}
	})
	t.Run("openai without usage", func(t *testing.T) {
		t.Parallel()
		s := start(t, openaitest.OpenAI)
		for _, e := range events(t, s, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream":true}`) {
			if _, ok := e["usage"]; ok {
				t.Fatalf("usage not asked for: %v", e)
			}
		}
	})
	t.Run("mistral", func(t *testing.T) {
		t.Parallel()
		s := start(t, openaitest.Mistral)
		evs := events(t, s, `{"model":"mistral-small-latest","messages":[{"role":"user","content":"hi"}],"stream":true}`)
		last := evs[len(evs)-1]
		choice := last["choices"].([]any)[0].(map[string]any)
		if choice["finish_reason"] != "stop" || last["usage"] == nil {
			t.Fatalf("last event: %v", last)
		}
	})
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func TestFailAndHang(t *testing.T) {
	t.Parallel()
	s := start(t, openaitest.OpenAI)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	s.Fail(503, 2)
	for range 2 {
		if status, _, _ := post(t, s, "/chat/completions", s.APIKey(), body); status != 503 {
			t.Fatalf("status %d", status)
		}
	}
	status, _, m := post(t, s, "/chat/completions", s.APIKey(), body)
	if status != 200 || m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"] != openaitest.DefaultReply("hi") {
		t.Fatalf("%d %v", status, m)
	}
	s.Fail(429, 1)
	status, h, m := post(t, s, "/chat/completions", s.APIKey(), body)
	if e := openAIError(t, m); status != 429 || e["code"] != "rate_limit_exceeded" || h.Get("X-Ratelimit-Reset-Requests") != "20s" || h.Get("X-Ratelimit-Remaining-Requests") != "0" {
		t.Fatalf("%d %v %v", status, h, m)
	}

	// A hang holds the request until the client gives up.
	s.Hang(1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.APIKey())
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("a hanging request was answered")
	}
}

// Close releases hanging requests rather than waiting for them.
func TestCloseEndsHangs(t *testing.T) {
	t.Parallel()
	s := openaitest.New(openaitest.Options{})
	s.Hang(1)
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
		req.Header.Set("Authorization", "Bearer "+s.APIKey())
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	for len(s.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the hanging request")
	}
	<-errc
}

func TestEmbeddings(t *testing.T) {
	t.Parallel()
	s := start(t, openaitest.OpenAI)
	status, _, m := post(t, s, "/embeddings", s.APIKey(), `{"model":"text-embedding-3-small","input":"one","dimensions":4,"encoding_format":"base64"}`)
	if status != 200 {
		t.Fatalf("%d %v", status, m)
	}
	b, err := base64.StdEncoding.DecodeString(m["data"].([]any)[0].(map[string]any)["embedding"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var got []float32
	for i := 0; i < len(b); i += 4 {
		got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	if !slices.Equal(got, openaitest.Vector("one", 4)) {
		t.Fatalf("vector %v", got)
	}
	if r := s.LastRequest(); !r.Embeddings.InputWasString || *r.Embeddings.Dimensions != 4 {
		t.Fatalf("request %+v", r.Embeddings)
	}
	// Vectors are of unit length and differ by input.
	v, w := openaitest.Vector("one", 256), openaitest.Vector("two", 256)
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if math.Abs(norm-1) > 1e-5 || slices.Equal(v, w) || !bytes.Equal(f32bytes(v), f32bytes(openaitest.Vector("one", 256))) {
		t.Fatalf("norm %v", norm)
	}
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
