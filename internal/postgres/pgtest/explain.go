package pgtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Capture keeps the last of sqlc's statements a connection ran, with its arguments: a
// connection made with Capture.Conn runs code as it is, and the statement is then explained.
type Capture struct {
	SQL  string
	Args []any
}

// Conn opens a connection to pool's database that records its sqlc statements in c; it is
// closed when the test ends.
func (c *Capture) Conn(t testing.TB, pool *pgxpool.Pool) *pgx.Conn {
	t.Helper()
	cfg := pool.Config().ConnConfig.Copy()
	cfg.Tracer = c
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TraceQueryStart keeps the statement when it is one of sqlc's (it starts with its name).
func (c *Capture) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, "-- name: ") {
		c.SQL, c.Args = d.SQL, d.Args
	}
	return ctx
}

// TraceQueryEnd does nothing.
func (c *Capture) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// PlanNode is a node of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON).
type PlanNode struct {
	Relation   string     `json:"Relation Name"`
	Rows       float64    `json:"Actual Rows"`
	Loops      float64    `json:"Actual Loops"`
	SharedHit  float64    `json:"Shared Hit Blocks"`
	SharedRead float64    `json:"Shared Read Blocks"`
	Plans      []PlanNode `json:"Plans"`
}

// RowsOf is the rows that the scans of relations named with prefix produced under n, each
// scan's times its loops.
func (n PlanNode) RowsOf(prefix string) float64 {
	sum := 0.0
	if strings.HasPrefix(n.Relation, prefix) {
		sum = n.Rows * n.Loops
	}
	for _, c := range n.Plans {
		sum += c.RowsOf(prefix)
	}
	return sum
}

// BlocksOf is the blocks (index and table pages, in shared buffers or read) that the scans of
// relations named with prefix went through under n: what a scan stepping over index entries
// it does not return costs, which its rows do not show.
func (n PlanNode) BlocksOf(prefix string) float64 {
	sum := 0.0
	if strings.HasPrefix(n.Relation, prefix) {
		sum = n.SharedHit + n.SharedRead
	}
	for _, c := range n.Plans {
		sum += c.BlocksOf(prefix)
	}
	return sum
}

var errRollBack = errors.New("roll back")

// Explain runs sql with args under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) on conn, in a
// transaction rolled back, after the statements of set (SET LOCAL …, to steer the planner),
// and returns its plan's root.
func Explain(t testing.TB, conn *pgx.Conn, set, sql string, args ...any) PlanNode {
	t.Helper()
	ctx := context.Background()
	var plan []struct{ Plan PlanNode }
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if set != "" {
			if _, err := tx.Exec(ctx, set); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
			return err
		}
		return errRollBack
	})
	if !errors.Is(err, errRollBack) {
		t.Fatal(err)
	}
	return plan[0].Plan
}
