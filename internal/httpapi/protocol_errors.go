package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// net/http answers a request it cannot read (headers over MaxHeaderBytes, a malformed request
// line or header, an unknown Transfer-Encoding, an HTTP version it does not speak) itself,
// before any handler runs, by writing a fixed text/plain response straight to the connection
// (net/http/server.go, conn.serve). No hook of http.Server replaces it, so shapedListener gives
// the server connections that recognise that one write and send the same status in the error
// shape instead.
//
// The write is recognised by its exact header block, which Go's response writer never produces
// (it always adds Date, and writes headers in sorted order), so no handler's response is
// touched. Should a Go release change the text, these answers fall back to Go's plain text;
// TestHardeningConnection (internal/app) fails then.
//
// What stays outside the error shape: a request whose headers do not arrive within
// ReadHeaderTimeout, or a client that goes away, gets no answer at all (net/http closes the
// connection); an Expect header other than 100-continue gets net/http's 417 with an empty body,
// written through its response writer.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// shapedListener wraps the server's listener (see above).
type shapedListener struct {
	net.Listener
	maxHeaderBytes int
}

func (l shapedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &shapedConn{Conn: c, maxHeaderBytes: l.maxHeaderBytes}, nil
}

// shapedConn is a server connection whose net/http error answers are rewritten.
type shapedConn struct {
	net.Conn
	maxHeaderBytes int
}

func (c *shapedConn) Write(b []byte) (int, error) {
	reply, ok := shapeGoError(b, c.maxHeaderBytes)
	if !ok {
		return c.Conn.Write(b)
	}
	if _, err := c.Conn.Write(reply); err != nil {
		return 0, err
	}
	return len(b), nil
}

// CloseWrite lets net/http half-close the connection after a 431, as it does a *net.TCPConn's,
// so the client reads the answer before the connection is closed.
func (c *shapedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// shapeGoError turns one of net/http's own error answers, written whole in b, into the same
// status in the error shape. ok is false for anything else.
func shapeGoError(b []byte, maxHeaderBytes int) ([]byte, bool) {
	const prefix = "HTTP/1.1 "
	if len(b) > 512 || !bytes.HasPrefix(b, []byte(prefix)) || !bytes.Contains(b, []byte(goErrorHeaders)) {
		return nil, false
	}
	statusLine, text, _ := strings.Cut(string(b), goErrorHeaders)
	code, _, _ := strings.Cut(strings.TrimPrefix(statusLine, prefix), " ")
	status, err := strconv.Atoi(code)
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	// Go's text is fixed ("400 Bad Request: invalid header name"): it never echoes the request.
	detail := strings.TrimPrefix(strings.TrimPrefix(text, fmt.Sprintf("%d %s", status, http.StatusText(status))), ": ")
	body := errorBody{Code: "malformed_request", Message: "The request is not valid HTTP/1.1."}
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		body = errorBody{Code: "headers_too_large",
			Message: fmt.Sprintf("The request's headers are larger than this server accepts (%d bytes).", maxHeaderBytes),
			Details: map[string]any{"limit": maxHeaderBytes}}
	case http.StatusNotImplemented:
		body = errorBody{Code: "unsupported_transfer_encoding",
			Message: "The request's Transfer-Encoding is not supported: send the body with Content-Length, or chunked."}
	case http.StatusHTTPVersionNotSupported:
		body = errorBody{Code: "unsupported_http_version", Message: "This server speaks HTTP/1.0 and HTTP/1.1."}
	case http.StatusBadRequest:
		if detail != "" {
			body.Message = fmt.Sprintf("The request is not valid HTTP/1.1: %s.", detail)
		}
	default:
		body = errorBody{Code: "malformed_request", Message: fmt.Sprintf("The request could not be read: %s.", http.StatusText(status))}
	}
	j, err := json.Marshal(body)
	if err != nil {
		return nil, false
	}
	j = append(j, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(j), j), true
}
