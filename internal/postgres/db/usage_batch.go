// This file is written by hand (sqlc leaves it alone): a batch ending in the commit is not
// something sqlc generates.

package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// UsageCeilingCheck is the constraint a take past its counter's ceiling fails.
const UsageCeilingCheck = "usage_counters_within_limit"

// TakeUsages runs TakeUsage for each of args in one round trip and, with commit, the
// transaction's COMMIT in the same one: a counter's row, which every send of its project waits
// on, is then locked only while Postgres runs the takes and the commit, never while an answer
// travels back. Postgres skips what follows a failed statement, so a take its ceiling refuses
// fails with UsageCeilingCheck, refused is its index, and nothing after it ran: the commit
// neither. refused is -1 for any other error; the caller rolls back on every error.
func (q *Queries) TakeUsages(ctx context.Context, args []TakeUsageParams, commit bool) (refused int, err error) {
	b := &pgx.Batch{}
	for _, a := range args { // TakeUsage's arguments, in its order
		b.Queue(takeUsage, a.Project, a.TestMode, a.Meter, a.Period, a.PeriodStart, a.N, a.Lim)
	}
	if commit {
		b.Queue("COMMIT")
	}
	br := q.db.SendBatch(ctx, b)
	for i := range args {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.ConstraintName == UsageCeilingCheck {
				return i, err
			}
			return -1, fmt.Errorf("take usage: %w", err)
		}
	}
	if commit {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return -1, fmt.Errorf("commit: %w", err)
		}
	}
	return -1, br.Close()
}
