package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
)

// A NUL character anywhere in a request (body field at any depth, path, query) is refused as
// the caller's mistake, never handed to Postgres: 400 naming the field, or 404 for an id, and
// nothing stored.
func TestHardeningNUL(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test)
	const nul = `\u0000`

	for _, c := range []struct {
		name, path, body string
		paths            []string
	}{
		{"text", "/v1/messages", `{"to":"+15005550100","text":"a` + nul + `b"}`, []string{"text"}},
		{"v2 text", "/v2/messages", `{"to":"+15005550100","text":"a` + nul + `b"}`, []string{"text"}},
		{"subject", "/v1/messages", `{"to":"ada@example.com","subject":"` + nul + `","text":"x"}`, []string{"subject"}},
		{"metadata value", "/v1/messages", `{"to":"+15005550100","text":"x","metadata":{"order":"4` + nul + `2"}}`, []string{"metadata.order"}},
		{"metadata key", "/v1/messages", `{"to":"+15005550100","text":"x","metadata":{"or` + nul + `der":"42"}}`, []string{"metadata"}},
		{"idempotencyKey", "/v1/messages", `{"to":"+15005550100","text":"x","idempotencyKey":"k` + nul + `"}`, []string{"idempotencyKey"}},
		{"content, nested", "/v1/messages", `{"to":"+15005550100","messageType":"contact","content":{"contacts":[{"name":"Ada` + nul + `","phone":"+15005550101"}]}}`,
			[]string{"content.contacts[0].name"}},
		{"several", "/v1/messages", `{"to":"+1500555010` + nul + `","text":"` + nul + `"}`, []string{"to", "text"}},
		{"contact name", "/v1/contacts", `{"displayName":"Ada` + nul + `","channels":[{"channel":"sms","identifier":"+15005550102"}]}`, []string{"displayName"}},
		{"contact tag", "/v2/contacts", `{"displayName":"Ada","tags":["vip","a` + nul + `"],"channels":[{"channel":"sms","identifier":"+15005550102"}]}`, []string{"tags[1]"}},
		{"sandbox inbound text", "/v1/sandbox/inbound", `{"from":"+15005550103","text":"hi` + nul + `"}`, []string{"text"}},
	} {
		r := in.post(c.path, key, c.body)
		var paths []string
		for _, e := range fieldErrors(r) {
			paths = append(paths, fmt.Sprint(e.(map[string]any)["path"]))
		}
		if r.status != http.StatusBadRequest || r.body["code"] != "invalid_request" || !slices.Equal(paths, c.paths) {
			t.Errorf("%s: %d %s, want 400 invalid_request on %v", c.name, r.status, r.raw, c.paths)
		}
	}
	for what, sql := range map[string]string{
		"message":         "SELECT count(*) FROM messages",
		"idempotency key": "SELECT count(*) FROM message_idempotency_keys",
		"contact":         "SELECT count(*) FROM contacts",
		"conversation":    "SELECT count(*) FROM conversations",
	} {
		if n := in.count(sql); n != 0 {
			t.Errorf("refused requests left %d %s rows", n, what)
		}
	}
	// An escaped backslash before u0000 is not a NUL: the text is stored as sent.
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"a\\u0000b"}`); r.status != http.StatusOK || r.body["message"].(map[string]any)["text"] != `a\u0000b` {
		t.Errorf("escaped backslash: %d %s", r.status, r.raw)
	}

	// Path and query values.
	for _, c := range []struct {
		path   string
		status int
		field  string
	}{
		{"/v1/messages/msg_%00", http.StatusNotFound, ""},
		{"/v2/messages/msg_%00", http.StatusNotFound, ""},
		{"/v1/contacts/phone/%2B1500%00", http.StatusNotFound, ""},
		{"/v1/messages?to=%00", http.StatusBadRequest, "to"},
		{"/v1/messages?cursor=%00", http.StatusBadRequest, "cursor"},
		{"/v1/contacts?search=a%00", http.StatusBadRequest, "search"},
		{"/v2/contacts?tag=%00", http.StatusBadRequest, "tag"},
	} {
		r := in.get(c.path, key)
		if r.status != c.status || r.body["message"] == nil {
			t.Errorf("GET %s = %d %s, want %d", c.path, r.status, r.raw, c.status)
			continue
		}
		if c.field != "" {
			errs := fieldErrors(r)
			if r.body["code"] != "invalid_request" || len(errs) != 1 || errs[0].(map[string]any)["path"] != c.field {
				t.Errorf("GET %s = %s, want invalid_request on %s", c.path, r.raw, c.field)
			}
		}
	}
}

// A body is read as JSON only when it says it is JSON, or says nothing.
func TestHardeningContentType(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test)
	body := `{"to":"+15005550100","text":"hi"}`
	for _, c := range []struct {
		contentType string
		status      int
	}{
		{"text/plain", http.StatusUnsupportedMediaType},
		{"text/plain; charset=utf-8", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"application/jsonl", http.StatusUnsupportedMediaType},
		{"application/json", http.StatusOK},
		{"Application/JSON; charset=UTF-8", http.StatusOK},
		{"application/vnd.acme+json", http.StatusOK},
		{"", http.StatusOK}, // no Content-Type at all
	} {
		req, _ := http.NewRequest(http.MethodPost, in.url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("Authorization", key)
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		r := in.doRequest(req)
		if r.status != c.status {
			t.Errorf("%q: %d %s, want %d", c.contentType, r.status, r.raw, c.status)
			continue
		}
		if c.status == http.StatusUnsupportedMediaType && (r.body["code"] != "unsupported_media_type" || !strings.Contains(fmt.Sprint(r.body["message"]), "application/json")) {
			t.Errorf("%q: %s, want unsupported_media_type naming application/json", c.contentType, r.raw)
		}
	}
	if n := in.count("SELECT count(*) FROM messages"); n != 4 {
		t.Errorf("%d messages stored, want the 4 sent as JSON", n)
	}
}

// Connection-level limits: a body that trickles is cut off in bounded time with 408, and the
// errors net/http answers itself (a header over the limit, a malformed request) are in the
// error shape too.
func TestHardeningConnection(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test)
	addr := strings.TrimPrefix(in.url, "http://")

	t.Run("trickled body", func(t *testing.T) {
		conn := dial(t, addr)
		fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", key)
		stop := make(chan struct{})
		defer close(stop)
		go func() { // one byte every 2 s, as the probe did
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Second):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		began := time.Now()
		resp, body := readResponse(t, conn, 25*time.Second)
		if took := time.Since(began); took > 15*time.Second {
			t.Errorf("the trickled body held the request for %s", took)
		}
		if resp.StatusCode != http.StatusRequestTimeout || body["code"] != "request_timeout" || body["message"] == nil {
			t.Errorf("trickled body = %d %v, want 408 request_timeout", resp.StatusCode, body)
		}
		// The server hangs up: the connection cannot carry another request.
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := conn.Read(make([]byte, 1)); err == nil {
			t.Errorf("the connection stays open after 408 (read %d bytes)", n)
		}
	})

	for _, c := range []struct {
		name    string
		request string
		status  int
		code    string
	}{
		{"100 KB header", "GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: " + key + "\r\nX-Big: " + strings.Repeat("a", 100<<10) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, "headers_too_large"},
		{"malformed request line", "GET\r\n\r\n", http.StatusBadRequest, "malformed_request"},
		{"NUL in a header value", "GET /v1/me HTTP/1.1\r\nHost: x\r\nService-Sender: a\x00b\r\n\r\n", http.StatusBadRequest, "malformed_request"},
		{"unknown transfer coding", "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: rot13\r\n\r\n", http.StatusNotImplemented, "unsupported_transfer_encoding"},
		{"HTTP/2 request line", "GET /v1/me HTTP/2.0\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported, "unsupported_http_version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := dial(t, addr)
			go func() { _, _ = io.WriteString(conn, c.request) }() // the server may answer before it is all written
			resp, body := readResponse(t, conn, 10*time.Second)
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || body["code"] != c.code || body["message"] == nil {
				t.Errorf("%d %s %v, want %d %s in the error shape", resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.code)
			}
		})
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// readResponse reads one response from conn within timeout, and its JSON body (nil when not JSON).
func readResponse(t *testing.T, conn net.Conn, timeout time.Duration) (*http.Response, map[string]any) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Logf("body is not JSON: %q", raw)
	}
	return resp, body
}
