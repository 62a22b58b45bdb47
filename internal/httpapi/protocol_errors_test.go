package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Each fixed answer net/http writes itself (net/http/server.go, conn.serve) becomes the same
// status in the error shape; anything else passes untouched.
func TestShapeGoError(t *testing.T) {
	t.Parallel()
	const h = goErrorHeaders
	tests := []struct {
		name, written string
		status        int // 0: not rewritten
		code, message string
	}{
		{"headers too large", "HTTP/1.1 431 Request Header Fields Too Large" + h + "431 Request Header Fields Too Large",
			431, "headers_too_large", "The request's headers are larger than this server accepts (65536 bytes)."},
		{"malformed", "HTTP/1.1 400 Bad Request" + h + "400 Bad Request",
			400, "malformed_request", "The request is not valid HTTP/1.1."},
		{"with Go's reason", "HTTP/1.1 400 Bad Request: missing required Host header" + h + "400 Bad Request: missing required Host header",
			400, "malformed_request", "The request is not valid HTTP/1.1: missing required Host header."},
		{"transfer encoding", "HTTP/1.1 501 Not Implemented" + h + "Unsupported transfer encoding",
			501, "unsupported_transfer_encoding", "The request's Transfer-Encoding is not supported: send the body with Content-Length, or chunked."},
		{"version", "HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + h + "505 HTTP Version Not Supported: unsupported protocol version",
			505, "unsupported_http_version", "This server speaks HTTP/1.0 and HTTP/1.1."},
		{"a handler's response", "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Mon, 23 Nov 2026 12:00:00 GMT\r\n\r\nno", 0, "", ""},
		{"a body that quotes the headers", `{"text":"HTTP/1.1 400 x` + h + `"}`, 0, "", ""},
		{"a success", "HTTP/1.1 200 OK" + h + "ok", 0, "", ""},
		{"long", "HTTP/1.1 400 Bad Request" + h + strings.Repeat("x", 600), 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reply, ok := shapeGoError([]byte(tt.written), 64<<10)
			if ok != (tt.status != 0) {
				t.Fatalf("rewritten = %t: %q", ok, reply)
			}
			if !ok {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(reply))), nil)
			if err != nil {
				t.Fatal(err)
			}
			var body errorBody
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" || !resp.Close ||
				body.Code != tt.code || body.Message != tt.message {
				t.Fatalf("%d %v close=%t %+v", resp.StatusCode, resp.Header, resp.Close, body)
			}
		})
	}
}

// On a real server: net/http's own 431 arrives in the error shape, and a handler's response that
// looks like it (text/plain, Connection: close) is not touched.
func TestShapedListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		MaxHeaderBytes:    1 << 10,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			http.Error(w, "400 Bad Request", http.StatusBadRequest)
		}),
	}
	go func() { _ = srv.Serve(shapedListener{Listener: ln, maxHeaderBytes: 1 << 10}) }()
	t.Cleanup(func() { _ = srv.Close() })

	for _, tt := range []struct {
		name, request string
		status        int
		json          bool
	}{
		{"header over the limit", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, true},
		{"handler's own answer", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400, false},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = io.WriteString(conn, tt.request) }()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		isJSON := resp.Header.Get("Content-Type") == "application/json" && strings.Contains(string(body), `"code":`)
		if resp.StatusCode != tt.status || isJSON != tt.json {
			t.Errorf("%s: %d %s %q", tt.name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}
