package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// unreachable is an API server that does not answer: every read fails.
type unreachable struct{ client.Reader }

func (unreachable) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the API server does not answer")
}

// TestARunThatFailsIsTriedAgainLater: a run that fails on Switchboard's side puts its execution
// back, due after the first backoff (2 s, jittered down to 1 s at the least), its attempt
// counted; it is not claimed again before then.
func TestARunThatFailsIsTriedAgainLater(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO agent_executions (id, project, test_mode, agent, sender, conversation_id,
		inbound_message_id, status, created_at) VALUES ('aex_1', 'acme', true, 'support', 'main', 'conv_1', 'msg_1', 'pending', now())`); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	e := &Executor{Runtime: &Runtime{Pool: pool, Reader: unreachable{}}}
	go func() { done <- e.Start(runCtx) }()
	defer func() { stop(); <-done }()

	var status string
	var attempts int
	var dueIn time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for {
		var seconds float64
		if err := pool.QueryRow(ctx, `SELECT status, attempts, coalesce(extract(epoch FROM lease_until - now()), 0)::float8
			FROM agent_executions WHERE id = 'aex_1'`).Scan(&status, &attempts, &seconds); err != nil {
			t.Fatal(err)
		}
		dueIn = time.Duration(seconds * float64(time.Second))
		if status == "pending" && attempts == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s after %d attempts, want pending again after 1", status, attempts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if dueIn < 800*time.Millisecond || dueIn > 2*time.Second {
		t.Errorf("the failed run's execution is due again in %v, want 1-2 s", dueIn)
	}
	time.Sleep(dueIn / 2)
	if err := pool.QueryRow(ctx, `SELECT attempts FROM agent_executions WHERE id = 'aex_1'`).Scan(&attempts); err != nil || attempts != 1 {
		t.Errorf("claimed again before it was due: %d attempts (%v)", attempts, err)
	}
}

// waiting is an API server that answers nothing until the run is given up: a model that
// takes its time.
type waiting struct{ client.Reader }

func (waiting) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// executionState reads an execution's status and attempts.
func executionState(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string) (status string, attempts int, dueIn time.Duration) {
	t.Helper()
	var seconds float64
	if err := pool.QueryRow(context.Background(), `SELECT status, attempts, coalesce(extract(epoch FROM lease_until - now()), 0)::float8
		FROM agent_executions WHERE id = $1`, id).Scan(&status, &attempts, &seconds); err != nil {
		t.Fatal(err)
	}
	return status, attempts, time.Duration(seconds * float64(time.Second))
}

// TestAnEnqueuedExecutionWakesTheExecutor: with its poll an hour away, an executor listening
// claims an execution as soon as the transaction of the Trigger's statement commits it; and a
// shutdown that cuts its run off puts it back, due at once, its attempt given back.
func TestAnEnqueuedExecutionWakesTheExecutor(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	e := &Executor{Runtime: &Runtime{Pool: pool, Reader: waiting{}}, poll: time.Hour, shutdownGrace: 100 * time.Millisecond}
	go func() { done <- e.Start(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}
	wait("the executor listens", func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = $1`,
			"LISTEN "+pgx.Identifier{NotifyChannel}.Sanitize()).Scan(&n)
		return n == 1
	})

	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := db.Planned(tx).InsertAgentExecution(ctx, db.InsertAgentExecutionParams{ID: "aex_1", Project: "acme", TestMode: true,
			Agent: "support", Sender: "main", ConversationID: "conv_1", InboundMessageID: "msg_1", CreatedAt: time.Now().UTC(),
			Channel: NotifyChannel})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	wait("the notification wakes the executor, which claims the execution", func() bool {
		status, attempts, _ := executionState(t, pool, "aex_1")
		return status == "running" && attempts == 1
	})

	stop()
	select {
	case err := <-done:
		done <- err // for the deferred receive
		if err != nil {
			t.Fatalf("Start = %v when its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the executor did not stop after its grace")
	}
	if status, attempts, dueIn := executionState(t, pool, "aex_1"); status != "pending" || attempts != 0 || dueIn > 0 {
		t.Errorf("the cut-off run's execution is %s, %d attempts, due in %v; want pending, its attempt given back, due now", status, attempts, dueIn)
	}
}
