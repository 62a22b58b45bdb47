package message

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// newAcceptingService is a Service on a fresh database whose queue only inserts.
func newAcceptingService(t *testing.T) *Service {
	t.Helper()
	pool := pgtest.NewPool(t)
	queue, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(verifiedProject("acme")).Build()
	return NewService(pool, reader, delivery.NewService(reader), queue, nil, nil)
}

// verifiedProject is a paid project with business verification, whose ceilings (10,000 SMS a
// day) the tests of batching do not reach.
func verifiedProject(ns string) *v1alpha1.Project {
	return &v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns},
		Spec: v1alpha1.ProjectSpec{Plan: v1alpha1.PlanPaid, Verification: v1alpha1.VerificationBusinessApproved}}
}

func TestAcceptBatch(t *testing.T) {
	t.Parallel()
	s := newAcceptingService(t)
	ctx := context.Background()
	key := "order-42"
	batch := []Outbound{
		{Project: "acme", Sender: "main", Channel: "sms", MessageType: "text", To: "+15005550100", From: "+15005550006", Text: "one"},
		{Project: "acme", Sender: "main", Channel: "sms", MessageType: "text", To: "+15005550100", From: "+15005550006", Text: "two"},
		{Project: "acme", Sender: "main", Channel: "sms", MessageType: "text", To: "+15005550101", From: "+15005550006", Text: "three",
			IdempotencyKey: &key},
	}
	ids := acceptIn(t, s, batch...)
	count := func(sql string, args ...any) int {
		var n int
		if err := s.pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if len(ids) != 3 || count(`SELECT count(*) FROM messages WHERE id = ANY($1) AND status = 'queued'`, ids) != 3 {
		t.Fatalf("accepted %v", ids)
	}
	if n := count(`SELECT count(*) FROM river_job WHERE kind = 'message.dispatch' AND args->>'messageId' = ANY($1)`, ids); n != 3 {
		t.Errorf("%d dispatch jobs, want 3", n)
	}
	if n := count(`SELECT count(*) FROM conversations WHERE project = 'acme'`); n != 2 {
		t.Errorf("%d conversations, want one per recipient", n)
	}
	if n := count(`SELECT message_count FROM conversations WHERE contact_identifier = '+15005550100'`); n != 2 {
		t.Errorf("the first recipient's thread counts %d messages, want 2", n)
	}

	// A batch holding a key already used is refused whole: nothing of it is stored.
	again := []Outbound{batch[0], batch[2]}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := s.Accept(ctx, tx, again)
		return err
	})
	var dup *ErrDuplicate
	if !errors.As(err, &dup) || dup.Original.ID != ids[2] {
		t.Fatalf("second batch = %v, want ErrDuplicate naming %s", err, ids[2])
	}
	if n := count(`SELECT count(*) FROM messages`); n != 3 {
		t.Errorf("the refused batch left %d messages, want the first batch's 3", n)
	}
}

// Test-mode sends accepted together go to the sandbox in one job; a lone one keeps its own.
func TestAcceptedTestSendsShareADispatchJob(t *testing.T) {
	t.Parallel()
	s := newAcceptingService(t)
	ctx := context.Background()
	send := func(to string) Outbound {
		return Outbound{Project: "acme", TestMode: true, Sender: "main", Channel: "sms", MessageType: "text", To: to, From: "+15005550006", Text: "hi"}
	}
	group := acceptIn(t, s, send("+15005550100"), send("+15005550101"), send("+15005550102"))
	lone := acceptIn(t, s, send("+15005550103"))
	var jobs []struct {
		Kind string
		Args []byte
	}
	rows, err := s.pool.Query(ctx, `SELECT kind, args FROM river_job WHERE kind LIKE 'message.dispatch%' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var j struct {
			Kind string
			Args []byte
		}
		if err := rows.Scan(&j.Kind, &j.Args); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d dispatch jobs, want one for the group and one for the lone send: %+v", len(jobs), jobs)
	}
	var many DispatchManyArgs
	if err := json.Unmarshal(jobs[0].Args, &many); err != nil || jobs[0].Kind != "message.dispatch_many" || !slices.Equal(many.MessageIDs, group) {
		t.Errorf("the group's job is %s %s, want message.dispatch_many of %v", jobs[0].Kind, jobs[0].Args, group)
	}
	var one DispatchArgs
	if err := json.Unmarshal(jobs[1].Args, &one); err != nil || jobs[1].Kind != "message.dispatch" || one.MessageID != lone[0] {
		t.Errorf("the lone send's job is %s %s, want message.dispatch of %s", jobs[1].Kind, jobs[1].Args, lone[0])
	}
}

// acceptIn accepts batch in a transaction of its own and returns the messages' ids.
func acceptIn(t *testing.T, s *Service, batch ...Outbound) []string {
	t.Helper()
	var ids []string
	if err := pgx.BeginFunc(context.Background(), s.pool, func(tx pgx.Tx) error {
		msgs, err := s.Accept(context.Background(), tx, batch)
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}
