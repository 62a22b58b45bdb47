package erasure_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/erasure"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// An erasure of a person with thousands of messages goes in batches; cut short again and again, it
// resumes, and ends with every message erased and each counted once.
func TestErasureResumesAndCountsOnce(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	const phone, n = "+15005550199", 3000
	if _, err := pool.Exec(ctx, `
		INSERT INTO conversations (id, project, test_mode, sender, contact_identifier, address, channels, message_count,
		                           last_message_id, last_message_at, last_message_channel, last_message_direction,
		                           last_message_text, created_at, updated_at)
		VALUES ('conv_p', 'p', false, 'main', $1, '+15005550006', ARRAY['sms'], $2, 'msg_e1', now(), 'sms', 'outbound',
		        'secret 1', now(), now())`, phone, n); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO messages (id, project, test_mode, sender, direction, channel, message_type, status, recipient, originator,
		                      body, conversation_id, created_at, updated_at)
		SELECT 'msg_e' || i, 'p', false, 'main', 'outbound', 'sms', 'text', 'delivered', $1, '+15005550006',
		       'secret ' || i, 'conv_p', now() - i * interval '1 minute', now()
		FROM generate_series(1, $2) AS i`, phone, n); err != nil {
		t.Fatal(err)
	}
	s := &erasure.Service{Pool: pool, Log: testr.New(t), Batch: 100}
	var id string
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		id, err = s.Start(ctx, tx, erasure.Request{Project: "p", Addresses: []string{phone}, RequestedBy: "operator"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cuts := 0
	for wait := 5 * time.Millisecond; ; wait = wait * 3 / 2 {
		// Cancelled, not timed out: the run is cut wherever it is, mid-statement included.
		runCtx, cancel := context.WithCancel(ctx)
		stop := time.AfterFunc(wait, cancel)
		err := s.Run(runCtx, id)
		stop.Stop()
		cancel()
		if err == nil {
			break
		}
		cuts++
		if wait > time.Minute {
			t.Fatal(err)
		}
	}
	t.Logf("finished after %d cuts", cuts)
	e, err := db.Planned(pool).GetErasure(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var counts map[string]int64
	if err := json.Unmarshal(e.Counts, &counts); err != nil {
		t.Fatal(err)
	}
	if e.State != "done" || counts["messages"] != n || counts["conversations"] != 1 {
		t.Fatalf("erasure %s: %s", e.State, e.Counts)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE body IS NOT NULL OR recipient = $1`, phone).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d messages not erased", left)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM erasure_targets`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d targets left (%v): the addresses outlive the erasure", left, err)
	}
	// Running it again does nothing.
	if err := s.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
}
