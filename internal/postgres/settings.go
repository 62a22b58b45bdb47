package postgres

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// SharedSecret returns the installation's secret called name, creating it with size random bytes
// the first time; every replica gets the same bytes.
func SharedSecret(ctx context.Context, pool *pgxpool.Pool, name string, size int) ([]byte, error) {
	fresh := make([]byte, size)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("generate secret %s: %w", name, err)
	}
	q := db.Planned(pool)
	if err := q.InsertSettingIfAbsent(ctx, db.InsertSettingIfAbsentParams{Name: name, Value: fresh}); err != nil {
		return nil, fmt.Errorf("store secret %s: %w", name, err)
	}
	value, err := q.GetSetting(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read secret %s: %w", name, err)
	}
	return value, nil
}
