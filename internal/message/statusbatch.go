package message

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Status changes that arrive together share a transaction: at most statusBatchMax of them,
// gathered for at most statusBatchDelay after the first. A busy process then commits a few
// dozen times a second instead of once per change, and waits a few milliseconds longer.
const (
	statusBatchMax   = 100
	statusBatchDelay = 5 * time.Millisecond
)

// StatusBatcher applies status changes in batches, each change with its event as ApplyStatus
// does. A batch that fails (one bad change, or a deadlock with another batch over a contact's
// row) is applied again change by change, so a failure costs only its own change. Until Start
// runs, and after it returns, Apply is ApplyStatus.
type StatusBatcher struct {
	s       *Service
	in      chan statusRequest
	running atomic.Bool
	stopped chan struct{}
}

type statusRequest struct {
	change StatusChange
	done   chan statusResult
}

type statusResult struct {
	moved bool
	err   error
}

// NewStatusBatcher returns a batcher of s's status changes; Start runs it.
// The dispatcher records what its transports answer through it too.
func (s *Service) NewStatusBatcher() *StatusBatcher {
	b := &StatusBatcher{s: s, in: make(chan statusRequest), stopped: make(chan struct{})}
	s.statuses = b
	return b
}

// applyStatus is ApplyStatus through the process's batcher when it has one: a worker sending a
// broadcast then commits its messages' outcomes a batch at a time, not one by one.
func (s *Service) applyStatus(ctx context.Context, ch StatusChange) (bool, error) {
	if s.statuses != nil {
		return s.statuses.Apply(ctx, ch)
	}
	return s.ApplyStatus(ctx, ch)
}

// Apply moves a message to a status with its event, in a batch, and reports whether it moved.
func (b *StatusBatcher) Apply(ctx context.Context, ch StatusChange) (bool, error) {
	if !b.running.Load() {
		return b.s.ApplyStatus(ctx, ch)
	}
	r := statusRequest{change: ch, done: make(chan statusResult, 1)}
	select {
	case b.in <- r:
	case <-b.stopped:
		return b.s.ApplyStatus(ctx, ch)
	case <-ctx.Done():
		return false, ctx.Err()
	}
	res := <-r.done
	return res.moved, res.err
}

// NeedLeaderElection: every process batches its own changes.
func (b *StatusBatcher) NeedLeaderElection() bool { return false }

// statusAppliers is how many batches a process applies at once: while one commits, the next
// gathers and runs, so a burst (a broadcast's dispatch recording its sends) is not held to one batch's
// round trips at a time. Batches lock their messages in one order, and a batch that still
// deadlocks is applied change by change.
const statusAppliers = 2

// Start batches until ctx ends; batches under way are finished.
func (b *StatusBatcher) Start(ctx context.Context) error {
	b.running.Store(true)
	defer close(b.stopped)
	defer b.running.Store(false)
	var wg sync.WaitGroup
	for range statusAppliers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.gather(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// gather takes batches off the queue and applies them until ctx ends.
func (b *StatusBatcher) gather(ctx context.Context) {
	for {
		var first statusRequest
		select {
		case <-ctx.Done():
			return
		case first = <-b.in:
		}
		batch := []statusRequest{first}
		deadline := time.After(statusBatchDelay)
	gather:
		for len(batch) < statusBatchMax {
			select {
			case r := <-b.in:
				batch = append(batch, r)
			case <-deadline:
				break gather
			}
		}
		b.apply(context.WithoutCancel(ctx), batch)
	}
}

// apply runs a batch in one transaction, in message id order (changes by provider id last) so
// that concurrent batches lock messages in one order, each message's changes in arrival order.
func (b *StatusBatcher) apply(ctx context.Context, batch []statusRequest) {
	sort.SliceStable(batch, func(i, j int) bool {
		a, c := batch[i].change.MessageID, batch[j].change.MessageID
		return a != "" && (c == "" || a < c)
	})
	moved := make([]bool, len(batch))
	grouped, inGroup := groupSteps(batch)
	err := pgx.BeginFunc(ctx, b.s.pool, func(tx pgx.Tx) error {
		var f followed
		for _, g := range grouped {
			rows, err := b.s.applyAllIn(ctx, tx, g.status, g.params, &f)
			if err != nil {
				return err
			}
			took := make(map[string]bool, len(rows))
			for _, m := range rows {
				took[m.ID] = true
			}
			for _, i := range g.at {
				moved[i] = took[batch[i].change.MessageID]
			}
		}
		for i, r := range batch {
			if _, ok := statusFrom[r.change.Status]; !ok || inGroup[i] {
				continue // refused below, on its own; or moved with its group
			}
			m, err := b.s.applyIn(ctx, tx, r.change, &f)
			if err != nil {
				return err
			}
			moved[i] = m
		}
		return b.s.follow(ctx, tx, f)
	})
	for i, r := range batch {
		if err == nil {
			if _, ok := statusFrom[r.change.Status]; ok {
				r.done <- statusResult{moved: moved[i]}
				continue
			}
		}
		m, err := b.s.ApplyStatus(ctx, r.change)
		r.done <- statusResult{moved: m, err: err}
	}
}

// stepGroup is the changes of a batch that move to one status as one statement: forward steps
// without an error (sent, delivered, read), of messages that have no other change in the batch.
type stepGroup struct {
	status string
	params db.SetMessagesStatusParams
	at     []int // their places in the batch
}

// groupSteps groups the batch's changes that can move together, in the batch's order (message
// id order), and which of the batch's changes they hold; a message with two changes in the
// batch keeps them one by one, in order.
func groupSteps(batch []statusRequest) ([]stepGroup, []bool) {
	changes := map[string]int{}
	for _, r := range batch {
		changes[r.change.MessageID]++
	}
	var out []stepGroup
	inGroup := make([]bool, len(batch))
	for _, status := range []string{transport.StatusSent, transport.StatusDelivered, transport.StatusRead} {
		g := stepGroup{status: status, params: db.SetMessagesStatusParams{Status: status, FromStatuses: statusFrom[status]}}
		for i, r := range batch {
			ch := r.change
			if ch.Status != status || ch.MessageID == "" || ch.Failure != nil || changes[ch.MessageID] != 1 {
				continue
			}
			g.params.Ids = append(g.params.Ids, ch.MessageID)
			g.params.ProviderMessageIds = append(g.params.ProviderMessageIds, ch.ProviderMessageID)
			g.at = append(g.at, i)
		}
		if len(g.at) > 1 { // one change alone goes its own way: no gain
			out = append(out, g)
			for _, i := range g.at {
				inGroup[i] = true
			}
		}
	}
	return out, inGroup
}
