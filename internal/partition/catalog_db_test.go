package partition_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// Statements addressed to partitions by name find, move and miss what the parent's would, and
// a partition dropped after the catalog listed it costs a statement run on the parent (outside a
// transaction) or the transaction (inside one), never a wrong answer.
func TestStatementsOnNamedPartitions(t *testing.T) {
	ctx := context.Background()
	pool := convertedSince(t, 3) // then brought up to date: the statements are today's
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	keeper := partition.Keeper{Pool: pool}
	if err := keeper.EnsureAhead(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	today, err := insertOne(ctx, pool, now)
	if err != nil {
		t.Fatal(err)
	}
	older, err := insertOne(ctx, pool, now.Add(-2*partition.Day))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE messages SET provider_message_id = 'SM' || id, sender = 'main'`); err != nil {
		t.Fatal(err)
	}

	cat := partition.NewCatalog(pool)
	// listed waits for the catalog's list of table, which it reads in the background.
	listed := func(table string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, ok := cat.Span(table, now, now.Add(time.Minute), time.Time{}); ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the catalog did not read the partitions of %s within 10 s", table)
			}
		}
	}
	listed("messages")

	capture := &pgtest.Capture{}
	conn := capture.Conn(t, pool)
	on := func(conn db.DBTX, ids ...string) *db.Queries {
		from, to := partition.Bounds(ids)
		return db.InSpan(cat, conn, "messages", from, to, time.Time{})
	}
	dayOf := func(at time.Time) string { return "messages_p" + at.UTC().Format("20060102") }

	// A message by its id: its day's partition alone, prepared.
	for range 7 { // past the runs after which Postgres may keep a generic plan
		m, err := on(conn, today).GetMessageByID(ctx, today)
		if err != nil || m.ID != today {
			t.Fatalf("GetMessageByID = %q, %v; want %s", m.ID, err, today)
		}
	}
	if !strings.Contains(capture.SQL, "FROM "+dayOf(now)+" AS messages") {
		t.Errorf("GetMessageByID ran as\n%s\nwant it on %s", capture.SQL, dayOf(now))
	}
	if _, err := on(conn, older).GetMessageByID(ctx, today); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("a message looked for in another day's partition: %v, want no rows", err)
	}

	// Read through a union of the span's partitions: the older message is found.
	providerID := "SM" + older
	found, err := db.InSpan(cat, conn, "messages", now.Add(-3*partition.Day), now.Add(7*partition.Day), time.Time{}).GetMessageByProviderID(ctx,
		db.GetMessageByProviderIDParams{Project: "writer", Sender: "main", ProviderMessageID: &providerID,
			Since: now.Add(-3 * partition.Day), Until: now.Add(7 * partition.Day)})
	if err != nil || found.ID != older {
		t.Fatalf("GetMessageByProviderID through the union = %q, %v; want %s", found.ID, err, older)
	}
	if !strings.Contains(capture.SQL, "UNION ALL SELECT * FROM "+dayOf(now.Add(-2*partition.Day))) {
		t.Errorf("GetMessageByProviderID ran as\n%s\nwant a union naming %s", capture.SQL, dayOf(now.Add(-2*partition.Day)))
	}

	// A status change in a transaction: on the message's partition; messages of two days at
	// once go through the parent, and both move.
	move := func(ids ...string) string {
		t.Helper()
		from, to := partition.Bounds(ids)
		var sql string
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			rows, err := on(tx, ids...).SetMessagesStatus(ctx, db.SetMessagesStatusParams{Ids: ids, ProviderMessageIds: make([]string, len(ids)),
				Status: "sent", FromStatuses: []string{"queued"}, UpdatedAt: now, CreatedFrom: from, CreatedTo: to})
			if err == nil && len(rows) != len(ids) {
				err = errors.New("not every message moved")
			}
			sql = capture.SQL
			return err
		})
		if err != nil {
			t.Fatalf("SetMessagesStatus of %v: %v", ids, err)
		}
		return sql
	}
	if sql := move(today); !strings.Contains(sql, "UPDATE "+dayOf(now)+" AS msg") {
		t.Errorf("SetMessagesStatus ran as\n%s\nwant it on %s", sql, dayOf(now))
	}
	if _, err := pool.Exec(ctx, `UPDATE messages SET status = 'queued'`); err != nil {
		t.Fatal(err)
	}
	if sql := move(today, older); !strings.Contains(sql, "UPDATE messages msg") {
		t.Errorf("SetMessagesStatus of two days ran as\n%s\nwant it on the parent", sql)
	}

	// An idempotency key: read from the keys' days, written into today's.
	listed("message_idempotency_keys")
	for i, want := range []string{today, today} { // the second claim finds the first
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			owner, err := db.InSpanWriting(cat, tx, "message_idempotency_keys", now.Add(-partition.Day), now.Add(7*partition.Day), now,
				time.Time{}).ClaimIdempotencyKey(ctx, db.ClaimIdempotencyKeyParams{Project: "writer", Key: "k1",
				MessageID: []string{today, older}[i], CreatedAt: now, Since: now.Add(-partition.Day)})
			if err == nil && owner != want {
				err = errors.New("claimed by " + owner + ", want " + want)
			}
			return err
		})
		if err != nil {
			t.Fatalf("claim %d: %v", i+1, err)
		}
	}
	// (The keys' table was converted today: today's keys are in its legacy partition.)
	if !strings.Contains(capture.SQL, "INSERT INTO message_idempotency_keys_legacy AS message_idempotency_keys") {
		t.Errorf("ClaimIdempotencyKey ran as\n%s\nwant it to insert into the partition of now", capture.SQL)
	}

	// The older day's partition dropped behind the catalog's back.
	old := dayOf(now.Add(-2 * partition.Day))
	if _, err := pool.Exec(ctx, `ALTER TABLE messages DETACH PARTITION `+old); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DROP TABLE `+old); err != nil {
		t.Fatal(err)
	}
	if _, err := on(conn, older).GetMessageByID(ctx, older); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("a message of a dropped partition, outside a transaction: %v, want no rows (run again on the parent)", err)
	}
	if _, ok := cat.Span("messages", now.Add(-time.Minute), now.Add(time.Minute), time.Time{}); ok {
		t.Error("the catalog still answers after a statement found its partition gone")
	}
	listed("messages") // read again
	// The list read again has a gap where the dropped day was: a span across it is the parent's.
	if parts, ok := cat.Span("messages", now.Add(-3*partition.Day), now, time.Time{}); ok {
		t.Errorf("a span across the dropped day named %v, want the parent", parts)
	}
	// In a transaction the error ends it; the catalog is read again.
	stale := db.OnPartitions(conn, "messages", []string{dayOf(now), old}, func() { cat.Stale("messages") })
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := db.OnPartitions(tx, "messages", []string{dayOf(now), old}, func() { cat.Stale("messages") }).GetMessageByProviderID(ctx,
			db.GetMessageByProviderIDParams{Project: "writer", Sender: "main", ProviderMessageID: &providerID, Since: now.Add(-3 * partition.Day), Until: now})
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Errorf("a union naming a dropped partition in a transaction: %v, want undefined_table", err)
	}
	if _, err := stale.GetMessageByProviderID(ctx, db.GetMessageByProviderIDParams{Project: "writer", Sender: "main", ProviderMessageID: &providerID,
		Since: now.Add(-3 * partition.Day), Until: now}); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("the same outside a transaction: %v, want no rows (run again on the parent)", err)
	}
}
