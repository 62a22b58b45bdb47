package message

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Sends that arrive together are accepted in one transaction (group commit): a send waits for
// no timer, it joins the sends already waiting while acceptGroupCommitters transactions are
// under way, up to acceptGroupMax in one. Under load a transaction carries a few sends, so
// Postgres commits (and flushes its log) once for them; a lone send commits at once.
//
// One transaction at a time: a project's groups all take its limit counter last, so a second
// group under way mostly waits for the first's commit on that row, while its sends could have
// joined the next group. With one, groups are larger and statements fewer: 2,754 and 2,776
// accepted sends a second (p99 24-25 ms) against 2,105 and 2,045 with two and 1,582 and 1,579
// with four, alternated in one sitting (docs/performance.md).
const (
	acceptGroupMax        = 64
	acceptGroupCommitters = 1
	// acceptGroupTimeout bounds one group's transaction; a caller that gives up earlier does not
	// cut it short for the others.
	acceptGroupTimeout = 15 * time.Second
)

// acceptGroups gathers sends waiting for a transaction. No goroutine runs while nothing waits.
type acceptGroups struct {
	mu         sync.Mutex
	pending    []*acceptRequest
	committers int
}

type acceptRequest struct {
	ctx  context.Context
	o    Outbound
	done chan acceptResult
}

type acceptResult struct {
	msg db.Message
	err error
}

// acceptGrouped is acceptOne, in a transaction shared with the sends waiting at the same time.
func (s *Service) acceptGrouped(ctx context.Context, o Outbound) (db.Message, error) {
	r := &acceptRequest{ctx: ctx, o: o, done: make(chan acceptResult, 1)}
	g := &s.groups
	g.mu.Lock()
	g.pending = append(g.pending, r)
	start := g.committers < acceptGroupCommitters
	if start {
		g.committers++
	}
	g.mu.Unlock()
	if start {
		go s.commitGroups()
	}
	select {
	case res := <-r.done:
		return res.msg, res.err
	case <-ctx.Done():
		// The send may still be accepted (a group under way commits it): as with a connection
		// cut after the commit, the client retries with its idempotency key.
		return db.Message{}, ctx.Err()
	}
}

// commitGroups commits groups of waiting sends until none waits.
func (s *Service) commitGroups() {
	g := &s.groups
	for {
		g.mu.Lock()
		n := min(len(g.pending), acceptGroupMax)
		if n == 0 {
			g.committers--
			g.mu.Unlock()
			return
		}
		group := slices.Clone(g.pending[:n])
		g.pending = slices.Delete(g.pending, 0, n)
		g.mu.Unlock()
		s.commitGroup(group)
	}
}

// commitGroup accepts group in one transaction. When the group is rolled back (an idempotency
// key already used, a deadlock, one bad row, a connection lost before the commit) each send is
// accepted again on its own, so a failure costs only its own send.
func (s *Service) commitGroup(group []*acceptRequest) {
	live := group[:0]
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.done <- acceptResult{err: err} // gone before its turn: nothing was written
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	if len(live) == 1 {
		msg, err := s.acceptOne(live[0].ctx, live[0].o)
		live[0].done <- acceptResult{msg: msg, err: err}
		return
	}
	// Conversation rows are locked in one order by every group, so two groups cannot deadlock
	// over them.
	slices.SortStableFunc(live, func(a, b *acceptRequest) int { return cmp.Compare(a.o.ConversationID(), b.o.ConversationID()) })
	batch := make([]Outbound, len(live))
	for i, r := range live {
		batch[i] = r.o
	}
	ctx, cancel := context.WithTimeout(context.Background(), acceptGroupTimeout)
	defer cancel()
	msgs, rolledBack, err := s.acceptTx(ctx, batch)
	switch {
	case err == nil:
		for i, r := range live {
			r.done <- acceptResult{msg: msgs[i]}
		}
	case !rolledBack:
		// The transaction did not begin, or its commit got no answer and may have happened:
		// accepting again could send twice. Each caller gets the error, and retries with its
		// idempotency key.
		for _, r := range live {
			r.done <- acceptResult{err: err}
		}
	default:
		// Each again on its own, at once: a group rolled back (a project past its ceiling, a
		// used idempotency key) holds up the sends waiting behind it for one transaction's time,
		// not for one per send.
		var again sync.WaitGroup
		for _, r := range live {
			again.Go(func() {
				msg, err := s.acceptOne(r.ctx, r.o)
				r.done <- acceptResult{msg: msg, err: err}
			})
		}
		again.Wait()
	}
}
