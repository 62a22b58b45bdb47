package metrics

import (
	"context"

	"github.com/IBM/pgxpoolprometheus"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Pool reports the process's Postgres connection pool (pgxpool_*, github.com/IBM/pgxpoolprometheus):
// connections acquired, idle and in all against the most it may open, acquisitions, and how
// often and how long they waited for a connection because every one was taken, the sign that
// a process does more at once than its pool serves.
type Pool struct {
	Pool *pgxpool.Pool
	// Registry is where Start registers the pool's figures.
	Registry prometheus.Registerer
}

// NeedLeaderElection: every process reports its own pool.
func (p *Pool) NeedLeaderElection() bool { return false }

// Start registers the pool's figures, and removes them when ctx ends (tests run one app after
// another in a process, each with its own pool). A pool already reported in this process (two
// apps at once) is left to report.
func (p *Pool) Start(ctx context.Context) error {
	return registerUntilDone(ctx, p.Registry, pgxpoolprometheus.NewCollector(p.Pool, nil), "connection pool")
}
