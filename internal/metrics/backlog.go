package metrics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// The queues reported that are tables of their own, not River's: the webhook deliveries' and the
// agent executions'.
const (
	WebhookQueue = "webhooks"
	AgentQueue   = "agents"
)

// The states a queued item is reported in. River's failed jobs wait as retryable; a webhook
// delivery to retry is pending with a later time, reported as scheduled (as are the ones a
// worker holds while it makes their attempt); an agent execution whose run failed waits as
// retryable, and one running is not reported (unless its process died: then it is due again).
var (
	riverStates   = []string{"available", "scheduled", "retryable"}
	webhookStates = []string{"available", "scheduled"}
	agentStates   = []string{"available", "retryable"}
	// broadcastStatuses are those of the broadcasts the fan-out serves (read on its index):
	// those in review wait on the review job (the queue's figures) or an operator (the console).
	broadcastStatuses = []string{"approved", "scheduled", "sending", "paused"}
)

// Defaults of Backlog's knobs.
const (
	// DefaultMaxAge: scrapes within this long of a read share it, so that several Prometheus
	// servers (or a dashboard's refreshes) cost one read.
	DefaultMaxAge = 5 * time.Second
	// DefaultTimeout bounds a read: a scrape must not hang on a busy database.
	DefaultTimeout = 2 * time.Second
)

var (
	queueDepthDesc = prometheus.NewDesc("switchboard_queue_depth",
		"Items waiting in a queue, by state: available (due now), scheduled (due later), retryable (failed, waiting to be tried again). Queue webhooks is the webhook deliveries', agents the agent executions'.",
		[]string{"queue", "state"}, nil)
	queueAgeDesc = prometheus.NewDesc("switchboard_queue_oldest_age_seconds",
		"How long the queue's oldest available item has been due; 0 when none is.",
		[]string{"queue"}, nil)
	broadcastsDesc = prometheus.NewDesc("switchboard_broadcasts",
		"Broadcasts the fan-out serves, by status: approved, scheduled, sending, paused.",
		[]string{"status"}, nil)
	broadcastPendingDesc = prometheus.NewDesc("switchboard_broadcast_recipients_pending",
		"Recipients of sending broadcasts not yet handed to the send path.",
		nil, nil)
)

// Backlog reports the installation's backlog when scraped: the River queues' jobs, the webhook
// deliveries and the agent executions waiting, how long the oldest due one has waited, and the
// broadcasts under way. The figures are the database's, the same from every process, so one
// process reports them (app: the elected manager); Start registers it for as long as the
// process leads.
type Backlog struct {
	Pool *pgxpool.Pool
	// Registry is where Start registers the backlog.
	Registry prometheus.Registerer
	// Queues are River's queues, reported even when empty; others are reported when they hold
	// jobs.
	Queues []string
	// Horizon is how far back pending webhook deliveries are looked for: the claim's
	// (delivery.ClaimHorizon), so that only its partitions are read.
	Horizon time.Duration
	// MaxAge and Timeout: DefaultMaxAge and DefaultTimeout when zero.
	MaxAge, Timeout time.Duration
	Log             logr.Logger

	mu     sync.Mutex // held during a read: concurrent scrapes wait for it and share it
	last   backlog
	lastAt time.Time
	now    func() time.Time
}

// backlog is one read.
type backlog struct {
	depth      map[[2]string]int64 // by queue and state
	oldest     map[string]float64  // seconds, by queue
	broadcasts map[string]int64    // by status
	pending    int64
	err        error
}

// NeedLeaderElection: the figures are the installation's, reported by its leader alone.
func (b *Backlog) NeedLeaderElection() bool { return true }

// Start registers the backlog, and removes it when ctx ends (tests run one app after another in
// a process, each on its own database). A backlog already registered in this process (two apps
// on one database) is left to report.
func (b *Backlog) Start(ctx context.Context) error {
	return registerUntilDone(ctx, b.Registry, b, "backlog")
}

// registerUntilDone registers c with reg until ctx ends, then removes it. A collector of the
// same figures registered already (two apps in one test process) is left to report them.
func registerUntilDone(ctx context.Context, reg prometheus.Registerer, c prometheus.Collector, what string) error {
	if err := reg.Register(c); err != nil {
		var dup prometheus.AlreadyRegisteredError
		if !errors.As(err, &dup) {
			return fmt.Errorf("register %s metrics: %w", what, err)
		}
		<-ctx.Done()
		return nil
	}
	<-ctx.Done()
	reg.Unregister(c)
	return nil
}

// Describe sends the backlog's descriptions.
func (b *Backlog) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueDepthDesc, queueAgeDesc, broadcastsDesc, broadcastPendingDesc} {
		ch <- d
	}
}

// Collect sends the backlog as last read, reading it again when it is older than MaxAge. A read
// that fails reports nothing (the series go absent) and is logged; it is not tried again before
// MaxAge either, so that a struggling database is not asked at every scrape.
func (b *Backlog) Collect(ch chan<- prometheus.Metric) {
	r := b.current()
	if r.err != nil {
		return
	}
	for k, n := range r.depth {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	for q, s := range r.oldest {
		ch <- prometheus.MustNewConstMetric(queueAgeDesc, prometheus.GaugeValue, s, q)
	}
	for s, n := range r.broadcasts {
		ch <- prometheus.MustNewConstMetric(broadcastsDesc, prometheus.GaugeValue, float64(n), s)
	}
	ch <- prometheus.MustNewConstMetric(broadcastPendingDesc, prometheus.GaugeValue, float64(r.pending))
}

func (b *Backlog) current() backlog {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	maxAge := b.MaxAge
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	if !b.lastAt.IsZero() && now.Sub(b.lastAt) < maxAge {
		return b.last
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b.last, b.lastAt = b.read(ctx, now), now
	if b.last.err != nil && b.Log.GetSink() != nil {
		b.Log.Error(b.last.err, "read the backlog for metrics")
	}
	return b.last
}

func (b *Backlog) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// read reads the backlog in one read-only transaction: four statements, each on an index.
func (b *Backlog) read(ctx context.Context, now time.Time) backlog {
	r := backlog{depth: map[[2]string]int64{}, oldest: map[string]float64{}, broadcasts: map[string]int64{}}
	for _, q := range b.Queues {
		r.oldest[q] = 0
		for _, s := range riverStates {
			r.depth[[2]string{q, s}] = 0
		}
	}
	for _, s := range broadcastStatuses {
		r.broadcasts[s] = 0
	}
	r.err = pgx.BeginTxFunc(ctx, b.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := readRiver(ctx, tx, &r); err != nil {
			return err
		}
		q := db.Planned(tx)
		w, err := q.WebhookBacklog(ctx, db.WebhookBacklogParams{Now: now.UTC(), MadeSince: now.UTC().Add(-b.Horizon)})
		if err != nil {
			return fmt.Errorf("read webhook deliveries due: %w", err)
		}
		r.depth[[2]string{WebhookQueue, webhookStates[0]}] = w.Due
		r.depth[[2]string{WebhookQueue, webhookStates[1]}] = w.Later
		r.oldest[WebhookQueue] = max(w.OldestDueSeconds, 0)
		a, err := q.AgentExecutionBacklog(ctx, now.UTC())
		if err != nil {
			return fmt.Errorf("read agent executions due: %w", err)
		}
		r.depth[[2]string{AgentQueue, agentStates[0]}] = a.Due
		r.depth[[2]string{AgentQueue, agentStates[1]}] = a.Later
		r.oldest[AgentQueue] = max(a.OldestDueSeconds, 0)
		rows, err := q.BroadcastBacklog(ctx)
		if err != nil {
			return fmt.Errorf("read broadcasts under way: %w", err)
		}
		for _, row := range rows {
			r.broadcasts[row.Status] = row.Broadcasts
			r.pending += row.PendingRecipients
		}
		return nil
	})
	return r
}

// riverBacklog reads River's jobs waiting, by queue and state, on River's index of its fetch
// (state, queue, priority, scheduled_at, id); ages by the database's clock, which River's
// scheduled_at is set by. River's table is River's schema, not in sqlc's, hence the statement
// here.
const riverBacklog = `SELECT queue, state::text, count(*),
	coalesce(extract(epoch FROM now() - min(scheduled_at) FILTER (WHERE state = 'available')), 0)::float8
FROM river_job WHERE state IN ('available', 'scheduled', 'retryable') GROUP BY queue, state`

func readRiver(ctx context.Context, tx pgx.Tx, r *backlog) error {
	rows, err := tx.Query(ctx, riverBacklog)
	if err != nil {
		return fmt.Errorf("read job queue: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var queue, state string
		var n int64
		var oldest float64
		if err := rows.Scan(&queue, &state, &n, &oldest); err != nil {
			return fmt.Errorf("read job queue: %w", err)
		}
		if _, ok := r.oldest[queue]; !ok {
			r.oldest[queue] = 0
			for _, s := range riverStates {
				r.depth[[2]string{queue, s}] = 0
			}
		}
		r.depth[[2]string{queue, state}] = n
		if state == "available" {
			r.oldest[queue] = max(oldest, 0)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read job queue: %w", err)
	}
	return nil
}
