package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// TestAgentExecutionQueue: executions are a queue of their own. A new one is answered at once
// (its notification wakes the worker) on its first attempt; one whose run died (its lease ended)
// is claimed again and still answered once; one whose runs kept failing ends as error
// internal_error without a reply; a call turn's execution is left to its call's process; the
// River job an earlier version enqueued for an execution completes without running it twice.
func TestAgentExecutionQueue(t *testing.T) {
	ctx := context.Background()
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	in.createObjects(t, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "support"}, Spec: v1alpha1.AgentSpec{
		DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "sandbox", SystemPrompt: "Help.",
		Senders: []string{"main"}}})
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		_ = in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "support"}, &a)
		return len(a.Status.Senders) == 1
	})
	replies := func() int {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'outbound'`, acme)
	}

	// Answered on its first attempt, well within the queue's poll.
	began := time.Now()
	receive(t, in, key, `{"from":"+15005550101","text":"hello"}`)
	waitFor(t, func() bool { return replies() == 1 })
	var id string
	var attempts int
	if err := in.poolRow(`SELECT id, attempts FROM agent_executions WHERE status = 'success'`).Scan(&id, &attempts); err != nil || attempts != 1 {
		t.Fatalf("execution %s after its answer: %d attempts (%v), want 1", id, attempts, err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the first answer took %v", took)
	}

	// Its run died after it replied, before it finished: claimed again once the lease ends,
	// answered again with the same reply (keyed by the execution), finished.
	in.exec(`UPDATE agent_executions SET status = 'running', finished_at = NULL, lease_until = now() - interval '1 second'
		WHERE id = $1`, id)
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM agent_executions WHERE id = $1 AND status = 'success' AND attempts = 2`, id) == 1
	})
	if n := replies(); n != 1 {
		t.Errorf("%d replies after the execution ran again, want 1", n)
	}

	// Out of attempts: ended as Switchboard's error, no run, no reply.
	in.exec(`UPDATE agent_executions SET status = 'running', finished_at = NULL, lease_until = now() - interval '1 second',
		attempts = $2 WHERE id = $1`, id, agent.MaxAttempts)
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM agent_executions WHERE id = $1 AND status = 'error' AND error_code = 'internal_error'
			AND finished_at IS NOT NULL`, id) == 1
	})
	if n := replies(); n != 1 {
		t.Errorf("%d replies after an execution ran out of attempts, want 1", n)
	}

	// A call turn's execution whose process died is the call sweeper's, never claimed. And the
	// job an earlier version enqueued completes without running its (finished) execution again.
	in.exec(`INSERT INTO agent_executions (id, project, test_mode, agent, sender, conversation_id, inbound_message_id, call_id,
		status, created_at, started_at, lease_until) VALUES ('aex_call', $1, true, 'support', 'main', 'call_1', 'turn_1', 'call_1',
		'running', now(), now(), now() - interval '1 second')`, acme)
	queue, err := river.NewClient(riverpgxv5.New(in.db), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	in.exec(`UPDATE agent_executions SET status = 'success', error_code = NULL WHERE id = $1`, id)
	job, err := queue.Insert(ctx, agent.ExecuteArgs{ExecutionID: id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM river_job WHERE id = $1 AND state = 'completed'`, job.Job.ID) == 1
	})
	time.Sleep(2 * time.Second) // two of the queue's polls
	if n := in.count(`SELECT count(*) FROM agent_executions WHERE id = 'aex_call' AND status = 'running' AND attempts = 0`); n != 1 {
		t.Error("a call turn's execution was claimed by the queue")
	}
	if n := in.count(`SELECT count(*) FROM agent_executions WHERE id = $1 AND status = 'success' AND attempts = $2`, id, agent.MaxAttempts+1); n != 1 || replies() != 1 {
		t.Errorf("the earlier version's job ran the execution again: %d replies", replies())
	}
}
