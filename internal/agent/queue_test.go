package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

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
