package pgnotify

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestListen: payloads arrive in order once their transaction commits; when the listening
// backend is killed, Listen connects again and says so (Listening with again), and hears what is
// sent after; it returns nil when its context ends.
func TestListen(t *testing.T) {
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	channel := fmt.Sprintf("pgnotify_test_%d", time.Now().UnixNano())
	var mu sync.Mutex
	var got []string
	var listened []bool
	h := Handler{
		Listening: func(again bool) { mu.Lock(); listened = append(listened, again); mu.Unlock() },
		Notify:    func(p string) { mu.Lock(); got = append(got, p); mu.Unlock() },
	}
	seen := func(want ...string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(got, want)
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}
	listenCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Listen(listenCtx, pool, channel, h, logr.Discard()) }()
	wait("it listens", func() bool { mu.Lock(); defer mu.Unlock(); return len(listened) == 1 })

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "b"} {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, p); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if !seen() {
		t.Fatalf("notified before the commit: %v", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wait("both payloads arrive, in order", func() bool { return seen("a", "b") })

	var pid int32
	if err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
		"LISTEN "+pgx.Identifier{channel}.Sanitize()).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	wait("it listens again", func() bool { mu.Lock(); defer mu.Unlock(); return slices.Equal(listened, []bool{false, true}) })
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, 'c')`, channel); err != nil {
		t.Fatal(err)
	}
	wait("the payload sent after reconnecting arrives", func() bool { return seen("a", "b", "c") })

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Listen returned %v when its context ended, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Listen did not return when its context ended")
	}
	if err := Listen(ctx, pool, "", h, logr.Discard()); err == nil {
		t.Error("Listen without a channel did not fail")
	}
}
