package functions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/functionrun"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// RetrySchedule is when a failed event or cron run is tried again, counted from its first
// attempt: twice, as asynchronous invocations elsewhere are (AWS Lambda's), at +1 and +5 min.
var RetrySchedule = []time.Duration{time.Minute, 5 * time.Minute}

// RunnerOptions configure the runner.
type RunnerOptions struct {
	// Concurrency is how many runs one worker makes at once (default 32).
	Concurrency int
	// Schedule replaces RetrySchedule (tests).
	Schedule []time.Duration
	// Poll is how often an idle runner looks for due runs (default 100 ms).
	Poll time.Duration
	Log  logr.Logger
}

// The lease of a claimed run: extended every leaseBeat while it lasts, so a run that takes the
// function's whole timeout keeps it, and one whose worker died is due again within runLease.
const (
	runLease  = 30 * time.Second
	leaseBeat = 10 * time.Second
)

// Runner makes the queued runs of functions (events and schedules): every worker runs one; they
// share the queue with FOR UPDATE SKIP LOCKED. A run is made at least once: a worker that dies
// during one leaves it to another when its lease ends, so handlers deduplicate by event.id.
type Runner struct {
	pool    *pgxpool.Pool
	reader  client.Reader
	invoker *Invoker
	opts    RunnerOptions
	now     func() time.Time

	mu      sync.Mutex
	running map[string]bool
}

// NewRunner returns a runner invoking through invoker.
func NewRunner(pool *pgxpool.Pool, reader client.Reader, invoker *Invoker, o RunnerOptions) *Runner {
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.Schedule == nil {
		o.Schedule = RetrySchedule
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return &Runner{pool: pool, reader: reader, invoker: invoker, opts: o, now: time.Now, running: map[string]bool{}}
}

// NeedLeaderElection: every worker runs functions.
func (r *Runner) NeedLeaderElection() bool { return false }

// Start runs functions until ctx ends; runs under way are given their function's timeout.
func (r *Runner) Start(ctx context.Context) error {
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	slots := make(chan struct{}, r.opts.Concurrency)
	var wg sync.WaitGroup
	go r.heartbeat(work)
	for {
		wait := r.opts.Poll
		if free := cap(slots) - len(slots); free > 0 {
			now := r.now().UTC()
			runs, err := db.Planned(r.pool).ClaimFunctionRuns(ctx, db.ClaimFunctionRunsParams{Now: now, LeaseUntil: now.Add(runLease), Max: int32(free)})
			switch {
			case err != nil && ctx.Err() == nil:
				r.opts.Log.Error(err, "claim function runs; trying again in 1 s")
				wait = time.Second
			case len(runs) == free:
				wait = 0
			}
			for _, run := range runs {
				slots <- struct{}{}
				wg.Add(1)
				r.track(run.ID, true)
				go func() {
					defer wg.Done()
					defer func() { <-slots }()
					defer r.track(run.ID, false)
					r.run(work, run)
				}()
			}
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-time.After(wait):
		}
	}
}

func (r *Runner) track(id string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.running[id] = true
	} else {
		delete(r.running, id)
	}
}

// heartbeat extends the leases of the runs under way.
func (r *Runner) heartbeat(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(leaseBeat):
		}
		r.mu.Lock()
		ids := make([]string, 0, len(r.running))
		for id := range r.running {
			ids = append(ids, id)
		}
		r.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		err := db.Planned(r.pool).ExtendFunctionRunLeases(ctx, db.ExtendFunctionRunLeasesParams{Ids: ids, LeaseUntil: r.now().UTC().Add(runLease)})
		if err != nil && ctx.Err() == nil {
			r.opts.Log.Error(err, "extend function run leases")
		}
	}
}

// run makes one attempt of a run and records its outcome.
func (r *Runner) run(ctx context.Context, run db.FunctionRun) {
	started := r.now()
	fail := func(reason string, retry bool) {
		r.finish(ctx, run, "", reason, retry, r.now().Sub(started))
	}
	var f v1alpha1.Function
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: run.Project, Name: run.FunctionName}, &f)
	if err != nil || string(f.UID) != run.FunctionUid || f.DeletionTimestamp != nil {
		fail("the function was deleted", false)
		return
	}
	if f.Spec.Paused {
		fail("the function is paused", false)
		return
	}
	out, err := r.invoker.Invoke(ctx, &f, run.ID, run.Event)
	switch {
	case errors.Is(err, ErrNotDeployed):
		fail(err.Error(), true)
		return
	case err != nil:
		r.opts.Log.Error(err, "function run", "run", run.ID, "function", run.FunctionName, "project", run.Project)
		fail("the platform could not run the function", true)
		return
	}
	if out.Reason == functionrun.ReasonNone {
		r.finish(ctx, run, out.Deployment, "", false, out.Duration)
		return
	}
	r.finish(ctx, run, out.Deployment, fmt.Sprintf("%s: %s", out.Reason, firstLine(out.Error)), true, out.Duration)
}

// finish records an attempt: succeeded, pending again on the schedule, or failed for good.
func (r *Runner) finish(ctx context.Context, run db.FunctionRun, deployment, reason string, retry bool, took time.Duration) {
	now := r.now().UTC()
	p := db.FinishFunctionRunParams{ID: run.ID, Attempts: run.Attempts, Status: "succeeded", NextAttemptAt: now,
		DeploymentID: nonEmpty(deployment), DurationMs: ptr(int32(took.Milliseconds())), Now: now}
	if reason != "" {
		p.Status, p.Error = "failed", &reason
		if retry && int(run.Attempts) <= len(r.opts.Schedule) {
			p.Status, p.NextAttemptAt = "pending", run.CreatedAt.Add(r.opts.Schedule[run.Attempts-1])
			if p.NextAttemptAt.Before(now) {
				p.NextAttemptAt = now
			}
		}
	}
	if err := db.Planned(r.pool).FinishFunctionRun(context.WithoutCancel(ctx), p); err != nil {
		r.opts.Log.Error(err, "record a function run", "run", run.ID)
	}
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
