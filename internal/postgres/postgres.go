// Package postgres opens Switchboard's Postgres pool and applies its schema: the numbered,
// embedded migrations of migrations/ and the job queue's (River's) own, in one step.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects a pool to url and checks that the server answers.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can echo the URL, password included: say only what is wrong.
		return nil, errors.New("parse database URL: not a valid postgres:// URL or key=value string")
	}
	// pgxpool's default (4 connections on small machines) queues concurrent requests behind each
	// other; Postgres handles a few dozen connections per process well. pool_max_conns in the
	// URL still wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = 20
	}
	// Every statement is planned for its parameters. A prepared statement's generic plan, which
	// Postgres picks after five runs, prunes time partitions only when it starts, and Postgres 15
	// locks every partition and index of the plan first: a lookup by id on a year of daily
	// partitions took 2,586 locks, and a pool's worth of them at once filled the lock table
	// ("out of shared memory"; docs/data-lifecycle.md). A custom plan prunes while planning.
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, Explain(cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// Explain turns a connection failure into one line that says what failed and how to fix it.
func Explain(host string, port uint16, err error) error {
	where := net.JoinHostPort(host, fmt.Sprint(port))
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("connect to Postgres at %s: connection refused; start Postgres there or point DATABASE_URL at a running server", where)
	case errors.As(err, &pgErr) && pgErr.Code == "3D000":
		return fmt.Errorf("connect to Postgres at %s: %s; create it (createdb) or fix the database name in DATABASE_URL", where, pgErr.Message)
	case errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"):
		return fmt.Errorf("connect to Postgres at %s: authentication failed (%s); fix the user or password in DATABASE_URL", where, pgErr.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("connect to Postgres at %s: no answer within 10s; check the host and port in DATABASE_URL", where)
	default:
		return fmt.Errorf("connect to Postgres at %s: %w", where, err)
	}
}
