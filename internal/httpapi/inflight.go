package httpapi

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/metrics"
)

// DefaultMaxInFlight is how many API requests a process works on at once unless told
// otherwise. A process reaches Postgres through 20 connections (postgres.Open), and a send
// group shares one, so more requests than a few times that only wait, each holding its
// connection's buffers and goroutine (20-40 KB) and adding to the latency of all; a process
// accepting 2,500 sends a second at 25 ms each has about 60 in hand.
const DefaultMaxInFlight = 256

// inFlightWait is how long a request that finds every slot taken waits for one before it is
// refused: a stall shorter than that (a checkpoint) passes; in a sustained overload the
// requests waiting are at most half a second's excess, and at most as many as the slots: past
// that, a request is refused at once. Each request waiting holds its client's connection, its
// buffers and its goroutine (20-40 KB): an overload of twice what a process answers had 2,800
// goroutines and 21 MB of connection buffers at its peak, 225 MB resident in all
// (docs/performance.md).
const inFlightWait = 500 * time.Millisecond

// inFlight bounds the API requests a process works on at once, so that being offered more than
// it can answer costs refusals its clients retry (503 with Retry-After, which the published
// clients honour) instead of a queue of requests in memory that grows as long as the overload
// lasts. Health probes, providers' callbacks and the hosted pages are not counted: they are
// light, and a refused callback may not come again.
//
// held counts with the slots rather than reading len(slots): tests run several servers in one
// process, and the metric registered first is the one every server reports to.
type inFlight struct {
	slots chan struct{}
	held  prometheus.Gauge
	shed  prometheus.Counter
	// waiting counts the requests waiting for a slot, at most cap(slots).
	waiting      atomic.Int64
	waitingGauge prometheus.Gauge
}

// newInFlight bounds requests to max at once; max ≤ 0 bounds nothing (nil).
func newInFlight(max int, reg prometheus.Registerer) *inFlight {
	if max <= 0 {
		return nil
	}
	return &inFlight{slots: make(chan struct{}, max),
		held: metrics.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchboard_api_requests_in_flight",
			Help: "API requests this process is working on now (bounded by --max-requests-in-flight).",
		})),
		shed: metrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_api_requests_refused_busy_total",
			Help: "API requests refused with 503 because --max-requests-in-flight were being worked on for longer than a request waits, or as many were waiting already.",
		})),
		waitingGauge: metrics.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchboard_api_requests_waiting",
			Help: "API requests waiting for one of --max-requests-in-flight (at most as many as it).",
		})),
	}
}

// acquire takes a slot for r, waiting up to inFlightWait unless as many requests as there are
// slots wait already; false when none came (r is to be refused) or r's client went away.
// release gives the slot back.
func (b *inFlight) acquire(r *http.Request) bool {
	if b == nil {
		return true
	}
	select {
	case b.slots <- struct{}{}:
		b.held.Inc()
		return true
	default:
	}
	if b.waiting.Add(1) > int64(cap(b.slots)) {
		b.waiting.Add(-1)
		b.shed.Inc()
		return false
	}
	b.waitingGauge.Inc()
	defer func() {
		b.waiting.Add(-1)
		b.waitingGauge.Dec()
	}()
	t := time.NewTimer(inFlightWait)
	defer t.Stop()
	select {
	case b.slots <- struct{}{}:
		b.held.Inc()
		return true
	case <-t.C:
		b.shed.Inc()
		return false
	case <-r.Context().Done():
		return false
	}
}

func (b *inFlight) release() {
	if b == nil {
		return
	}
	b.held.Dec()
	<-b.slots
}

// busy is the answer to a request refused for want of a slot.
func busy(w http.ResponseWriter) error {
	w.Header().Set("Retry-After", "1")
	return apperror.New(apperror.Unavailable, "service_unavailable",
		"Switchboard is answering as many requests as it can. Retry after the time in Retry-After.")
}
