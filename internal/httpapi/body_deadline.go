package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// A request body must keep pace: after bodyGrace it must have arrived at bodyMinRate on
// average. A flat http.Server.ReadTimeout cannot do both jobs: one short enough to stop a client
// that trickles a small body would cut off a 64 MiB send (sendMaxBody) on an ordinary link, and
// one long enough for that send would let every trickled body hold its connection as long.
// At 64 KiB/s (about 0.5 Mbit/s) a 64 MiB body may take 5 s + 1,024 s; a body of a few
// kilobytes must be in within about 5 s. The clock starts when the handler first reads, so time
// the server spends before reading (authentication, the rate limit) is not held against the
// client.
const (
	bodyGrace   = 5 * time.Second
	bodyMinRate = 64 << 10 // bytes per second
)

// errBodyTooSlow is what a paced body's Read returns once the body has fallen behind.
var errBodyTooSlow = errors.New("request body arrived too slowly")

// bodyTooSlow is the 408 answered for a body that fell behind; the connection is closed after it.
func bodyTooSlow() *apperror.Error {
	e := apperror.New(apperror.Invalid, codeRequestTimeout, fmt.Sprintf(
		"The request body arrived too slowly: after the first %d seconds it must arrive at %d KiB/s or more. Send the request again.",
		int(bodyGrace/time.Second), bodyMinRate>>10))
	e.Details = map[string]any{"graceSeconds": int(bodyGrace / time.Second), "minBytesPerSecond": bodyMinRate}
	return e
}

// paceBodies sets a read deadline on the connection of every request that has a body, and moves
// it as the body is read (pacedBody). A server without deadlines (http.ErrNotSupported) is left
// unpaced.
func paceBodies(next http.Handler, grace time.Duration, rate int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		b := &pacedBody{body: r.Body, rc: http.NewResponseController(w), grace: grace, rate: rate}
		// Until the handler reads, the deadline bounds what net/http discards of a body the
		// handler did not read (a 401, a 413) before it reuses the connection.
		if err := b.rc.SetReadDeadline(time.Now().Add(grace + paceTime(max(r.ContentLength, 0), rate))); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = b
		next.ServeHTTP(w, r)
	})
}

// pacedBody is a request body that must arrive at rate bytes per second after grace, counted
// from its first Read: the (n+1)th byte is due grace + (n+1)/rate after it.
type pacedBody struct {
	body  io.ReadCloser
	rc    *http.ResponseController
	grace time.Duration
	rate  int64
	start time.Time
	n     int64
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.start.IsZero() {
		b.start = time.Now()
	}
	_ = b.rc.SetReadDeadline(b.start.Add(b.grace + paceTime(b.n+1, b.rate)))
	// At the body's end net/http clears the deadline itself, as it starts its background read
	// of the connection, so a handler may work on past it.
	n, err := b.body.Read(p)
	b.n += int64(n)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w: %d bytes in %s: %w", errBodyTooSlow, b.n, time.Since(b.start).Round(time.Millisecond), err)
	}
	return n, err
}

func (b *pacedBody) Close() error { return b.body.Close() }

// paceTime is how long n bytes take at rate bytes per second.
func paceTime(n, rate int64) time.Duration {
	return time.Duration(float64(n) / float64(rate) * float64(time.Second))
}
