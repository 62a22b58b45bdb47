package broadcast

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// A broadcast's chunks record their recipients by id. On a partition with no statistics (its
// day's first minutes, before autovacuum) the planner read the broadcast's whole pending index
// for each chunk instead: 0.7 s a chunk of 500 among a million, and a million recipients went
// out at 700 a second. Starting a broadcast analyzes its recipients' partition, and a chunk then
// goes through its own rows (the bench's EXPLAIN, not this test, showed the plan before; this
// test holds the start to analyzing, and the chunk to its rows after). Autovacuum is kept off the
// partition, as before it comes round.
func TestAStartedBroadcastsChunksFindTheirRecipientsByKey(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t)
	const recipients, chunk = 10_000, 500
	contacts := make([]ContactInput, recipients)
	for i := range contacts {
		contacts[i] = contact(fmt.Sprintf("+447700%06d", i), map[string]string{"name": fmt.Sprint("R", i)})
	}
	s, b := draftOf(t, pool, "sms", "Hi {{name}}", contacts)
	var part string
	if err := pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM broadcast_contacts WHERE broadcast_id = $1 LIMIT 1`, b.ID).Scan(&part); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s SET (autovacuum_enabled = off)`, pgx.Identifier{part}.Sanitize())); err != nil {
		t.Fatal(err)
	}

	// work is what recording a chunk of the first pending recipients goes through: the rows
	// every node of its plan produced (its statement captured, then explained, rolled back).
	capture := &pgtest.Capture{}
	conn := capture.Conn(t, pool)
	work := func() float64 {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT id FROM broadcast_contacts WHERE broadcast_id = $1 AND status = 'pending' ORDER BY created_at, id LIMIT $2`, b.ID, chunk)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		results := make([]result, len(ids))
		for i, id := range ids {
			results[i] = result{id: id, status: "queued", messageID: "msg_" + id, cost: -1}
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := queueContacts(ctx, db.Planned(tx), b.ID, results, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		return pgtest.Explain(t, conn, "", capture.SQL, capture.Args...).RowsOf("")
	}
	// Whatever autovacuum did before it was turned off, the partition's counters start again.
	if _, err := pool.Exec(ctx, `SELECT pg_stat_reset_single_table_counters($1::regclass)`, part); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE broadcasts SET status = 'approved' WHERE id = $1`, b.ID); err != nil {
		t.Fatal(err)
	}
	if started, err := s.start(ctx, b.ID); err != nil || !started {
		t.Fatalf("start = %v, %v; want started", started, err)
	}
	var analyzed bool
	if err := pool.QueryRow(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = $1::regclass`, part).Scan(&analyzed); err != nil || !analyzed {
		t.Fatalf("the recipients' partition %s analyzed: %v (%v), want true", part, analyzed, err)
	}
	after := work()
	if after > 6*chunk {
		t.Errorf("recording a chunk of %d among %d pending went through %.0f rows, want at most %d", chunk, recipients, after, 6*chunk)
	}
}
