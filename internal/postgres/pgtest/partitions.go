package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/partition"
)

// SixtyDays leaves each named partitioned table with daily partitions from 60 days before now to
// two days after, and none for earlier rows: a statement that prunes nothing locks them all.
func SixtyDays(t testing.TB, pool *pgxpool.Pool, now time.Time, names ...string) {
	t.Helper()
	for _, name := range names {
		table, ok := partition.Named(name)
		if !ok {
			t.Fatalf("%s is not a partitioned table", name)
		}
		WithoutLegacyPartitions(t, pool, name)
		if _, err := partition.Ensure(context.Background(), pool, table, now.Add(-60*partition.Day), now.Add(2*partition.Day)); err != nil {
			t.Fatal(err)
		}
	}
}

// WithoutLegacyPartitions drops the partition a new database's conversion made of everything
// before tomorrow from each of tables, so that a test can make daily partitions of the past
// days, as on an installation that has run for months.
func WithoutLegacyPartitions(t testing.TB, pool *pgxpool.Pool, tables ...string) {
	t.Helper()
	for _, table := range tables {
		parent, legacy := pgx.Identifier{table}.Sanitize(), pgx.Identifier{table + "_legacy"}.Sanitize()
		if _, err := pool.Exec(context.Background(),
			fmt.Sprintf(`ALTER TABLE %s DETACH PARTITION %s; DROP TABLE %s`, parent, legacy, legacy)); err != nil {
			t.Fatal(err)
		}
	}
}

// LockedPartitions returns the partitions of table that tx holds a lock on: what the statements
// run in it planned and read. A statement bounded by time locks the partitions of its span only.
func LockedPartitions(t testing.TB, tx pgx.Tx, table string) []string {
	t.Helper()
	rows, err := tx.Query(context.Background(), `SELECT DISTINCT l.relation::regclass::text FROM pg_locks l
		JOIN pg_inherits i ON i.inhrelid = l.relation WHERE l.pid = pg_backend_pid() AND i.inhparent = $1::regclass ORDER BY 1`, table)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}
