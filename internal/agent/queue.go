package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgnotify"
)

// NotifyChannel is the Postgres channel an enqueued execution wakes the executors on.
const NotifyChannel = "switchboard_agent_executions"

// The queue's rhythm. An executor claims when woken (an execution enqueued, a run finished while
// more were due) and, without a notification, every defaultPoll: retries falling due, leases a dead
// process left, notifications lost while its listening connection was away. A run that fails on
// Switchboard's side (the database) is tried again after retryBase·2^(attempt-1), jittered, up to
// MaxAttempts runs in all; then the execution ends as error internal_error. A shutdown gives the
// runs under way defaultShutdownGrace to finish; those cut off are put back, due at once.
const (
	DefaultConcurrency   = 50
	MaxAttempts          = 5
	defaultPoll          = time.Second
	retryBase            = 2 * time.Second
	defaultShutdownGrace = 25 * time.Second
)

// Executor runs agent executions: it claims due ones from agent_executions in batches (FOR UPDATE
// SKIP LOCKED: every worker replica runs one, without coordination) and runs them concurrently.
type Executor struct {
	Runtime *Runtime
	// Concurrency is how many executions one process runs at once; 0 is DefaultConcurrency.
	Concurrency int
	Log         logr.Logger
	// poll and shutdownGrace replace defaultPoll and defaultShutdownGrace (tests).
	poll, shutdownGrace time.Duration
}

// NeedLeaderElection: every worker replica runs executions.
func (e *Executor) NeedLeaderElection() bool { return false }

// Start runs executions until ctx ends.
func (e *Executor) Start(ctx context.Context) error {
	n := e.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	log := e.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	poll, grace := cmp.Or(e.poll, defaultPoll), cmp.Or(e.shutdownGrace, defaultShutdownGrace)
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		_ = pgnotify.Listen(ctx, e.Runtime.Pool, NotifyChannel, pgnotify.Handler{
			Listening: func(bool) { poke() },
			Notify:    func(string) { poke() },
		}, log)
	}()

	// Runs outlive ctx by the shutdown's grace; work ends them after it.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	slots := make(chan struct{}, n)
	freed := make(chan struct{}, 1)
	var running sync.WaitGroup
	more := true // executions may be due that no claim took yet
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			done := make(chan struct{})
			go func() { running.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(grace):
				cancelWork()
				<-done
			}
			<-listening
			return nil
		case <-wake:
			more = true
		case <-freed:
		case <-time.After(wait):
			more = true
		}
		wait = poll
		free := cap(slots) - len(slots)
		if !more || free == 0 {
			continue
		}
		now := e.Runtime.clock().UTC()
		claimed, err := db.Planned(e.Runtime.Pool).ClaimAgentExecutions(ctx, db.ClaimAgentExecutionsParams{
			Now: now, LeaseUntil: now.Add(Lease), Max: int32(free)})
		if err != nil {
			if ctx.Err() == nil {
				log.Error(err, "claim agent executions; trying again in 1 s")
			}
			continue
		}
		more = len(claimed) == free
		for _, ex := range claimed {
			slots <- struct{}{}
			running.Add(1)
			go func() {
				defer running.Done()
				e.run(work, ex)
				<-slots
				select {
				case freed <- struct{}{}:
				default: // the loop has a wake-up pending already
				}
			}()
		}
	}
}

// run runs one claimed execution to its end, or puts it back to be tried again.
func (e *Executor) run(ctx context.Context, ex db.AgentExecution) {
	r := e.Runtime
	if ex.Attempts > MaxAttempts {
		// Its runs kept failing, or kept dying with their process: no more runs.
		out := outcome{status: StatusError, code: "internal_error",
			message: fmt.Sprintf("Switchboard could not run the execution: its runs failed %d times.", MaxAttempts)}
		if err := r.finish(context.WithoutCancel(ctx), ex, out, 0); err != nil {
			r.Log.Error(err, "end an execution out of attempts", "execution", ex.ID)
		}
		return
	}
	runCtx, cancel := context.WithTimeout(ctx, JobTimeout)
	err := r.Execute(runCtx, ex)
	cancel()
	if err == nil {
		return
	}
	cutOff := ctx.Err() != nil
	due := r.clock().UTC()
	if !cutOff {
		r.Log.Error(err, "run an execution; trying it again", "execution", ex.ID, "attempt", ex.Attempts)
		backoff := retryBase << (ex.Attempts - 1)
		due = due.Add(backoff/2 + rand.N(backoff/2+1))
	}
	putCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	if _, err := db.Planned(r.Pool).RetryAgentExecution(putCtx, db.RetryAgentExecutionParams{ID: ex.ID, Due: due,
		GivenBack: cutOff, Attempts: ex.Attempts}); err != nil && !errors.Is(err, context.Canceled) {
		// Its lease ends it anyway: the execution is claimed again then.
		r.Log.Error(err, "put back an execution to try again", "execution", ex.ID)
	}
}
