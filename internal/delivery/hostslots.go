package delivery

import (
	"context"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"
)

// DefaultPerHostConcurrency bounds the attempts one worker process has in flight to one
// receiver host: a quarter of its delivery slots (worker.Options.DeliveryConcurrency, 200). A
// receiver that takes 10 s to answer then holds 50 slots, and every other receiver keeps the
// other 150; a fast receiver still gets thousands of deliveries a second (50 in flight at 10 ms
// each is 5,000/s).
const DefaultPerHostConcurrency = 50

// hostWait is how long a delivery waits for a slot of its host before it gives its queue slot
// back: long enough that a fast receiver's deliveries never give theirs up (its slots turn over
// in milliseconds), short enough that a slow receiver's hold few queue slots.
const hostWait = 200 * time.Millisecond

// busyHostSnooze is how long a delivery whose host stayed at its bound waits before it is
// tried again (plus up to as much jitter, so waiting deliveries do not come back together). A
// snooze is not an attempt: the receiver's retry schedule is unchanged.
const busyHostSnooze = time.Second

// hostSlots bounds the attempts in flight to each host.
type hostSlots struct {
	limit int
	mu    sync.Mutex
	hosts map[string]chan struct{}
}

func newHostSlots(limit int) *hostSlots {
	if limit <= 0 {
		limit = DefaultPerHostConcurrency
	}
	return &hostSlots{limit: limit, hosts: map[string]chan struct{}{}}
}

func (h *hostSlots) of(host string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	slots, ok := h.hosts[host]
	if !ok {
		slots = make(chan struct{}, h.limit)
		h.hosts[host] = slots
	}
	return slots
}

// acquire takes a slot of host, waiting up to wait for one; false when none came free.
func (h *hostSlots) acquire(ctx context.Context, host string, wait time.Duration) bool {
	slots := h.of(host)
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (h *hostSlots) release(host string) { <-h.of(host) }

// hostOf is the host (with port) a URL's requests go to; the URL itself when it has none.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}

func busyHostWait() time.Duration {
	return busyHostSnooze + rand.N(busyHostSnooze)
}
