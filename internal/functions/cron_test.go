package functions_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func cronTrigger(t *testing.T, pool *pgxpool.Pool, id, expr string, due time.Time) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO function_triggers (id, project, function_uid, function_name, event_type, cron,
		active, created_at, updated_at, next_run_at) VALUES ($1, 'acme', 'uid-'||$1, 'fn', 'cron', $2, true, now(), now(), $3)`, id, expr, due)
	if err != nil {
		t.Fatal(err)
	}
}

// TestCronFiresOnceAcrossWorkers: two workers ticking at once fire a due trigger once, and move
// its next run to the expression's next time.
func TestCronFiresOnceAcrossWorkers(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	cronTrigger(t, pool, "fnt_a", "*/5 * * * *", time.Now().Add(-time.Second))
	a, b := functions.NewScheduler(pool, logr.Discard()), functions.NewScheduler(pool, logr.Discard())
	var wg sync.WaitGroup
	fired := make([]int, 2)
	for i, s := range []*functions.Scheduler{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				n, err := s.Tick(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				fired[i] += n
			}
		}()
	}
	wg.Wait()
	if fired[0]+fired[1] != 1 {
		t.Errorf("the trigger fired %d + %d times, want once", fired[0], fired[1])
	}
	var runs int
	var next time.Time
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM function_runs WHERE trigger_id = 'fnt_a'`).Scan(&runs); err != nil || runs != 1 {
		t.Errorf("runs = %d %v", runs, err)
	}
	if err := pool.QueryRow(ctx, `SELECT next_run_at FROM function_triggers WHERE id = 'fnt_a'`).Scan(&next); err != nil ||
		!next.After(time.Now()) || next.Minute()%5 != 0 || next.Second() != 0 {
		t.Errorf("next run = %v %v", next, err)
	}
}

// TestCronMissedTicksFireOnce: a trigger whose ticks passed while no worker ran fires once, not
// once per missed tick, and its event says when it was due.
func TestCronMissedTicksFireOnce(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	due := time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Minute)
	cronTrigger(t, pool, "fnt_b", "* * * * *", due)
	s := functions.NewScheduler(pool, logr.Discard())
	for range 3 {
		if _, err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var runs int
	var scheduled time.Time
	if err := pool.QueryRow(ctx, `SELECT count(*), min((event->>'timestamp')::timestamptz) FROM function_runs WHERE trigger_id = 'fnt_b'`).Scan(&runs, &scheduled); err != nil || runs != 1 || !scheduled.Equal(due) {
		t.Errorf("runs = %d at %v (due %v) %v", runs, scheduled, due, err)
	}
}

// TestNextRun: five fields in UTC; what does not parse is refused.
func TestNextRun(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 7, 30, 0, time.UTC)
	for expr, want := range map[string]time.Time{
		"*/5 * * * *": time.Date(2026, 11, 27, 10, 10, 0, 0, time.UTC),
		"0 9 * * 1":   time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
		"@daily":      time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := functions.NextRun(expr, at); err != nil || !got.Equal(want) {
			t.Errorf("NextRun(%q) = %v %v, want %v", expr, got, err, want)
		}
	}
	for _, expr := range []string{"* * * *", "61 * * * *", "@every 1m", "every minute"} {
		if _, err := functions.NextRun(expr, at); err == nil {
			t.Errorf("NextRun(%q) parsed", expr)
		}
	}
}
