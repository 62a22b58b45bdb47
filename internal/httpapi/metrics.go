package httpapi

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-io/switchboard/internal/metrics"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// sendMetrics time the sends (POST /v1/messages and /v2/messages) as their clients see them,
// key check and request rate included, and count the messages accepted. Their labels are bounded
// by the installation's code, not its data: no project (an installation may have thousands),
// no sender, recipient or message.
type sendMetrics struct {
	duration *prometheus.HistogramVec
	accepted *prometheus.CounterVec
}

// Outcomes of a send: accepted (2xx), refused (the caller's: 4xx, an idempotent replay
// included) and error (5xx).
const (
	sendAccepted = "accepted"
	sendRefused  = "refused"
	sendError    = "error"
)

func newSendMetrics(reg prometheus.Registerer) *sendMetrics {
	m := &sendMetrics{
		duration: metrics.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_message_accept_duration_seconds",
			Help: "How long a send (POST /v1/messages, /v2/messages) took to answer, by API generation and outcome (accepted, refused, error).",
			// Finer around the target (p99 within 50 ms).
			Buckets: []float64{.0025, .005, .01, .02, .03, .04, .05, .075, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"api", "outcome"})),
		accepted: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_messages_accepted_total",
			Help: "Messages accepted through the API, by channel and mode (test, live).",
		}, []string{"channel", "mode"})),
	}
	for _, api := range []string{"v1", "v2"} {
		for _, o := range []string{sendAccepted, sendRefused, sendError} {
			m.duration.WithLabelValues(api, o) // every series shows, empty until used
		}
	}
	return m
}

// timed wraps a send route's handler (its checks included) to observe its duration.
func (m *sendMetrics) timed(api string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		outcome := sendAccepted
		switch {
		case sw.status >= 500:
			outcome = sendError
		case sw.status >= 300:
			outcome = sendRefused
		}
		m.duration.WithLabelValues(api, outcome).Observe(time.Since(start).Seconds())
	})
}

// accept counts an accepted message.
func (m *sendMetrics) accept(msg db.Message) {
	mode := "live"
	if msg.TestMode {
		mode = "test"
	}
	m.accepted.WithLabelValues(msg.Channel, mode).Inc()
}

// statusWriter keeps the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines, flushes).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
