package db

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard-io/switchboard/internal/partition"
)

// OnPartitions returns the queries run on conn with table addressed through its partitions by
// name instead of through the partitioned parent: a statement that writes table (UPDATE, INSERT
// INTO, DELETE FROM) writes parts' only partition, one that reads it reads the union of parts.
// parts must be every partition that may hold the statement's rows (partition.Catalog.Span),
// newest first.
//
// A statement on plain tables is prepared once per connection (pgx's statement cache) and runs
// on a cached plan, where one on the parent is planned at every run (Planned): 0.2-0.6 ms of
// Postgres's time for a lookup whose execution takes 0.02 ms, the largest part of an agent
// turn's (docs/performance.md). A union of partitions is a plan of plain tables too: no lock
// on the partitions it does not name, unlike a cached plan of the parent. A statement with a
// long array (a broadcast chunk's ids) is planned for its parameters instead (modeFor).
//
// A statement that writes table while parts are several (a span across midnight) runs on the
// parent, as does one that does not name table. Outside a transaction, a statement that names a
// partition dropped since parts were listed (Postgres's undefined_table) is run again on the
// parent; in one, the error is returned (the transaction is lost) and fresh is called so the
// caller's list is read again.
func OnPartitions(conn DBTX, table string, parts []string, fresh func()) *Queries {
	if len(parts) == 0 {
		return Planned(conn)
	}
	return New(partitionConn{DBTX: conn, conn: conn, table: table, parts: parts, stale: fresh})
}

// InSpan is OnPartitions for the partitions of table that c names for rows created in [from,
// to) (partition.Catalog.Span, keptSince the retention's horizon, zero when the caller reads
// outside a transaction, which a partition dropped meanwhile does not end); on the parent
// (Planned) when c names none.
func InSpan(c *partition.Catalog, conn DBTX, table string, from, to, keptSince time.Time) *Queries {
	return InSpanWriting(c, conn, table, from, to, time.Time{}, keptSince)
}

// InSpanWriting is InSpan for statements that also write a row created at at (zero: none), into
// its partition (a claim that reads the keys of the days before and inserts now's).
func InSpanWriting(c *partition.Catalog, conn DBTX, table string, from, to, at, keptSince time.Time) *Queries {
	parts, ok := c.Span(table, from, to, keptSince)
	if !ok {
		return Planned(conn)
	}
	pc := partitionConn{DBTX: conn, conn: conn, table: table, parts: parts, stale: func() { c.Stale(table) }}
	if !at.IsZero() {
		write, ok := c.Span(table, at, at.Add(time.Microsecond), keptSince)
		if !ok || len(write) != 1 {
			return Planned(conn)
		}
		pc.write = write[0]
	}
	return New(pc)
}

// partitionConn rewrites Exec, Query and QueryRow; copies and batches go to the parent as given.
type partitionConn struct {
	DBTX
	conn  DBTX
	table string
	parts []string
	// write is the partition written into; "" when it is parts' only one.
	write string
	stale func()
}

func (c partitionConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	stmt, ok := c.rewrite(sql)
	if !ok {
		return plannedConn{c.conn}.Exec(ctx, sql, args...)
	}
	tag, err := c.conn.Exec(ctx, stmt, modeFor(args)...)
	if c.dropped(err) {
		return plannedConn{c.conn}.Exec(ctx, sql, args...)
	}
	return tag, err
}

func (c partitionConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	stmt, ok := c.rewrite(sql)
	if !ok {
		return plannedConn{c.conn}.Query(ctx, sql, args...)
	}
	rows, err := c.conn.Query(ctx, stmt, modeFor(args)...)
	if c.dropped(err) {
		return plannedConn{c.conn}.Query(ctx, sql, args...)
	}
	return rows, err
}

func (c partitionConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	stmt, ok := c.rewrite(sql)
	if !ok {
		return plannedConn{c.conn}.QueryRow(ctx, sql, args...)
	}
	// The row's error comes with Scan: a statement on a dropped partition is run again there.
	return retryRow{row: c.conn.QueryRow(ctx, stmt, modeFor(args)...), again: func() pgx.Row {
		return plannedConn{c.conn}.QueryRow(ctx, sql, args...)
	}, c: c}
}

// genericMaxArray is the longest array argument a statement may run with on a cached plan.
const genericMaxArray = 64

// modeFor is args as the statement runs with them: prepared, on the plan Postgres caches after
// five runs, which spares the planning that was most of an agent turn's cost; but planned for its
// parameters (pgx's unnamed-statement mode) when an array argument is long, since a generic plan
// does not know an array's length: with it a broadcast chunk's status step (1,000 ids) made the
// 100,000-recipient broadcast a third slower (docs/performance.md).
func modeFor(args []any) []any {
	for _, a := range args {
		if v, ok := a.([]string); ok && len(v) > genericMaxArray {
			return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
		}
	}
	return args
}

// dropped reports whether err is a statement naming a partition that no longer exists, and
// whether it may be run again on the parent (conn is not a transaction, which the error ended).
func (c partitionConn) dropped(err error) bool {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		return false
	}
	if c.stale != nil {
		c.stale()
	}
	_, inTx := c.conn.(pgx.Tx)
	return !inTx
}

type retryRow struct {
	row   pgx.Row
	again func() pgx.Row
	c     partitionConn
}

func (r retryRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if r.c.dropped(err) {
		return r.again().Scan(dest...)
	}
	return err
}

// rewrittenMax bounds the statements' forms kept: they change with the partitions, once a day.
const rewrittenMax = 1024

var (
	// rewritten caches each statement's form per table and partitions ("" for one run as it
	// is): sqlc's statements are constants. It is emptied when full, since the forms of the
	// days gone are not asked for again.
	rewrittenMu sync.RWMutex
	rewritten   = map[rewriteKey]string{}
	// tableRefs finds table named after the keyword that makes it a relation, and the word
	// after it (an alias, or the next clause).
	tableRefs sync.Map // table → *regexp.Regexp
)

type rewriteKey struct{ sql, table, parts, write string }

// rewrite is sql with table replaced by c.parts, cached; false when it is to run as it is, on
// the parent (a write through several partitions, a statement that does not name table).
func (c partitionConn) rewrite(sql string) (string, bool) {
	key := rewriteKey{sql, c.table, strings.Join(c.parts, ","), c.write}
	rewrittenMu.RLock()
	stmt, ok := rewritten[key]
	rewrittenMu.RUnlock()
	if ok {
		return stmt, stmt != ""
	}
	stmt, err := rewriteOn(sql, c.table, c.parts, c.write)
	if err != nil {
		stmt = ""
	}
	rewrittenMu.Lock()
	if len(rewritten) >= rewrittenMax {
		clear(rewritten)
	}
	rewritten[key] = stmt
	rewrittenMu.Unlock()
	return stmt, stmt != ""
}

// notAlias are the words that may follow a table's name in the statements rewritten and are
// not its alias.
var notAlias = map[string]bool{"WHERE": true, "SET": true, "JOIN": true, "ON": true, "ORDER": true, "GROUP": true,
	"LIMIT": true, "UNION": true, "LEFT": true, "INNER": true, "CROSS": true, "RETURNING": true, "USING": true,
	"AS": true, "FOR": true, "WINDOW": true, "HAVING": true, "OFFSET": true, "VALUES": true, "SELECT": true}

// RewriteOnPartitions is sql with every relation named table replaced by parts (newest first):
// the only part where the statement writes it, their union where it reads it, keeping the
// name (or the statement's alias) so that the rest of the statement reads as before. Comments
// but sqlc's first line (the statement's name) are dropped.
func RewriteOnPartitions(sql, table string, parts []string) (string, error) {
	return rewriteOn(sql, table, parts, "")
}

// rewriteOn is RewriteOnPartitions with the writes into write ("": parts' only one).
func rewriteOn(sql, table string, parts []string, write string) (string, error) {
	if len(parts) == 0 {
		return "", errors.New("rewrite on partitions: no partition named")
	}
	var re *regexp.Regexp
	if v, ok := tableRefs.Load(table); ok {
		re = v.(*regexp.Regexp)
	} else {
		re = regexp.MustCompile(`(?is)\b(UPDATE|INSERT\s+INTO|DELETE\s+FROM|FROM|JOIN)\s+` + regexp.QuoteMeta(table) +
			`\b(\s+(AS\s+)?([A-Za-z_][A-Za-z0-9_]*))?`)
		tableRefs.Store(table, re)
	}
	// The statement's name stays first (pg_stat_statements and traces show it); the other
	// comments go, as they may name table.
	name := ""
	if strings.HasPrefix(sql, "-- name: ") {
		if i := strings.IndexByte(sql, '\n'); i > 0 {
			name, sql = sql[:i+1], sql[i+1:]
		}
	}
	src := lineComment.ReplaceAllString(sql, "")
	var failed error
	out := re.ReplaceAllStringFunc(src, func(m string) string {
		g := re.FindStringSubmatch(m)
		keyword, alias := g[1], g[4]
		rest := ""
		if alias != "" && notAlias[strings.ToUpper(alias)] && g[3] == "" {
			rest, alias = g[2], "" // the next clause, not an alias
		}
		ref := alias // what the rest of the statement calls the relation
		if ref == "" {
			ref = table
		}
		writes := !strings.EqualFold(keyword, "FROM") && !strings.EqualFold(keyword, "JOIN")
		if writes && write != "" {
			return keyword + " " + write + " AS " + ref + rest
		}
		if writes {
			if len(parts) != 1 {
				failed = fmt.Errorf("rewrite on partitions: a statement writing %s names %d partitions, not one", table, len(parts))
				return m
			}
			return keyword + " " + parts[0] + " AS " + ref + rest
		}
		if len(parts) == 1 {
			return keyword + " " + parts[0] + " AS " + ref + rest
		}
		union := make([]string, len(parts))
		for i, p := range parts {
			union[i] = "SELECT * FROM " + p
		}
		return keyword + " (" + strings.Join(union, " UNION ALL ") + ") AS " + ref + rest
	})
	if failed != nil {
		return "", failed
	}
	if out == src {
		return "", fmt.Errorf("rewrite on partitions: the statement names no relation %s", table)
	}
	return name + out, nil
}
