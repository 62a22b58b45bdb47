package message

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/retention"
)

// Every inbound message is looked up by its provider id first (a provider posting it again is
// stored once). On a day's partition with no statistics yet, the planner answered "the sender's
// newest row with this id" by walking the sender's index backwards, through all of the sender's
// messages of the day when the id is new: 1.3 ms an inbound message after 8,000 (the agent
// bench's pg_stat_statements). The lookup now goes through the provider id's index whatever the
// statistics: this test holds it to a handful of blocks among 5,000 messages, on a partition
// autovacuum is kept off.
func TestAMessageIsFoundByProviderIDOnItsIndex(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC()
	if _, err := pool.Exec(ctx, `INSERT INTO messages (id, project, test_mode, sender, direction, channel, message_type, status,
		recipient, originator, provider_message_id, created_at, updated_at)
		SELECT 'msg_' || g, 'acme', true, 'main', 'inbound', 'sms', 'text', 'received', '+15005550006', '+1500555' || g,
		       'SM' || md5(g::text), $1::timestamptz - g * interval '1 ms', $1
		FROM generate_series(1, 5000) g`, now); err != nil {
		t.Fatal(err)
	}
	var part string
	if err := pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM messages LIMIT 1`).Scan(&part); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s SET (autovacuum_enabled = off)`, pgx.Identifier{part}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	var analyzed bool
	if err := pool.QueryRow(ctx, `SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL FROM pg_stat_user_tables
		WHERE relid = $1::regclass`, part).Scan(&analyzed); err != nil || analyzed {
		t.Fatalf("partition %s analyzed already (%v): the test needs one without statistics", part, err)
	}

	capture := &pgtest.Capture{}
	conn := capture.Conn(t, pool)
	q := db.Planned(conn)
	s := &Service{now: time.Now, retention: retention.Default} // no catalog: the parent's statement
	found, err := s.byProviderID(ctx, conn, now, "acme", true, "main", "SM"+md5hex(77))
	if err != nil || found.ID != "msg_77" {
		t.Fatalf("byProviderID = %s, %v; want msg_77", found.ID, err)
	}
	if blocks := pgtest.Explain(t, conn, "", capture.SQL, capture.Args...).BlocksOf("messages"); blocks > 20 {
		t.Errorf("finding a message by provider id went through %v blocks of messages, want a handful", blocks)
	}
	// A new id (every inbound message's case) reads as little.
	if _, err := s.byProviderID(ctx, conn, now, "acme", true, "main", "SMnew"); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("byProviderID of a new id = %v, want no rows", err)
	}
	newID := "SMnew"
	if _, err := q.GetMessageByProviderID(ctx, db.GetMessageByProviderIDParams{Project: "acme", TestMode: true, Sender: "main",
		ProviderMessageID: &newID, Since: now.Add(-time.Hour), Until: now.Add(time.Hour)}); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("a new id in today's partition = %v, want no rows", err)
	}
	if blocks := pgtest.Explain(t, conn, "", capture.SQL, capture.Args...).BlocksOf("messages"); blocks > 20 {
		t.Errorf("looking for a new provider id went through %v blocks of messages, want a handful", blocks)
	}
	// Another sender's or project's message of that id is not this one.
	if _, err := s.byProviderID(ctx, conn, now, "acme", true, "other", "SM"+md5hex(77)); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("another sender's lookup = %v, want no rows", err)
	}
}

func md5hex(n int) string {
	return fmt.Sprintf("%x", md5.Sum([]byte(fmt.Sprint(n))))
}
