package partition_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var messages = partition.Table{Name: "messages", Column: "created_at"}

// unconverted is a database migrated to the last plain schema, before any conversion.
func unconverted(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.NewEmptyPool(t)
	if _, err := postgres.MigrateTo(context.Background(), pool, 37); err != nil {
		t.Fatal(err)
	}
	return pool
}

// fill inserts n messages spread over the days before now.
func fill(t *testing.T, pool *pgxpool.Pool, n int, days int) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, body, created_at, updated_at)
		SELECT 'msg_old' || i, 'p' || (i % 50), false, 'outbound', 'sms', 'text', 'delivered', '+1555' || i, 'hello',
		       now() - (i % $2) * interval '1 day' - interval '1 hour', now()
		FROM generate_series(1, $1) AS i`, n, days)
	if err != nil {
		t.Fatal(err)
	}
}

// insertOne inserts a message at at, with an id made from it.
func insertOne(ctx context.Context, pool *pgxpool.Pool, at time.Time) (string, error) {
	id, err := randid.Timed("msg_", at)
	if err != nil {
		return "", err
	}
	_, err = pool.Exec(ctx, `
		INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, body, created_at, updated_at)
		VALUES ($1, 'writer', false, 'outbound', 'sms', 'text', 'queued', '+15550000', 'hi', $2, $2)`, id, at)
	return id, err
}

func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// writer inserts and updates messages until stopped, and counts what it wrote and what failed.
type writer struct {
	wg      sync.WaitGroup
	stop    chan struct{}
	written atomic.Int64
	failed  atomic.Int64
	slowest atomic.Int64 // ns
	lastErr atomic.Value
}

func startWriter(pool *pgxpool.Pool) *writer {
	w := &writer{stop: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		ctx := context.Background()
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			began := time.Now()
			id, err := insertOne(ctx, pool, time.Now().UTC())
			if err == nil {
				_, err = pool.Exec(ctx, `UPDATE messages SET status = 'sent' WHERE id = $1
					AND created_at >= switchboard_id_from($1) AND created_at < switchboard_id_to($1)`, id)
			}
			if took := time.Since(began).Nanoseconds(); took > w.slowest.Load() {
				w.slowest.Store(took)
			}
			if err != nil {
				w.failed.Add(1)
				w.lastErr.Store(err)
				continue
			}
			w.written.Add(1)
		}
	}()
	return w
}

func (w *writer) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	w.wg.Wait()
	if n := w.failed.Load(); n > 0 {
		t.Fatalf("%d writes failed during the change; last: %v", n, w.lastErr.Load())
	}
	t.Logf("%d writes during the change, the slowest %s", w.written.Load(), time.Duration(w.slowest.Load()))
}

func TestConvertWhileWriting(t *testing.T) {
	ctx := context.Background()
	pool := unconverted(t)
	fill(t, pool, 100_000, 40)
	w := startWriter(pool)
	time.Sleep(100 * time.Millisecond)

	c := partition.Converter{Pool: pool, Log: testr.New(t)}
	if err := c.Convert(ctx, messages); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	w.finish(t)

	if done, err := partition.IsPartitioned(ctx, pool, messages); err != nil || !done {
		t.Fatalf("partitioned: %v, %v", done, err)
	}
	if got, want := count(t, pool, `SELECT count(*) FROM messages`), 100_000+int(w.written.Load()); got != want {
		t.Fatalf("%d messages after the conversion, want %d", got, want)
	}
	parts, err := partition.List(ctx, pool, messages)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || parts[0].Name != "messages_legacy" || !parts[0].From.IsZero() {
		t.Fatalf("partitions: %+v", parts)
	}
	if parts[1].From != parts[0].To || parts[1].From.Hour() != 0 {
		t.Fatalf("the first day's partition does not start at the cutover's midnight: %+v", parts)
	}
	// Every index of the plain table is one of the parent's, adopted by the old rows' partition.
	want := []string{"messages_conversation", "messages_listing", "messages_pkey", "messages_provider_id", "messages_sandbox_in_flight", "messages_sender"}
	for _, name := range want {
		if n := count(t, pool, `SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass($1)`, name); n != len(parts) {
			t.Errorf("index %s has %d partitions, want %d", name, n, len(parts))
		}
	}
	// A lookup by a timed id reads one partition, in custom plans (pruned when planned) and in
	// generic ones (pruned when the executor starts).
	id, err := insertOne(ctx, pool, time.Now().UTC().Add(partition.Day))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM messages WHERE id = $1
			AND created_at >= switchboard_id_from($1) AND created_at < switchboard_id_to($1)`, id)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		// A scan of a partition (an index scan names its index "using", a bitmap heap scan
		// has a bitmap index scan "on" the index under it, which is not another partition).
		read := 0
		for _, l := range lines {
			if strings.Contains(l, " on messages_") && !strings.Contains(l, "Bitmap Index Scan") && !strings.Contains(l, "never executed") {
				read++
			}
		}
		if read != 1 {
			t.Fatalf("%s: a lookup by id reads %d partitions:\n%s", mode, read, strings.Join(lines, "\n"))
		}
	}
	// Converting again changes nothing.
	if err := c.Convert(ctx, messages); err != nil {
		t.Fatal(err)
	}
}

// Conversions cut short at every point (their context cancelled, as a kill would stop them) are
// resumed by the next run, and the last one ends with every row in place.
func TestConvertResumesWhereItStopped(t *testing.T) {
	ctx := context.Background()
	pool := unconverted(t)
	fill(t, pool, 50_000, 10)
	c := partition.Converter{Pool: pool, Log: testr.New(t)}
	for wait := time.Millisecond; ; wait = wait * 3 / 2 {
		runCtx, cancel := context.WithTimeout(ctx, wait)
		err := c.Convert(runCtx, messages)
		cancel()
		if err == nil {
			t.Logf("converted once a run had %s", wait)
			break
		}
		if wait > time.Minute {
			t.Fatal(err)
		}
	}
	if got := count(t, pool, `SELECT count(*) FROM messages`); got != 50_000 {
		t.Fatalf("%d messages, want 50000", got)
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_index WHERE NOT indisvalid`); n != 0 {
		t.Fatalf("%d invalid indexes left", n)
	}
}

// A conversion resumed after its cutover passed cuts at the next midnight instead.
func TestConvertMovesAPassedCutover(t *testing.T) {
	ctx := context.Background()
	pool := unconverted(t)
	fill(t, pool, 1_000, 3)
	// An earlier run recorded a cutover two days ago and stopped before the swap.
	if _, err := pool.Exec(ctx, `INSERT INTO switchboard_partitioned_tables (table_name, cutover) VALUES ('messages', now() - interval '2 days')
		ON CONFLICT (table_name) DO UPDATE SET cutover = excluded.cutover`); err != nil {
		t.Fatal(err)
	}
	c := partition.Converter{Pool: pool, Log: testr.New(t)}
	if err := c.Convert(ctx, messages); err != nil {
		t.Fatal(err)
	}
	parts, err := partition.List(ctx, pool, messages)
	if err != nil {
		t.Fatal(err)
	}
	if !parts[0].To.After(time.Now()) {
		t.Fatalf("the old rows' partition ends at %s, in the past", parts[0].To)
	}
	if got := count(t, pool, `SELECT count(*) FROM messages`); got != 1_000 {
		t.Fatalf("%d messages, want 1000", got)
	}
}

func converted(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.NewPool(t)
	done, err := partition.IsPartitioned(context.Background(), pool, messages)
	if err != nil || !done {
		t.Fatalf("the migrated schema is not partitioned: %v", err)
	}
	return pool
}

// convertedSince is an empty database converted as if days ago, so that the days since have
// partitions of their own.
func convertedSince(t *testing.T, days int) *pgxpool.Pool {
	t.Helper()
	pool := unconverted(t)
	c := partition.Converter{Pool: pool, Log: testr.New(t), Now: func() time.Time {
		return time.Now().Add(-time.Duration(days) * partition.Day)
	}}
	if err := c.Convert(context.Background(), messages); err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestEnsureMakesPartitionsOnce(t *testing.T) {
	ctx := context.Background()
	pool := converted(t)
	from := time.Now().UTC().Truncate(partition.Day).Add(10 * partition.Day)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := partition.Ensure(ctx, pool, messages, from, from.Add(3*partition.Day))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		day := from.Add(time.Duration(i) * partition.Day)
		name := "messages_p" + day.Format("20060102")
		if n := count(t, pool, `SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass($1)`, name); n != 1 {
			t.Fatalf("%s: %d", name, n)
		}
	}
	// A row in a day that has no partition is refused; OnDemand makes it, and the write goes in.
	far := from.Add(40 * partition.Day).Add(5 * time.Hour)
	_, err := insertOne(ctx, pool, far)
	if !partition.IsMissing(err) {
		t.Fatalf("a row without a partition: %v", err)
	}
	if !partition.OnDemand(ctx, pool, err, far) {
		t.Fatal("OnDemand did not make the partition")
	}
	if _, err := insertOne(ctx, pool, far); err != nil {
		t.Fatal(err)
	}
	// Retry finds the day in Postgres's refusal itself.
	later := far.Add(10 * partition.Day)
	if err := partition.Retry(ctx, pool, func() error { _, err := insertOne(ctx, pool, later); return err }); err != nil {
		t.Fatalf("a write retried after its partition was made: %v", err)
	}
	if partition.OnDemand(ctx, pool, errors.New("other"), far) {
		t.Fatal("OnDemand took another error for a missing partition")
	}
}

func TestDropBeforeWhileWriting(t *testing.T) {
	ctx := context.Background()
	pool := convertedSince(t, 60)
	today := time.Now().UTC().Truncate(partition.Day)
	old := today.Add(-40 * partition.Day)
	if _, err := partition.Ensure(ctx, pool, messages, old, today.Add(partition.Day)); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		day := old.Add(time.Duration(i) * partition.Day)
		if _, err := pool.Exec(ctx, `
			INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, created_at, updated_at)
			SELECT 'msg_' || $2::text || '_' || i, 'p', false, 'outbound', 'sms', 'text', 'sent', '+1555', $1::timestamptz + i * interval '1 second', now()
			FROM generate_series(1, 500) AS i`, day, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	w := startWriter(pool)
	horizon := today.Add(-30 * partition.Day)
	dropped, err := partition.DropBefore(ctx, pool, messages, horizon)
	w.finish(t)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dropped %v", dropped)
	parts, err := partition.List(ctx, pool, messages)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) == 0 || parts[0].From != horizon {
		t.Fatalf("partitions left: %+v; want the first to begin at %s", parts, horizon)
	}
	if n := count(t, pool, `SELECT count(*) FROM messages WHERE created_at < $1`, horizon); n != 0 {
		t.Fatalf("%d messages older than the horizon left", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM messages WHERE project = 'p'`); n != 30*500 {
		t.Fatalf("%d messages newer than the horizon, want %d", n, 30*500)
	}
}

// A drop killed while its detach waited (the partition left "detach pending") is finished by the
// next run.
func TestDropFinishesAHalfDoneDetach(t *testing.T) {
	ctx := context.Background()
	pool := convertedSince(t, 90)
	day := time.Now().UTC().Truncate(partition.Day).Add(-60 * partition.Day)
	if _, err := partition.Ensure(ctx, pool, messages, day, day.Add(partition.Day)); err != nil {
		t.Fatal(err)
	}
	name := "messages_p" + day.Format("20060102")

	// An open transaction that has seen the partition holds the detach's second phase.
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM messages`); err != nil {
		t.Fatal(err)
	}
	detacher, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := detacher.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = detacher.Exec(ctx, `ALTER TABLE messages DETACH PARTITION `+name+` CONCURRENTLY`)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for count(t, pool, `SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhdetachpending`, name) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the detach never began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// kill -9 of the process would end its session the same way.
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	detacher.Release()
	_ = reader.Rollback(ctx)

	dropped, err := partition.DropBefore(ctx, pool, messages, day.Add(partition.Day))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range dropped {
		found = found || d == name
	}
	if !found {
		t.Fatalf("dropped %v, not %s", dropped, name)
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_class WHERE relname = $1`, name); n != 0 {
		t.Fatalf("%s is still there", name)
	}
}
