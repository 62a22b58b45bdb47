package periodic_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/periodic"
)

// TestRun: the first round runs at once, more follow, and Run returns when ctx ends.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var rounds atomic.Int32
	done := make(chan struct{})
	go func() {
		periodic.Run(ctx, 0, 5*time.Millisecond, func(context.Context) { rounds.Add(1) })
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for rounds.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if n := rounds.Load(); n < 3 {
		t.Errorf("%d rounds, want at least 3", n)
	}
}
