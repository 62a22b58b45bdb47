package broadcast

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// The fan-out hands a sending broadcast's recipients to the send path in chunks. A chunk is one
// transaction: its recipients are locked (another worker passes them over), each becomes a
// message through the same accept policies, routing and events as a single send, the chunk is
// accepted with Accept, and the recipients and the broadcast's counters change with it. A
// worker killed mid-chunk commits nothing of it, so the next takes the same recipients again:
// no recipient is sent twice or lost.

// DefaultChunk is how many recipients one transaction hands to the send path.
const DefaultChunk = 500

// paceWindow is how far ahead of now an address's pace may run: a paced broadcast hands over
// at most what the address may send until then, so its messages are accepted (and dispatched)
// at the address's rate, in steps of the fan-out's passes, and broadcasts sharing the address
// share that rate.
const paceWindow = time.Second

// balanceRecheck is how often a broadcast paused for its balance tries again.
const balanceRecheck = time.Minute

// SendPath is the send path a broadcast's recipients go through (message.Service).
type SendPath interface {
	BulkSender(ctx context.Context, project string, name *string) (*v1alpha1.Sender, error)
	CheckBulk(ctx context.Context, o *message.Outbound, snd *v1alpha1.Sender) error
	Accept(ctx context.Context, tx pgx.Tx, batch []message.Outbound) ([]db.Message, error)
}

// Pacer says how fast a broadcast may send from an address (registry.Registry): the key the
// address's sends share and messages per second, 0 when unpaced.
type Pacer interface {
	Pace(ctx context.Context, testMode bool, snd *v1alpha1.Sender, channel string) (string, float64, error)
}

// SetSendPath makes approved broadcasts send through p, paced by pacer.
func (s *Service) SetSendPath(p SendPath, pacer Pacer) { s.send, s.pacer = p, pacer }

// Fanout runs the fan-out in a worker process; every worker runs one, and they share the work
// through row locks.
type Fanout struct {
	Service *Service
	Log     logr.Logger
	// Idle is how long to wait when there is nothing to do (250 ms when zero).
	Idle time.Duration
	// Chunk is how many recipients one transaction takes (DefaultChunk when zero).
	Chunk int
	// Parallel is how many chunks this process works on at once (2 when zero).
	Parallel int
}

// NeedLeaderElection: every worker fans out.
func (f *Fanout) NeedLeaderElection() bool { return false }

// Start fans out until ctx ends.
func (f *Fanout) Start(ctx context.Context) error {
	idle, chunk, parallel := f.Idle, f.Chunk, f.Parallel
	if idle == 0 {
		idle = 250 * time.Millisecond
	}
	if chunk == 0 {
		chunk = DefaultChunk
	}
	if parallel == 0 {
		parallel = 2
	}
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				worked, err := f.Service.FanOutOnce(ctx, chunk)
				if err != nil && ctx.Err() == nil {
					f.Log.Error(err, "broadcast fan-out")
				}
				if worked {
					continue
				}
				select {
				case <-ctx.Done():
				case <-time.After(idle):
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// FanOutOnce starts the broadcasts that are due, hands one chunk of each sending broadcast to
// the send path, in turn, and folds the broadcasts' recorded changes into their counters; it
// reports whether it did anything. A broadcast that fails does not hold up the others: the
// errors are returned together after every broadcast had its turn.
func (s *Service) FanOutOnce(ctx context.Context, chunk int) (bool, error) {
	if s.send == nil {
		return false, errors.New("broadcasts have no send path")
	}
	now := s.now().UTC()
	q := db.Planned(s.pool)
	due, err := q.DueBroadcasts(ctx, now)
	if err != nil {
		return false, fmt.Errorf("list due broadcasts: %w", err)
	}
	worked := false
	var errs []error
	for _, id := range due {
		started, err := s.start(ctx, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("start broadcast %s: %w", id, err))
		}
		worked = worked || started
	}
	active, err := q.SendingBroadcasts(ctx)
	if err != nil {
		return worked, errors.Join(append(errs, fmt.Errorf("list sending broadcasts: %w", err))...)
	}
	for _, b := range active {
		if b.Status == StatusPaused {
			if b.PausedUntil != nil && b.PausedUntil.After(now) {
				continue
			}
			started, err := s.start(ctx, b.ID)
			if err != nil {
				errs = append(errs, fmt.Errorf("resume broadcast %s: %w", b.ID, err))
			}
			worked = worked || started
			continue
		}
		n, err := s.sendChunk(ctx, b.ID, chunk)
		if err != nil {
			errs = append(errs, fmt.Errorf("send broadcast %s: %w", b.ID, err))
		}
		worked = worked || n > 0
	}
	folded, err := s.foldAll(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	return worked || folded, errors.Join(errs...)
}

// start moves a due broadcast (approved, scheduled and due, or paused and due) to sending. A
// live broadcast reserves its estimated cost from the balance first, once; a balance that cannot
// cover it pauses the broadcast, which tries again every balanceRecheck. The broadcast is locked
// before the balance, the order a fold that settles it takes; two workers starting one broadcast
// then take turns, and the second finds it started.
func (s *Service) start(ctx context.Context, id string) (bool, error) {
	started := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.LockBroadcast(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		now := s.now().UTC()
		if !due(row, now) {
			return nil
		}
		var reserve *int64
		if row.ReservedMicros == nil && !row.TestMode && row.EstimatedCostMicros != nil && *row.EstimatedCostMicros > 0 && s.money != nil {
			acct, err := s.money.Account(ctx, row.Project)
			if err != nil {
				return err
			}
			err = billing.Reserve(ctx, tx, acct, billing.Micros(*row.EstimatedCostMicros), "broadcast "+id, now)
			var ae *apperror.Error
			if errors.As(err, &ae) && ae.Code == "insufficient_balance" {
				until := now.Add(balanceRecheck)
				_, err = q.PauseBroadcast(ctx, db.PauseBroadcastParams{ID: id, PausedUntil: &until, PauseReason: &ae.Code, Now: now})
				started = err == nil
				return err
			}
			if err != nil {
				return err
			}
			reserve = row.EstimatedCostMicros
		}
		if row, err = q.StartBroadcast(ctx, db.StartBroadcastParams{ID: id, Now: now, ReservedMicros: reserve}); err != nil {
			return err
		}
		_, err = s.move(ctx, tx, row, db.SetBroadcastStatusParams{Status: StatusSending})
		started = err == nil
		return err
	})
	if started && err == nil {
		err = s.analyzeRecipients(ctx, id)
	}
	return started, err
}

// analyzeRecipients gives the partition of a starting broadcast's recipients statistics when it
// has none or they are stale: its chunks update recipients by id, and on a partition the planner
// knows nothing of, it read the broadcast's whole pending index for every chunk of 500 (a million
// recipients: 0.7 s a chunk, 700 recipients a second). Sending goes on if it fails.
func (s *Service) analyzeRecipients(ctx context.Context, id string) error {
	at, ok := randid.TimeOf(id)
	if !ok {
		return nil // a broadcast made before ids carried their time: its recipients are long analyzed
	}
	recipients, _ := partition.Named("broadcast_contacts")
	if _, err := partition.AnalyzeAt(ctx, s.pool, recipients, at); err != nil {
		return fmt.Errorf("analyze the recipients of broadcast %s: %w", id, err)
	}
	return nil
}

// due says whether the fan-out starts b now.
func due(b db.Broadcast, now time.Time) bool {
	switch b.Status {
	case StatusApproved, StatusScheduled:
		return b.ScheduledAt == nil || !b.ScheduledAt.After(now)
	case StatusPaused:
		return b.PausedUntil == nil || !b.PausedUntil.After(now)
	}
	return false
}

func ignoreNoRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// pause is why a chunk could not be accepted: a sending limit (until it resets) or the balance.
type pause struct {
	until  time.Time
	reason string
}

func (p *pause) Error() string { return "broadcast paused: " + p.reason }

// pauseFor says whether err, Accept's refusal of a chunk, pauses the broadcast: a daily or
// monthly ceiling until its reset, the balance for balanceRecheck.
func pauseFor(err error, now time.Time) *pause {
	var ae *apperror.Error
	if !errors.As(err, &ae) {
		return nil
	}
	switch ae.Code {
	case "daily_limit_exceeded", "a2p_limit_exceeded":
		until := now.Add(time.Hour)
		if at, ok := ae.Details["resetAt"].(string); ok {
			if t, err := time.Parse(time.RFC3339, at); err == nil {
				until = t
			}
		}
		return &pause{until: until, reason: ae.Code}
	case "insufficient_balance":
		return &pause{until: now.Add(balanceRecheck), reason: ae.Code}
	}
	return nil
}

// sendChunk hands up to n pending recipients of a sending broadcast to the send path and returns
// how many it handed. A chunk a sending limit refuses is tried again in halves, so that what is
// left of the ceiling is used; when one recipient is refused the broadcast pauses until the
// limit resets (or, for the balance, a minute).
func (s *Service) sendChunk(ctx context.Context, id string, n int) (int, error) {
	for {
		done, err := s.chunk(ctx, id, n)
		var p *pause
		if !errors.As(err, &p) {
			return done, err
		}
		if n > 1 {
			n /= 2
			continue
		}
		now := s.now().UTC()
		_, err = db.Planned(s.pool).PauseBroadcast(ctx, db.PauseBroadcastParams{ID: id, PausedUntil: &p.until, PauseReason: &p.reason, Now: now})
		return 0, ignoreNoRows(err)
	}
}

// chunk is one transaction of the fan-out (see the top of this file).
func (s *Service) chunk(ctx context.Context, id string, n int) (int, error) {
	handed := 0
	var from claimMark
	var last db.BroadcastContact
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		b, err := q.BroadcastByID(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if b.Status != StatusSending {
			return nil
		}
		now := s.now().UTC()
		p, err := s.plan(ctx, b)
		if err != nil {
			return err
		}
		limit, err := p.allowance(ctx, q, now)
		if err != nil || limit == 0 {
			return err
		}
		if limit > 0 {
			n = min(n, limit)
		}
		contacts, mark, err := s.claim(ctx, q, id, n)
		if err != nil {
			return fmt.Errorf("take recipients of %s: %w", id, err)
		}
		if len(contacts) == 0 {
			s.claimed.forget(id)
			return nil
		}
		from, last = mark, contacts[len(contacts)-1]
		outs, results, err := p.messages(ctx, contacts)
		if err != nil {
			return err
		}
		if err := p.advance(ctx, q, outs); err != nil {
			return err
		}
		if err := release(ctx, tx, b, p.list, outs, now); err != nil {
			return err
		}
		msgs, err := s.send.Accept(ctx, tx, batchOf(outs))
		if err != nil {
			if pz := pauseFor(err, now); pz != nil {
				return pz
			}
			return fmt.Errorf("accept recipients of %s: %w", id, err)
		}
		emailed, err := s.chargeEmails(ctx, tx, b, p.list, msgs, now)
		if err != nil {
			if pz := pauseFor(err, now); pz != nil {
				return pz
			}
			return err
		}
		cost := int64(emailed)
		for i, m := range msgs {
			r := &results[outs[i].index]
			r.status, r.messageID = "queued", m.ID
			if m.CostMicros != nil {
				r.cost = *m.CostMicros
				cost += *m.CostMicros
			}
		}
		if err := queueContacts(ctx, q, id, results, now); err != nil {
			return err
		}
		d := counts{db.CountBroadcastParams{ID: id, Pending: -int32(len(contacts)), Queued: int32(len(msgs)),
			Failed: int32(len(contacts) - len(msgs)), Cost: cost, Now: now}}
		if err := addCounts(ctx, tx, d); err != nil {
			return err
		}
		handed = len(contacts)
		return nil
	})
	switch {
	case err != nil:
		s.claimed.rewind(id) // its recipients are pending again, behind the mark
	case handed > 0:
		s.claimed.advance(id, from, last)
	}
	return handed, err
}

// release gives back to the balance, before the chunk's messages are charged, the part of the
// broadcast's reservation they will take: their prices at the price list, but never more than is
// still reserved, so the releases of a broadcast never add up to more than it reserved (its
// prices may have risen since it reserved its estimate). What is still reserved is read as
// folded now: the broadcast's row is locked and its recorded changes folded into it in tx, and
// the release is written on the row itself rather than as a change to fold later, so another
// chunk releasing at the same time waits for this one and sees what it released. The row is
// locked before the balance, the order of start and fold. A test broadcast reserves nothing.
func release(ctx context.Context, tx pgx.Tx, b db.Broadcast, list *v1alpha1.PriceList, outs []outbound, now time.Time) error {
	// What is reserved only goes down: nothing reserved when b was read is nothing now.
	if b.ReservedMicros == nil || *b.ReservedMicros <= 0 || list == nil {
		return nil
	}
	var total billing.Micros
	emails := 0
	for _, o := range outs {
		if o.Channel == "email" {
			emails++
		}
		if !billing.Charged[o.Channel] {
			continue
		}
		q, ok, err := billing.QuoteOf(list, o.Channel, o.To, o.Text)
		if err != nil {
			return err
		}
		if ok {
			total += q.Price
		}
	}
	share, err := emailShare(list, emails)
	if err != nil {
		return err
	}
	if total += share; total <= 0 {
		return nil
	}
	q := db.Planned(tx)
	row, err := foldIn(ctx, q, counts{db.CountBroadcastParams{ID: b.ID, Now: now}})
	if err != nil {
		return err
	}
	if row.ReservedMicros == nil || *row.ReservedMicros <= 0 {
		return nil
	}
	amount := min(total, billing.Micros(*row.ReservedMicros))
	if err := billing.Release(ctx, tx, b.Project, amount, "broadcast "+b.ID, now); err != nil {
		return err
	}
	if _, err := q.CountBroadcast(ctx, db.CountBroadcastParams{ID: b.ID, Released: int64(amount), Now: now}); err != nil {
		return fmt.Errorf("release for broadcast %s: %w", b.ID, err)
	}
	return nil
}

// result is what became of one recipient of a chunk.
type result struct {
	id, status, messageID string
	cost                  int64
	code, reason          string
}

// queueContacts records a chunk's recipients of broadcast: queued with their messages, or failed
// with why.
func queueContacts(ctx context.Context, q *db.Queries, broadcast string, results []result, now time.Time) error {
	p := db.QueueBroadcastContactsParams{BroadcastID: broadcast, Now: now}
	for _, r := range results {
		p.Ids, p.Statuses, p.MessageIds = append(p.Ids, r.id), append(p.Statuses, r.status), append(p.MessageIds, r.messageID)
		p.Costs, p.ErrorCodes, p.ErrorMessages = append(p.Costs, r.cost), append(p.ErrorCodes, r.code), append(p.ErrorMessages, r.reason)
	}
	if err := q.QueueBroadcastContacts(ctx, p); err != nil {
		return fmt.Errorf("record recipients: %w", err)
	}
	return nil
}

// counts are changes to one broadcast's counters.
type counts struct{ db.CountBroadcastParams }

// addCounts records changes to broadcasts' counters in tx as deltas, for fold to add to the
// broadcasts: the broadcasts' rows are not touched, so moves of many of a broadcast's messages
// never wait on one another.
func addCounts(ctx context.Context, tx pgx.Tx, cs ...counts) error {
	var p db.AddBroadcastDeltasParams
	for _, c := range cs {
		p.BroadcastIds, p.Pending, p.Queued = append(p.BroadcastIds, c.ID), append(p.Pending, c.Pending), append(p.Queued, c.Queued)
		p.Sending, p.Delivered, p.Failed = append(p.Sending, c.Sending), append(p.Delivered, c.Delivered), append(p.Failed, c.Failed)
		p.Skipped, p.Costs, p.Released = append(p.Skipped, c.Skipped), append(p.Costs, c.Cost), append(p.Released, c.Released)
	}
	if len(p.BroadcastIds) == 0 {
		return nil
	}
	if err := db.Planned(tx).AddBroadcastDeltas(ctx, p); err != nil {
		return fmt.Errorf("count broadcasts: %w", err)
	}
	return nil
}

// foldAll folds the changes of every broadcast that has some; it reports whether there were.
func (s *Service) foldAll(ctx context.Context) (bool, error) {
	ids, err := db.Planned(s.pool).BroadcastsWithDeltas(ctx)
	if err != nil {
		return false, fmt.Errorf("list broadcasts to count: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if err := s.fold(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("count broadcast %s: %w", id, err))
		}
	}
	return len(ids) > 0, errors.Join(errs...)
}

// fold adds a broadcast's recorded changes to its counters, in one transaction, and completes
// the broadcast when nothing of it is left to hand over or waiting to go: every recipient's
// message has been sent or has failed, or the recipient was skipped. Delivery receipts still
// move its counters after that.
func (s *Service) fold(ctx context.Context, id string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now().UTC()
		row, err := foldIn(ctx, db.Planned(tx), counts{db.CountBroadcastParams{ID: id, Now: now}})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // deleted
		}
		if err != nil {
			return err
		}
		if row.Status != StatusSending || row.PendingCount > 0 || row.QueuedCount > 0 {
			return nil
		}
		if row, err = s.settle(ctx, tx, row, now); err != nil {
			return err
		}
		_, err = s.move(ctx, tx, row, db.SetBroadcastStatusParams{Status: StatusCompleted})
		return err
	})
}

// foldIn takes the broadcast's recorded changes in q's transaction and adds them, with more,
// to its counters, locking its row.
func foldIn(ctx context.Context, q *db.Queries, more counts) (db.Broadcast, error) {
	d, err := q.TakeBroadcastDeltas(ctx, more.ID)
	if err != nil {
		return db.Broadcast{}, fmt.Errorf("take changes of broadcast %s: %w", more.ID, err)
	}
	p := more.CountBroadcastParams
	p.Pending, p.Queued, p.Sending = p.Pending+d.Pending, p.Queued+d.Queued, p.Sending+d.Sending
	p.Delivered, p.Failed, p.Skipped = p.Delivered+d.Delivered, p.Failed+d.Failed, p.Skipped+d.Skipped
	p.Cost, p.Released = p.Cost+d.Cost, p.Released+d.Released
	row, err := q.CountBroadcast(ctx, p)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("count broadcast %s: %w", more.ID, err)
	}
	return row, err
}

// settle releases what a broadcast that ends still has reserved.
func (s *Service) settle(ctx context.Context, tx pgx.Tx, row db.Broadcast, now time.Time) (db.Broadcast, error) {
	if row.ReservedMicros == nil || *row.ReservedMicros <= 0 {
		return row, nil
	}
	left := *row.ReservedMicros
	if err := billing.Release(ctx, tx, row.Project, billing.Micros(left), "broadcast "+row.ID, now); err != nil {
		return row, err
	}
	return db.Planned(tx).CountBroadcast(ctx, db.CountBroadcastParams{ID: row.ID, Released: left, Now: now})
}
