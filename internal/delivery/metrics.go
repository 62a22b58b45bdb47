package delivery

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-io/switchboard/internal/metrics"
)

// Outcomes of a claimed delivery, as switchboard_webhook_attempts_total counts them.
const (
	OutcomeDelivered = "delivered" // the receiver answered 2xx
	OutcomeFailed    = "failed"    // failed for good: the last attempt, a URL never delivered to, a disabled endpoint
	OutcomeRetry     = "retry"     // attempted and failed; another attempt follows on the schedule
	OutcomeCancelled = "cancelled" // the endpoint was removed or unsubscribed first
	OutcomeNotMade   = "not_made"  // no request went (a busy receiver, a shutdown): tried again soon, not counted as an attempt
)

// workerMetrics count what the worker records, once it is recorded.
type workerMetrics struct {
	attempts *prometheus.CounterVec
	latency  prometheus.Histogram
}

func newWorkerMetrics(reg prometheus.Registerer) *workerMetrics {
	m := &workerMetrics{
		attempts: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_webhook_attempts_total",
			Help: "Webhook deliveries claimed and recorded, by outcome: delivered, failed (for good), retry, cancelled, not_made.",
		}, []string{"outcome"})),
		latency: metrics.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "switchboard_webhook_attempt_duration_seconds",
			Help: "How long a webhook attempt took: reading the endpoint, signing, and the request to the receiver's answer or error.",
			// The receiver has 10 s.
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		})),
	}
	for _, o := range []string{OutcomeDelivered, OutcomeFailed, OutcomeRetry, OutcomeCancelled, OutcomeNotMade} {
		m.attempts.WithLabelValues(o) // every outcome shows, at 0 until it happens
	}
	return m
}

// recorded counts a batch FinishWebhookAttempts recorded.
func (m *workerMetrics) recorded(batch []outcome) {
	for _, r := range batch {
		m.attempts.WithLabelValues(r.outcome()).Inc()
		if r.made {
			m.latency.Observe(float64(r.latencyMs) / 1000)
		}
	}
}

// outcome is the outcome label of r.
func (r outcome) outcome() string {
	switch {
	case r.status == "delivered":
		return OutcomeDelivered
	case r.status == "failed":
		return OutcomeFailed
	case r.status == "cancelled":
		return OutcomeCancelled
	case r.made:
		return OutcomeRetry
	}
	return OutcomeNotMade
}
