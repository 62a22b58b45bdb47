package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/switchboard-io/switchboard/internal/partition"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey serialises concurrent migrators (replicas starting together, a Helm hook and a
// developer): pg_advisory_lock on it is held for the whole step.
const migrateLockKey = 0x5377_6974_6368 // "Switch"

// Applied lists what one Migrate call applied.
type Applied struct {
	Switchboard []int64  // versions of migrations/ applied now
	River       []int    // versions of River's migrations applied now
	Partitioned []string // tables converted to time partitions now
}

// Migrate brings the schema up to date: the job queue's migrations first (our tables may refer to
// them in the future, never the other way round), then Switchboard's own, then the conversion of
// the tables that grow with traffic to time partitions (online; a killed run resumes; logged
// through the context's logr logger).
func Migrate(ctx context.Context, pool *pgxpool.Pool) (Applied, error) {
	return MigrateTo(ctx, pool, 0)
}

// MigrateTo is Migrate stopping at Switchboard's migration version (0: the latest): for tests of
// a migration that moves data, run against the schema before it.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, version int64) (Applied, error) {
	var applied Applied
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return applied, fmt.Errorf("acquire connection for migrations: %w", err)
	}
	defer conn.Release()
	// Polled rather than waited for: a migrator waiting inside pg_advisory_lock holds a snapshot,
	// and the conversion's CREATE INDEX CONCURRENTLY waits for every older snapshot to end, a
	// wait between two processes that Postgres cannot see as a deadlock.
	for {
		var locked bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(migrateLockKey)).Scan(&locked); err != nil {
			return applied, fmt.Errorf("take migration lock: %w", err)
		}
		if locked {
			break
		}
		select {
		case <-ctx.Done():
			return applied, fmt.Errorf("take migration lock: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrateLockKey))
	}()

	river, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return applied, fmt.Errorf("prepare job queue migrations: %w", err)
	}
	res, err := river.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return applied, fmt.Errorf("apply job queue migrations: %w", err)
	}
	for _, v := range res.Versions {
		applied.River = append(applied.River, v.Version)
	}

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := newProvider(db)
	if err != nil {
		return applied, err
	}
	up := provider.Up
	if version > 0 {
		up = func(ctx context.Context) ([]*goose.MigrationResult, error) { return provider.UpTo(ctx, version) }
	}
	results, err := up(ctx)
	if err != nil {
		return applied, fmt.Errorf("apply migrations: %w", err)
	}
	for _, r := range results {
		applied.Switchboard = append(applied.Switchboard, r.Source.Version)
	}
	if version > 0 {
		return applied, nil
	}
	for _, t := range partition.Tables {
		done, err := partition.IsPartitioned(ctx, pool, t)
		if err != nil {
			return applied, err
		}
		if done {
			continue
		}
		convert := partition.Converter{Pool: pool, Log: logr.FromContextOrDiscard(ctx)}
		if err := convert.Convert(ctx, t); err != nil {
			return applied, fmt.Errorf("partition %s: %w", t.Name, err)
		}
		applied.Partitioned = append(applied.Partitioned, t.Name)
	}
	return applied, nil
}

// SchemaVersion reports the highest Switchboard migration applied and the highest one embedded.
func SchemaVersion(ctx context.Context, pool *pgxpool.Pool) (current, latest int64, err error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := newProvider(db)
	if err != nil {
		return 0, 0, err
	}
	if current, err = provider.GetDBVersion(ctx); err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	sources := provider.ListSources()
	if len(sources) > 0 {
		latest = sources[len(sources)-1].Version
	}
	return current, latest, nil
}

func newProvider(db *sql.DB) (*goose.Provider, error) {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("open embedded migrations: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, files,
		goose.WithTableName("switchboard_schema_migrations"))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return provider, nil
}
