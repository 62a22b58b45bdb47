package vectorindex

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.Main(m)
}

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listeners returns the pids of the backends of this database whose last statement LISTENed on
// channel.
func listeners(t *testing.T, pool *pgxpool.Pool, channel string) []int32 {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
		"LISTEN "+pgx.Identifier{channel}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

func onlyListener(t *testing.T, pool *pgxpool.Pool, channel string) int32 {
	t.Helper()
	var pids []int32
	waitFor(t, "one backend listens on "+channel, func() bool {
		pids = listeners(t, pool, channel)
		return len(pids) == 1
	})
	return pids[0]
}

func graphsHeld(x *Index) int {
	_, n := x.Stats()
	return n
}

func TestListenInvalidatesOnNotifyAndEverythingAfterReconnecting(t *testing.T) {
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	s := newStore()
	for _, k := range []string{"early", "p/a/m1", "p/a/m2"} {
		s.set(k, smallItems(1, k, 10, 4))
	}
	x := New(s.load, Options{})
	q := func(k string) []float32 { return s.items[k][0].Vector }

	search(t, x, "early", q("early"), 1)
	channel := fmt.Sprintf("vectorindex_test_%d", time.Now().UnixNano())
	listenCtx, stop := context.WithCancel(ctx)
	var logged atomic.Int32
	log := funcr.New(func(prefix, args string) { logged.Add(1) }, funcr.Options{})
	done := make(chan error, 1)
	go func() { done <- x.Listen(listenCtx, pool, channel, log) }()
	defer func() {
		stop()
		<-done
	}()

	// Notifications sent before LISTEN are lost, so the first LISTEN drops what was held.
	waitFor(t, "the first LISTEN drops the graph loaded before", func() bool { return graphsHeld(x) == 0 })
	first := onlyListener(t, pool, channel)

	search(t, x, "p/a/m1", q("p/a/m1"), 1)
	search(t, x, "p/a/m2", q("p/a/m2"), 1)
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, "p/a/m1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the notified key is dropped", func() bool { return graphsHeld(x) == 1 })
	search(t, x, "p/a/m1", q("p/a/m1"), 1)
	search(t, x, "p/a/m2", q("p/a/m2"), 1)
	if s.loadsOf("p/a/m1") != 2 || s.loadsOf("p/a/m2") != 1 {
		t.Fatalf("loads m1 %d, m2 %d: want m1 reloaded and m2 held", s.loadsOf("p/a/m1"), s.loadsOf("p/a/m2"))
	}

	// A sender notifies in the transaction that changes the chunks: nothing until it commits.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, "p/a/m2"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := graphsHeld(x); n != 2 {
		t.Fatalf("%d graphs held before the notifying transaction committed, want 2", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the key notified on commit is dropped", func() bool { return graphsHeld(x) == 1 })

	// Kill the listening backend: Listen connects again and, having maybe missed notifications,
	// drops everything.
	search(t, x, "p/a/m2", q("p/a/m2"), 1)
	if n := graphsHeld(x); n != 2 {
		t.Fatalf("%d graphs held, want 2", n)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, first); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new connection listens", func() bool {
		pids := listeners(t, pool, channel)
		return len(pids) == 1 && pids[0] != first
	})
	waitFor(t, "everything is dropped after reconnecting", func() bool { return graphsHeld(x) == 0 })
	if logged.Load() == 0 {
		t.Error("the dropped connection was not logged")
	}

	// The new connection hears notifications too.
	search(t, x, "p/a/m1", q("p/a/m1"), 1)
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, "p/a/m1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the key notified after reconnecting is dropped", func() bool { return graphsHeld(x) == 0 })

	stop()
	select {
	case err := <-done:
		done <- err // for the deferred receive
		if err != nil {
			t.Errorf("Listen returned %v when its context ended, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Listen did not return when its context ended")
	}
	waitFor(t, "the listening connection is closed", func() bool { return len(listeners(t, pool, channel)) == 0 })
}

func TestListenKeepsRetryingWhilePostgresIsDown(t *testing.T) {
	// Nothing listens on port 1: every connection attempt is refused.
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	x := New(newStore().load, Options{})
	var errs atomic.Int32
	log := funcr.New(func(prefix, args string) { errs.Add(1) }, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Listen(ctx, pool, "ch", log) }()
	waitFor(t, "Listen has tried three times", func() bool { return errs.Load() >= 3 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Listen returned %v when its context ended, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Listen did not return when its context ended")
	}
}

func TestListenNeedsAChannel(t *testing.T) {
	x := New(newStore().load, Options{})
	if err := x.Listen(context.Background(), nil, "", logr.Discard()); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Listen without a channel = %v, want an error", err)
	}
}
