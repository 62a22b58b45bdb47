package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Locks runs work that no two replicas may run at once for one key, each holding a Postgres
// advisory lock for as long as its work takes.
type Locks struct{ Pool *pgxpool.Pool }

// WithLock runs fn while holding the lock named key; the lock is released when fn returns.
func (l Locks) WithLock(ctx context.Context, key string, fn func(context.Context) error) error {
	return pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		if err := db.Planned(tx).LockKey(ctx, key); err != nil {
			return fmt.Errorf("lock %s: %w", key, err)
		}
		return fn(ctx)
	})
}
