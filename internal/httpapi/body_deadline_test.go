package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// A body must keep pace once the handler reads it: one that trickles is cut off with 408 soon
// after the grace, one that keeps above the rate is read whole however long it takes, and time
// the server spends before or after reading is not held against the client.
func TestPaceBodies(t *testing.T) {
	t.Parallel()
	const grace, rate = 300 * time.Millisecond, 2000 // bytes per second
	s := &Server{log: logr.Discard()}
	srv := httptest.NewServer(paceBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.Header.Get("X-Work-Before")); err == nil {
			time.Sleep(d)
		}
		b, err := io.ReadAll(r.Body)
		if errors.Is(err, errBodyTooSlow) {
			s.writeError(w, r, bodyTooSlow())
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if d, err := time.ParseDuration(r.Header.Get("X-Work-After")); err == nil {
			time.Sleep(d)
		}
		if r.Context().Err() != nil {
			http.Error(w, "context canceled while working", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%d", len(b))
	}), grace, rate))
	t.Cleanup(srv.Close)

	tests := []struct {
		name   string
		header string
		length int
		chunk  int           // bytes per write
		every  time.Duration // between writes
		status int
		within time.Duration
	}{
		{"trickled", "", 100, 1, 100 * time.Millisecond, http.StatusRequestTimeout, 2 * time.Second},
		{"trickled, chunked", "Transfer-Encoding: chunked\r\n", -1, 1, 100 * time.Millisecond, http.StatusRequestTimeout, 2 * time.Second},
		{"steady above the rate, past the grace", "", 6000, 250, 50 * time.Millisecond, http.StatusOK, 5 * time.Second},
		// The body is all in by 100 ms, but the handler reads it only after 600 ms.
		{"server busy before reading", "X-Work-Before: 600ms\r\n", 64 << 10, 64 << 10, 100 * time.Millisecond, http.StatusOK, 5 * time.Second},
		{"server busy after reading", "X-Work-After: 600ms\r\n", 10, 10, 100 * time.Millisecond, http.StatusOK, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			length := ""
			if tt.length >= 0 {
				length = fmt.Sprintf("Content-Length: %d\r\n", tt.length)
			}
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\n%s%s\r\n", length, tt.header)
			stop := make(chan struct{})
			defer close(stop)
			go func() { // the headers first, then a chunk after each interval
				for sent := 0; tt.length < 0 || sent < tt.length; sent += tt.chunk {
					select {
					case <-stop:
						return
					case <-time.After(tt.every):
					}
					part := strings.Repeat("a", tt.chunk)
					if tt.length < 0 {
						part = fmt.Sprintf("%x\r\n%s\r\n", tt.chunk, part)
					}
					if _, err := io.WriteString(conn, part); err != nil {
						return
					}
				}
			}()
			began := time.Now()
			_ = conn.SetReadDeadline(began.Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("read response: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			took := time.Since(began)
			if resp.StatusCode != tt.status || took > tt.within {
				t.Fatalf("%d %s after %s, want %d within %s", resp.StatusCode, body, took, tt.status, tt.within)
			}
			if tt.status == http.StatusRequestTimeout && (!strings.Contains(string(body), `"code":"request_timeout"`) || !resp.Close) {
				t.Fatalf("408 %s, Connection: close %t", body, resp.Close)
			}
		})
	}
}

func TestPaceTime(t *testing.T) {
	t.Parallel()
	// The largest send at the floor: 64 MiB at 64 KiB/s.
	if got := paceTime(sendMaxBody, bodyMinRate); got != 1024*time.Second {
		t.Fatalf("paceTime = %s", got)
	}
}
