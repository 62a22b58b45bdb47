package partition_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/partition"
)

// helperEnv names the database a re-executed test binary converts or prunes, and what it does.
const helperEnv = "PARTITION_KILL_HELPER"

// TestKillHelper is not a test: it is the process the kill tests start and kill -9.
func TestKillHelper(t *testing.T) {
	url, what := os.Getenv(helperEnv), os.Getenv(helperEnv+"_DO")
	if url == "" {
		t.Skip("run by the kill tests")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	switch what {
	case "convert":
		err = (&partition.Converter{Pool: pool, Log: logr.Discard()}).Convert(ctx, messages)
	case "drop":
		// Until done: a killed run's session may hold the table's lock until Postgres notices its
		// client is gone, and DropBefore leaves the work to whoever holds it.
		horizon := time.Now().UTC().Truncate(partition.Day).Add(-5 * partition.Day)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if _, err = partition.DropBefore(ctx, pool, messages, horizon); err != nil {
				break
			}
			var parts []partition.Partition
			if parts, err = partition.List(ctx, pool, messages); err != nil {
				break
			}
			if len(parts) == 0 || parts[0].To.After(horizon) || time.Now().After(deadline) {
				break
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runKilled runs the helper until it ends on its own, killing it with SIGKILL after a random
// while each time before that, and returns how many times it was killed.
func runKilled(t *testing.T, pool *pgxpool.Pool, what string) int {
	t.Helper()
	kills := 0
	for attempt := 0; ; attempt++ {
		if attempt > 200 {
			t.Fatal("the helper never finished")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+pool.Config().ConnString(), helperEnv+"_DO="+what)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Later attempts get longer, so that the run ends.
		wait := time.Duration(rand.IntN(40+attempt*40)) * time.Millisecond
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the helper failed: %v\n%s", err, out.String())
			}
			return kills
		case <-time.After(wait):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			err := <-done
			var exit *exec.ExitError
			if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
				kills++
			} else if err != nil {
				t.Fatalf("the helper failed: %v\n%s", err, out.String())
			} else {
				return kills
			}
		}
	}
}

// kill -9 of the process converting a table, again and again, while a writer inserts and updates
// messages: no write fails, the next run resumes, and the last one leaves every row and a valid
// schema.
func TestConvertSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	pool := unconverted(t)
	fill(t, pool, 200_000, 30)
	w := startWriter(pool)
	kills := runKilled(t, pool, "convert")
	w.finish(t)
	t.Logf("converted after %d kills", kills)
	if kills == 0 {
		t.Log("no kill landed before the conversion ended")
	}
	if done, err := partition.IsPartitioned(context.Background(), pool, messages); err != nil || !done {
		t.Fatalf("not partitioned: %v", err)
	}
	if got, want := count(t, pool, `SELECT count(*) FROM messages`), 200_000+int(w.written.Load()); got != want {
		t.Fatalf("%d messages, want %d", got, want)
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_index WHERE NOT indisvalid`); n != 0 {
		t.Fatalf("%d invalid indexes", n)
	}
}

// kill -9 of the process dropping partitions: the next run finishes a detach left pending and
// drops what was detached; the days after the horizon stay whole.
func TestDropSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	ctx := context.Background()
	pool := convertedSince(t, 40)
	today := time.Now().UTC().Truncate(partition.Day)
	if _, err := partition.Ensure(ctx, pool, messages, today.Add(-40*partition.Day), today.Add(partition.Day)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, created_at, updated_at)
		SELECT 'msg_' || d || '_' || i, 'p', false, 'outbound', 'sms', 'text', 'sent', '+1555',
		       $1::timestamptz - d * interval '1 day' + interval '1 hour', now()
		FROM generate_series(0, 39) AS d, generate_series(1, 200) AS i`, today); err != nil {
		t.Fatal(err)
	}
	w := startWriter(pool)
	kills := runKilled(t, pool, "drop")
	w.finish(t)
	t.Logf("dropped after %d kills", kills)
	horizon := today.Add(-5 * partition.Day)
	parts, err := partition.List(ctx, pool, messages)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !p.To.After(horizon) || p.Detaching {
			t.Errorf("partition %+v left", p)
		}
	}
	// Today and the five days before it.
	if n := count(t, pool, `SELECT count(*) FROM messages WHERE project = 'p'`); n != 6*200 {
		t.Errorf("%d messages of the kept days, want %d", n, 6*200)
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_class WHERE relname ~ '^messages_(p[0-9]{8}|legacy)$' AND NOT relispartition`); n != 0 {
		t.Errorf("%d detached partitions left undropped", n)
	}
}
