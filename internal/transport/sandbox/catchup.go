package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// CatchUpArgs makes the sandbox's simulated steps that are overdue: those whose in-memory timer
// went with a process that stopped, or fell behind.
type CatchUpArgs struct{}

// Kind names the job kind (the name it had before the sandbox was a package of its own, so
// queued jobs keep working).
func (CatchUpArgs) Kind() string { return "message.sandbox_catch_up" }

// CatchUpEvery is how often the catch-up runs, and how late past its time a step must be
// before the catch-up makes it (the in-memory timer normally has).
const CatchUpEvery = 10 * time.Second

// catchUpBatch bounds one run; a longer backlog is taken by the runs after.
const catchUpBatch = 1000

// CatchUpWorker makes overdue sandbox steps.
type CatchUpWorker struct {
	river.WorkerDefaults[CatchUpArgs]
	Pool    *pgxpool.Pool
	Sandbox *Sandbox
	Now     func() time.Time
}

// Work moves every sandbox message whose next step is more than CatchUpEvery late, a batch at a
// time until none is left or the run has taken CatchUpEvery (the next run goes on from there).
func (w *CatchUpWorker) Work(ctx context.Context, _ *river.Job[CatchUpArgs]) error {
	began := time.Now()
	for {
		n, err := w.catchUp(ctx)
		if err != nil || n < catchUpBatch || time.Since(began) > CatchUpEvery {
			return err
		}
	}
}

// catchUp makes one batch of overdue steps and returns how many messages it read.
func (w *CatchUpWorker) catchUp(ctx context.Context) (int, error) {
	now := time.Now()
	if w.Now != nil {
		now = w.Now()
	}
	earliest := min(w.Sandbox.DeliverAfter, w.Sandbox.ReadAfter)
	rows, err := db.Planned(w.Pool).SandboxInFlight(ctx, db.SandboxInFlightParams{
		Before: now.Add(-earliest - CatchUpEvery), MaxRows: catchUpBatch, Since: now.Add(-partition.Lookback)})
	if err != nil {
		return 0, fmt.Errorf("read overdue sandbox steps: %w", err)
	}
	// Each step as a group.
	var steps []Step
	groups := map[Step][]transport.Sent{}
	for _, m := range rows {
		step, ok := w.Sandbox.Next(m.Channel, m.Status)
		if !ok || m.UpdatedAt.Add(step.After+CatchUpEvery).After(now) {
			continue
		}
		if groups[step] == nil {
			steps = append(steps, step)
		}
		groups[step] = append(groups[step], transport.Sent{MessageID: m.ID, Channel: m.Channel})
	}
	for _, step := range steps {
		if err := w.Sandbox.advance(ctx, groups[step], step.Status); err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}
