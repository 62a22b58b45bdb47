package partition

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/periodic"
)

// Keeper makes the partitions of the days to come before rows need them: every process that
// writes runs one, so that no single process's absence leaves tomorrow without a partition.
type Keeper struct {
	Pool *pgxpool.Pool
	Log  logr.Logger
	// Ahead is how many days past today have partitions (3 when zero).
	Ahead int
	// Every is how often it looks (1 hour when zero).
	Every time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Start runs the keeper until ctx ends: once at once, then every Every. It is a
// controller-runtime Runnable.
func (k *Keeper) Start(ctx context.Context) error {
	periodic.Run(ctx, k.Every, time.Hour, func(ctx context.Context) {
		if err := k.EnsureAhead(ctx); err != nil && ctx.Err() == nil {
			k.Log.Error(err, "make the coming days' partitions")
		}
	})
	return nil
}

// NeedLeaderElection is false: every process keeps the partitions (Ensure makes each once).
func (k *Keeper) NeedLeaderElection() bool { return false }

// EnsureAhead makes every table's partitions from yesterday to Ahead days past today.
func (k *Keeper) EnsureAhead(ctx context.Context) error {
	now := time.Now
	if k.Now != nil {
		now = k.Now
	}
	ahead := k.Ahead
	if ahead == 0 {
		ahead = 3
	}
	today := now().UTC().Truncate(Day)
	for _, t := range Tables {
		made, err := Ensure(ctx, k.Pool, t, today.Add(-Day), today.Add(time.Duration(ahead+1)*Day))
		if err != nil {
			return err
		}
		if len(made) > 0 {
			k.Log.Info("made partitions", "table", t.Name, "partitions", made)
		}
	}
	return nil
}

// OnDemand makes the partition a refused write needed and reports whether the write may be
// tried again: err is a row at a time no partition holds (IsMissing), whose day Postgres names in
// the error's detail (now when it does not). A keeper that has not run (every process down over
// days, a clock far ahead) then costs one retry, not a send.
func OnDemand(ctx context.Context, pool *pgxpool.Pool, err error, now time.Time) bool {
	if !IsMissing(err) {
		return false
	}
	at := now
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if t, ok := rowTime(pgErr.Detail); ok {
			at = t
		}
	}
	day := at.UTC().Truncate(Day)
	for _, t := range Tables {
		if _, err := Ensure(ctx, pool, t, day, day.Add(Day)); err != nil {
			return false
		}
	}
	return true
}

// rowTime reads the partition key of a refused row from Postgres's detail: "Partition key of the
// failing row contains (created_at) = (2026-11-28 00:00:01.5+00)."
func rowTime(detail string) (time.Time, bool) {
	_, v, ok := strings.Cut(detail, ") = (")
	if !ok {
		return time.Time{}, false
	}
	v, _, ok = strings.Cut(v, ")")
	if !ok {
		return time.Time{}, false
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// Retry runs write, and once more when a row it wrote found no partition, after making the
// partition (OnDemand). write must be a whole transaction, safe to run again after a rollback.
func Retry(ctx context.Context, pool *pgxpool.Pool, write func() error) error {
	err := write()
	if err != nil && OnDemand(ctx, pool, err, time.Now()) {
		err = write()
	}
	return err
}
