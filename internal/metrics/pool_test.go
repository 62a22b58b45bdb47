package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// TestPoolReportsItsConnections: while it runs, the pool's connections are reported (one
// acquired of its most, an acquisition counted); when it stops, nothing.
func TestPoolReportsItsConnections(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	reg := prometheus.NewRegistry()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Pool{Pool: pool, Registry: reg}).Start(ctx) }()

	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]float64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = gatherFrom(t, reg)
		if got["pgxpool_acquired_conns{}"] == 1 || time.Now().After(deadline) {
			break
		}
	}
	conn.Release()
	if got["pgxpool_acquired_conns{}"] != 1 || got["pgxpool_max_conns{}"] != float64(pool.Config().MaxConns) || got["pgxpool_acquire_count{}"] < 1 {
		t.Errorf("pool figures %v: want one connection acquired of %d, an acquisition counted", got, pool.Config().MaxConns)
	}

	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := gatherFrom(t, reg); len(got) != 0 {
		t.Errorf("after the process stopped: %v, want nothing", got)
	}
}
