// Package worker runs the job queue (River on Postgres): it registers every job kind's worker and
// works the queues. The domain packages own their job kinds; this package only assembles them.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/broadcast"
	"github.com/switchboard-io/switchboard/internal/erasure"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/transport/sandbox"
)

// Deps are the workers of every job kind.
type Deps struct {
	Keys     *apikey.Service
	Dispatch *message.DispatchWorker
	// DispatchMany sends test-mode broadcast chunks (message.DispatchManyArgs).
	DispatchMany *message.DispatchManyWorker
	// CatchUp makes the sandbox's overdue steps; it runs every sandbox.CatchUpEvery.
	CatchUp *sandbox.CatchUpWorker
	// BroadcastReview reviews broadcasts sent for review.
	BroadcastReview *broadcast.ReviewWorker
	// Agents complete the execution jobs an earlier version enqueued (agent.Worker).
	Agents *agent.Worker
	// Knowledge processes agents' knowledge documents.
	Knowledge *knowledge.Worker
	// Erasures erase deleted contacts' persons.
	Erasures *erasure.Worker
	// Reconcile asks Providers about live messages whose status callback was lost; it runs
	// every message.ReconcileEvery.
	Reconcile *message.ReconcileWorker
}

// Options tune the queues.
type Options struct {
	// Concurrency is how many jobs of the default queue one process works at once. Webhook
	// deliveries are a queue of their own (delivery.Worker).
	Concurrency int
	// ReconcileEvery is how often live messages left sent are asked about (message.ReconcileEvery
	// when zero).
	ReconcileEvery time.Duration
}

// Jobs of a process that died (kill -9, a lost node) stay "running" until the queue rescues them:
// after RescueStuckJobsAfter, checked every 30 s by River's rescuer, they are run again. Every
// job kind's timeout (JobTimeout by default; dispatch 25 s) stays below it, so
// a live job is never rescued, and a crash costs about a minute, not River's default hour. Agent
// executions, whose model may take minutes, are a queue of their own with leases
// (agent.Executor).
const (
	JobTimeout           = 25 * time.Second
	RescueStuckJobsAfter = 40 * time.Second
)

func workers(d Deps) *river.Workers {
	w := river.NewWorkers()
	river.AddWorker(w, &apikey.TouchWorker{Keys: d.Keys})
	if d.Dispatch != nil {
		river.AddWorker(w, d.Dispatch)
		river.AddWorker(w, d.DispatchMany)
		river.AddWorker(w, d.CatchUp)
	}
	if d.BroadcastReview != nil {
		river.AddWorker(w, d.BroadcastReview)
	}
	if d.Agents != nil {
		river.AddWorker(w, d.Agents)
	}
	if d.Knowledge != nil {
		river.AddWorker(w, d.Knowledge)
	}
	if d.Erasures != nil {
		river.AddWorker(w, d.Erasures)
	}
	if d.Reconcile != nil {
		river.AddWorker(w, d.Reconcile)
	}
	return w
}

// NewClient returns a River client that works every job kind (work true) or only inserts (the api
// role, which enqueues but leaves the working to workers).
func NewClient(pool *pgxpool.Pool, d Deps, o Options, work bool, log logr.Logger) (*river.Client[pgx.Tx], error) {
	cfg := &river.Config{
		Logger:  slog.New(logr.ToSlogHandler(log.WithName("queue"))),
		Workers: workers(d),
		// A queue fetches at most once per cooldown, so throughput is capped at
		// MaxWorkers/cooldown: River's 100 ms default caps 50 workers at 500 jobs/s.
		FetchCooldown:        20 * time.Millisecond,
		JobTimeout:           JobTimeout,
		RescueStuckJobsAfter: RescueStuckJobsAfter,
	}
	if work {
		if o.Concurrency <= 0 {
			o.Concurrency = 50
		}
		// One run at a time across replicas: River runs periodic jobs on its elected leader.
		if d.CatchUp != nil {
			cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(sandbox.CatchUpEvery),
				func() (river.JobArgs, *river.InsertOpts) { return sandbox.CatchUpArgs{}, nil },
				&river.PeriodicJobOpts{RunOnStart: true}))
		}
		if d.Reconcile != nil {
			every := message.ReconcileEvery
			if o.ReconcileEvery > 0 {
				every = o.ReconcileEvery
			}
			cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(every),
				func() (river.JobArgs, *river.InsertOpts) { return message.ReconcileArgs{}, nil }, nil))
		}
		cfg.Queues = map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: o.Concurrency},
		}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("create job queue client: %w", err)
	}
	return client, nil
}

// Runner works the queues as a manager runnable; every replica works, none needs to lead.
type Runner struct {
	Client *river.Client[pgx.Tx]
}

// Start works jobs until ctx ends, then lets running jobs finish.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.Client.Start(ctx); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	<-ctx.Done()
	// Jobs get a while to finish; those still running after it are rescued and retried later.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 25*time.Second)
	defer cancel()
	if err := r.Client.Stop(stopCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stop job queue: %w", err)
	}
	return nil
}

// NeedLeaderElection: every worker replica works the queue.
func (r *Runner) NeedLeaderElection() bool { return false }
