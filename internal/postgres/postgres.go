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
	// Statements on time-partitioned tables are planned for their parameters by db.Planned;
	// the rest keep pgx's prepared statements and Postgres's own choice of plan. A
	// plan_cache_mode in the URL (force_custom_plan plans every statement) still wins.
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
