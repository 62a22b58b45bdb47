package message

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"

	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// DispatchManyArgs hands test-mode messages accepted together (a broadcast chunk, or sends that
// shared a transaction) to the sandbox in one job: one read, the policies asked once for the
// batch where they can be, one send loop and one statement for every sent. Live messages keep a
// job each (DispatchArgs): a provider call is recorded before it is made, retried on its own
// backoff and paced, which a batch cannot do message by message; the sandbox needs none of that.
type DispatchManyArgs struct {
	MessageIDs []string `json:"messageIds"`
}

// Kind names the job kind.
func (DispatchManyArgs) Kind() string { return "message.dispatch_many" }

// DispatchManyWorker sends a batch of queued test-mode messages.
type DispatchManyWorker struct {
	river.WorkerDefaults[DispatchManyArgs]
	Service *Service
}

// Timeout is the single dispatch's: a batch of sandbox sends takes well under a second, and a
// job whose process died must be rescued before it is run again (worker.RescueStuckJobsAfter).
func (w *DispatchManyWorker) Timeout(*river.Job[DispatchManyArgs]) time.Duration {
	return 25 * time.Second
}

// Work dispatches the batch's messages that are still queued. A repeated job (after a crash)
// finds the ones it already recorded moved on and sends only the rest.
func (w *DispatchManyWorker) Work(ctx context.Context, job *river.Job[DispatchManyArgs]) error {
	return w.Service.dispatchMany(ctx, job.Args.MessageIDs)
}

// dispatchMany is dispatch for a batch. A message the policies or the transport refuse fails
// alone, as in dispatch; a message whose route is a provider is dispatched as a single one
// would be. An error that is not a message's own (the database) fails the job after the sends
// made so far are recorded, and the queue runs it again for the rest.
func (s *Service) dispatchMany(ctx context.Context, ids []string) error {
	from, to := partition.Bounds(ids)
	msgs, err := s.messagesIn(s.pool, from, to).GetMessagesByIDs(ctx, db.GetMessagesByIDsParams{Ids: ids, CreatedFrom: from, CreatedTo: to})
	if err != nil {
		return fmt.Errorf("read a batch of %d messages: %w", len(ids), err)
	}
	checked := map[int]map[string]*transport.Failure{}
	for i, p := range s.dispatchPolicies {
		bp, ok := p.(BatchDispatchPolicy)
		if !ok {
			continue
		}
		fs, err := bp.CheckDispatchAll(ctx, msgs)
		if err != nil {
			return err
		}
		checked[i] = make(map[string]*transport.Failure, len(msgs))
		for j, f := range fs {
			if f != nil {
				checked[i][msgs[j].ID] = f
			}
		}
	}
	var (
		sent     []sentStep
		by       = map[transport.Transport][]transport.Sent{}
		firstErr error
	)
	for _, m := range msgs {
		if err := s.dispatchOne(ctx, m, checked, &sent, by); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if _, err := s.applyAll(ctx, transport.StatusSent, sent); err != nil {
		return err
	}
	for t, followed := range by {
		follow(t, followed)
	}
	return firstErr
}

// dispatchOne is one message of a batch: a sandbox send is added to sent (recorded with the
// batch) and to by (followed once recorded).
func (s *Service) dispatchOne(ctx context.Context, m db.Message, checked map[int]map[string]*transport.Failure,
	sent *[]sentStep, by map[transport.Transport][]transport.Sent) error {
	routes, done, err := s.prepare(ctx, m, checked)
	if err != nil || done {
		return err
	}
	route := routes[0]
	if route.External || len(routes) > 1 {
		return s.dispatch(ctx, m.ID)
	}
	out, err := s.outbound(ctx, m, route)
	if f := transport.AsFailure(err); f != nil {
		return s.fail(ctx, m, f)
	}
	if err != nil {
		return err
	}
	res, err := route.Transport.Send(ctx, out)
	if f := transport.AsFailure(err); f != nil {
		return s.fail(ctx, m, f)
	}
	if err != nil {
		return fmt.Errorf("send message %s: %w", m.ID, err)
	}
	*sent = append(*sent, sentStep{id: m.ID, providerMessageID: res.ProviderMessageID})
	by[route.Transport] = append(by[route.Transport], transport.Sent{MessageID: m.ID, Channel: m.Channel})
	return nil
}

// follow hands the messages t sent to it, when it reports their later steps itself.
func follow(t transport.Transport, sent []transport.Sent) {
	switch f := t.(type) {
	case transport.GroupFollower:
		f.FollowAll(sent)
	case transport.Follower:
		for _, m := range sent {
			f.Follow(m.MessageID, m.Channel)
		}
	}
}

// sentStep is a message a transport took, with the provider's id for it.
type sentStep struct {
	id, providerMessageID string
}

// AdvanceAll moves the messages to status (a forward step that is not a failure: the sandbox's
// delivered and read), each with its events, in one transaction.
func (s *Service) AdvanceAll(ctx context.Context, ids []string, status string) error {
	steps := make([]sentStep, len(ids))
	for i, id := range ids {
		steps[i].id = id
	}
	_, err := s.applyAll(ctx, status, steps)
	return err
}

// applyAllIn moves the messages of p to its status inside tx, as one statement, and writes the
// events of those that moved, one statement a project; the broadcast ones are added to f.
func (s *Service) applyAllIn(ctx context.Context, tx pgx.Tx, status string, p db.SetMessagesStatusParams, f *followed) ([]db.Message, error) {
	p.UpdatedAt = s.now().UTC()
	p.CreatedFrom, p.CreatedTo = partition.Bounds(p.Ids)
	rows, err := s.messagesIn(tx, p.CreatedFrom, p.CreatedTo).SetMessagesStatus(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("move %d messages to %s: %w", len(p.Ids), status, err)
	}
	moved := make([]db.Message, len(rows))
	byProject := map[string][]delivery.Event{}
	var projects []string
	for i, r := range rows {
		m := db.Message(r)
		moved[i] = m
		if _, seen := byProject[m.Project]; !seen {
			projects = append(projects, m.Project)
		}
		byProject[m.Project] = append(byProject[m.Project], events(m)...)
		if m.BroadcastContactID != nil {
			*f = append(*f, m)
		}
	}
	for _, pr := range projects {
		if _, err := s.deliveries.EnqueueAll(ctx, tx, byProject[pr]...); err != nil {
			return nil, err
		}
	}
	return moved, nil
}

// applyAllAttempts bounds the runs of one batch that deadlocks with another over a contact's
// row; each run is one statement, so a run again is cheap.
const applyAllAttempts = 3

// applyAll is ApplyStatus for many messages moving to one status without an error, as one
// statement with the events of every message that moved and their broadcast recipients
// followed, in one transaction. Messages not in a status it follows stay as they are.
func (s *Service) applyAll(ctx context.Context, status string, steps []sentStep) ([]db.Message, error) {
	from, ok := statusFrom[status]
	if !ok || status == transport.StatusFailed {
		return nil, fmt.Errorf("apply status to a batch: %q is not a forward step", status)
	}
	if len(steps) == 0 {
		return nil, nil
	}
	// Messages in id order, as the status batcher locks them.
	sort.Slice(steps, func(i, j int) bool { return steps[i].id < steps[j].id })
	p := db.SetMessagesStatusParams{Ids: make([]string, len(steps)), ProviderMessageIds: make([]string, len(steps)),
		Status: status, FromStatuses: from}
	for i, st := range steps {
		p.Ids[i], p.ProviderMessageIds[i] = st.id, st.providerMessageID
	}
	var moved []db.Message
	var err error
	for attempt := 1; ; attempt++ {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var f followed
			var err error
			if moved, err = s.applyAllIn(ctx, tx, status, p, &f); err != nil {
				return err
			}
			return s.follow(ctx, tx, f)
		})
		var pgErr *pgconn.PgError
		if err == nil || attempt == applyAllAttempts || !errors.As(err, &pgErr) || pgErr.Code != "40P01" {
			return moved, err
		}
	}
}
