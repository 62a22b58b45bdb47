package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Memory keeps each project's window in this process: exact for one replica.
type Memory struct {
	mu      sync.Mutex
	windows map[string]*window
	sweeps  int
}

// window holds the times of the allowed requests of the last 60 s, oldest first, as a ring.
type window struct {
	times []time.Time
	head  int // index of the oldest
	n     int
}

// NewMemory returns an empty in-memory limiter.
func NewMemory() *Memory {
	return &Memory{windows: map[string]*window{}}
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, project string, limit int, now time.Time) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.windows[project]
	if w == nil {
		w = &window{}
		m.windows[project] = w
	}
	w.expire(now.Add(-Window))
	d := Decision{Limit: limit}
	if w.n < limit {
		w.push(now)
		d.Allowed = true
	}
	d.Remaining = max(limit-w.n, 0)
	if w.n > 0 {
		d.Reset = w.times[w.head].Add(Window)
	} else {
		d.Reset = now.Add(Window)
	}
	m.sweep(now)
	return d, nil
}

// sweep drops idle projects' windows now and then, so memory follows the active projects.
func (m *Memory) sweep(now time.Time) {
	m.sweeps++
	if m.sweeps < 10000 {
		return
	}
	m.sweeps = 0
	for p, w := range m.windows {
		w.expire(now.Add(-Window))
		if w.n == 0 {
			delete(m.windows, p)
		}
	}
}

func (w *window) expire(before time.Time) {
	for w.n > 0 && !w.times[w.head].After(before) {
		w.head = (w.head + 1) % len(w.times)
		w.n--
	}
}

func (w *window) push(t time.Time) {
	if w.n == len(w.times) {
		grown := make([]time.Time, max(2*len(w.times), 16))
		for i := 0; i < w.n; i++ {
			grown[i] = w.times[(w.head+i)%len(w.times)]
		}
		w.times, w.head = grown, 0
	}
	w.times[(w.head+w.n)%len(w.times)] = t
	w.n++
}
