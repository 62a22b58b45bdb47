package partition

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// staleShare is how much of a partition may have changed since it was last analyzed before
// AnalyzeAt analyzes it again: autovacuum's own default (autovacuum_analyze_scale_factor).
const staleShare = 0.1

// AnalyzeAt gives the partition of t that holds at statistics when it has none, or when a tenth
// of its rows or more changed since they were gathered, and reports whether it analyzed it.
// A day's partition has no statistics until autovacuum first visits it, a minute or more into
// its day; a bulk of rows written at once (a broadcast's million recipients) is read before then,
// and the planner, taking the partition for a handful of rows, picks plans that read it all for
// every batch. ANALYZE samples a fixed number of rows, whatever the partition's size, and takes
// no lock that writers wait on.
func AnalyzeAt(ctx context.Context, pool *pgxpool.Pool, t Table, at time.Time) (bool, error) {
	parts, err := List(ctx, pool, t)
	if err != nil {
		return false, err
	}
	name := ""
	for _, p := range parts {
		if !at.Before(p.From) && at.Before(p.To) {
			name = p.Name
		}
	}
	if name == "" {
		return false, nil // not partitioned yet, or no partition holds at: nothing to read
	}
	var analyzed bool
	var live, changed int64
	err = pool.QueryRow(ctx, `SELECT coalesce(last_analyze, last_autoanalyze) IS NOT NULL, n_live_tup, n_mod_since_analyze
		FROM pg_stat_user_tables WHERE relid = to_regclass($1)`, name).Scan(&analyzed, &live, &changed)
	if err != nil {
		return false, fmt.Errorf("read the statistics of %s: %w", name, err)
	}
	if analyzed && float64(changed) < staleShare*float64(live) {
		return false, nil
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+ident(name)); err != nil {
		return false, fmt.Errorf("analyze %s: %w", name, err)
	}
	return true, nil
}
