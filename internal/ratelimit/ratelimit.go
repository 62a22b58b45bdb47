// Package ratelimit counts requests per project in an exact sliding window of 60 seconds: a
// request is allowed while fewer than the limit were allowed in the 60 seconds before it, and
// capacity returns as older requests age out, with no wall-clock reset. Two backends: in memory
// (one replica) and Redis (replicas share the window).
package ratelimit

import (
	"context"
	"time"
)

// Window is the length of the sliding window.
const Window = 60 * time.Second

// Decision is the outcome of one request.
type Decision struct {
	Allowed bool
	// Limit is the requests allowed per window.
	Limit int
	// Remaining is how many more requests fit now.
	Remaining int
	// Reset is when the oldest request in the window ages out, freeing one slot.
	Reset time.Time
}

// RetryAfter is how long a refused caller should wait: until Reset, rounded up to whole seconds,
// at least one.
func (d Decision) RetryAfter(now time.Time) time.Duration {
	wait := (d.Reset.Sub(now) + time.Second - 1).Truncate(time.Second)
	return max(wait, time.Second)
}

// Limiter decides whether a project's request is allowed, counting it when it is.
type Limiter interface {
	Allow(ctx context.Context, project string, limit int, now time.Time) (Decision, error)
}
