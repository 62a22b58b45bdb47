package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// A statement on a partitioned table run again and again on one connection keeps locking only
// its own day through db.Planned. Through a plain prepared statement, Postgres builds a generic
// plan at the sixth run, and building it locks every partition: the hazard db.Planned avoids.
// A statement on a plain table stays prepared.
func TestPlannedStatementsLockOnlyTheirDaysRunAfterRun(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC()
	pgtest.SixtyDays(t, pool, now, "messages")
	id, err := randid.Timed("msg_", now)
	if err != nil {
		t.Fatal(err)
	}

	locked := func(queries func(pgx.Tx) *db.Queries) (partitions int, prepared []string) {
		t.Helper()
		// A connection of its own: Postgres builds a statement's generic plan once per
		// connection, so one that already did would hide it.
		conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(ctx) }()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		q := queries(tx)
		for range 8 {
			if _, err := q.GetMessageByID(ctx, id); !errors.Is(err, pgx.ErrNoRows) {
				t.Fatalf("read a message: %v", err)
			}
			if _, err := q.GetSetting(ctx, "no such setting"); !errors.Is(err, pgx.ErrNoRows) {
				t.Fatalf("read a setting: %v", err)
			}
		}
		rows, err := tx.Query(ctx, `SELECT statement FROM pg_prepared_statements WHERE from_sql = false`)
		if err != nil {
			t.Fatal(err)
		}
		prepared, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return len(pgtest.LockedPartitions(t, tx, "messages")), prepared
	}

	partitions, prepared := locked(func(tx pgx.Tx) *db.Queries { return db.Planned(tx) })
	if partitions < 1 || partitions > 2 {
		t.Errorf("through db.Planned, eight reads of a message locked %d partitions of 63; want its day's (and the day before, within a minute of midnight)", partitions)
	}
	var setting, message bool
	for _, s := range prepared {
		setting = setting || strings.Contains(s, "FROM switchboard_settings")
		message = message || db.NamesPartitionedTable(s)
	}
	if !setting || message {
		t.Errorf("prepared statements %q: want the setting's statement prepared and no statement on messages", prepared)
	}

	// The hazard.
	if partitions, _ := locked(func(tx pgx.Tx) *db.Queries { return db.New(tx) }); partitions < 60 {
		t.Errorf("through plain prepared statements, eight reads locked %d partitions; this test no longer shows the generic plan it guards against", partitions)
	}
}
