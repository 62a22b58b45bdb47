// Package periodic runs a background round now and then: the sweepers, renewers and checkers
// every worker runs beside its job queue.
package periodic

import (
	"context"
	"time"
)

// Run calls round at once, then every every (fallback when every is not positive), until ctx
// ends. A round that fails is the caller's to report: the next one comes anyway.
func Run(ctx context.Context, every, fallback time.Duration, round func(context.Context)) {
	if every <= 0 {
		every = fallback
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
