// This file is written by hand (sqlc leaves it alone): Switchboard's queries are made through
// Planned, not New.

package db

import (
	"context"
	"regexp"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard-io/switchboard/internal/partition"
)

// Planned returns the queries run on conn, each statement that names a time-partitioned table
// sent as an unnamed statement, which Postgres plans for its parameters every time.
//
// The rest stay prepared (pgx's statement cache) and may use a generic plan. A generic plan of
// a statement on a partitioned table covers every partition, and building it locks every
// partition and index: Postgres does that at a prepared statement's sixth run, to price it, and
// on a year of daily partitions a lookup by id took 2,586 locks; a pool of connections doing it
// at once filled the lock table (docs/data-lifecycle.md). A custom plan prunes while it plans.
// Planning every statement instead costs about a fifth of the acceptance rate on a young
// database (docs/performance.md).
func Planned(conn DBTX) *Queries {
	return New(plannedConn{conn})
}

// plannedConn chooses, statement by statement, how pgx sends it.
type plannedConn struct{ DBTX }

func (c plannedConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return c.DBTX.Exec(ctx, sql, execMode(sql, args)...)
}

func (c plannedConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.DBTX.Query(ctx, sql, execMode(sql, args)...)
}

func (c plannedConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return c.DBTX.QueryRow(ctx, sql, execMode(sql, args)...)
}

// execMode puts pgx's unnamed-statement mode before args when sql names a partitioned table.
// Batches (RecordMessage) take the connection's mode: pgx has no mode per batch, and the one
// batch inserts, which a generic plan does without opening every partition.
func execMode(sql string, args []any) []any {
	if !NamesPartitionedTable(sql) {
		return args
	}
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}

var (
	// partitionedName matches a partitioned table's name as a whole word.
	partitionedName = regexp.MustCompile(`(?i)\b(` + partitionedNames() + `)\b`)
	// lineComment matches a comment to the end of its line: sqlc keeps a query's comments, and
	// one that mentions a partitioned table does not make the statement read it.
	lineComment = regexp.MustCompile(`--[^\n]*`)
	// namesPartitioned caches the answer per statement: sqlc's statements are constants.
	namesPartitioned sync.Map
)

func partitionedNames() string {
	names := make([]string, 0, len(partition.Tables))
	for _, t := range partition.Tables {
		names = append(names, regexp.QuoteMeta(t.Name))
	}
	return strings.Join(names, "|")
}

// NamesPartitionedTable reports whether sql names one of partition.Tables outside its comments.
// A word that only looks like one (a column of the same name) sends the statement unnamed too:
// slower, never wrong.
func NamesPartitionedTable(sql string) bool {
	if v, ok := namesPartitioned.Load(sql); ok {
		return v.(bool)
	}
	names := partitionedName.MatchString(lineComment.ReplaceAllString(sql, ""))
	namesPartitioned.Store(sql, names)
	return names
}
