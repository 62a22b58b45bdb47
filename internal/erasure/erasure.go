// Package erasure erases a person from a project: their addresses, names and what they wrote or
// were sent, in every table and partition, in bounded batches that a killed run resumes. The
// audit record it leaves names no personal data. docs/data-lifecycle.md says what each table
// keeps after an erasure and why.
package erasure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// DefaultBatch is how many messages one transaction erases.
const DefaultBatch = 1000

// Request names a person to erase from a project.
type Request struct {
	Project string
	// TestMode limits the erasure to one mode's data (an API key's); nil erases both.
	TestMode *bool
	// ContactID is a contact whose channels' addresses are the person's (optional).
	ContactID string
	// Addresses are the person's phone numbers, email addresses and chat ids (optional).
	Addresses []string
	// RequestedBy says who asked, for the audit record: "api-key:<id>" or "operator".
	RequestedBy string
}

// Service runs erasures.
type Service struct {
	Pool *pgxpool.Pool
	Log  logr.Logger
	// Batch is how many messages one transaction erases (DefaultBatch when zero).
	Batch int
	Now   func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// ErrNothing is a request that names no address.
var ErrNothing = errors.New("the erasure names no address: give a contact with channels, or addresses")

// Start records an erasure in tx: the audit record, and the addresses it erases for as long as
// it runs. It returns the erasure's id. Run (or the queue's Worker) does the work.
func (s *Service) Start(ctx context.Context, tx pgx.Tx, req Request) (string, error) {
	q := db.Planned(tx)
	addresses := make([]string, 0, len(req.Addresses))
	for _, a := range req.Addresses {
		addresses = append(addresses, addr.Key(a))
	}
	if req.ContactID != "" {
		of, err := q.ContactAddresses(ctx, db.ContactAddressesParams{ContactID: req.ContactID, Project: req.Project, TestMode: req.TestMode})
		if err != nil {
			return "", fmt.Errorf("read the contact's addresses: %w", err)
		}
		addresses = append(addresses, of...)
	}
	slices.Sort(addresses)
	addresses = slices.Compact(addresses)
	if len(addresses) == 0 || addresses[0] == "" {
		return "", ErrNothing
	}
	id, err := randid.Timed("era_", s.now())
	if err != nil {
		return "", err
	}
	if err := q.InsertErasure(ctx, db.InsertErasureParams{ID: id, Project: req.Project, TestMode: req.TestMode,
		RequestedBy: req.RequestedBy, CreatedAt: s.now()}); err != nil {
		return "", fmt.Errorf("record erasure: %w", err)
	}
	if err := q.InsertErasureTargets(ctx, db.InsertErasureTargetsParams{ErasureID: id, Addresses: addresses}); err != nil {
		return "", fmt.Errorf("record erasure: %w", err)
	}
	return id, nil
}

// step is one statement of an erasure, run in a transaction of its own with its count.
type step struct {
	what string
	run  func(ctx context.Context, q *db.Queries, e target) (int64, error)
}

// target is what an erasure works on.
type target struct {
	project       string
	testMode      *bool
	addresses     []string
	conversations []string
}

// steps are an erasure's statements after its messages, in order: what refers to the
// conversations goes before them.
var steps = []step{
	{"agent records", func(ctx context.Context, q *db.Queries, e target) (int64, error) {
		return q.EraseAgentRecords(ctx, db.EraseAgentRecordsParams{Project: e.project, Conversations: e.conversations})
	}},
	{"calls", func(ctx context.Context, q *db.Queries, e target) (int64, error) {
		return q.EraseCalls(ctx, db.EraseCallsParams{Project: e.project, TestMode: e.testMode, Addresses: e.addresses})
	}},
	{"webhook deliveries", func(ctx context.Context, q *db.Queries, e target) (int64, error) {
		return q.EraseWebhookDeliveries(ctx, db.EraseWebhookDeliveriesParams{Project: e.project, Addresses: e.addresses})
	}},
	{"function and tool records", func(ctx context.Context, q *db.Queries, e target) (int64, error) {
		return q.EraseFunctionRecords(ctx, db.EraseFunctionRecordsParams{Project: e.project, Addresses: e.addresses})
	}},
	{"broadcast recipients", func(ctx context.Context, q *db.Queries, e target) (int64, error) {
		return q.EraseBroadcastRecipients(ctx, db.EraseBroadcastRecipientsParams{Project: e.project, TestMode: e.testMode, Addresses: e.addresses})
	}},
	{"opt-outs and suppressions", func(ctx context.Context, q *db.Queries, e target) (int64, error) {
		return q.EraseOptOuts(ctx, db.EraseOptOutsParams{Project: e.project, TestMode: e.testMode, Addresses: e.addresses})
	}},
	{"contacts", func(ctx context.Context, q *db.Queries, e target) (int64, error) {
		return q.EraseContacts(ctx, db.EraseContactsParams{Project: e.project, TestMode: e.testMode, Addresses: e.addresses})
	}},
	{"conversations", func(ctx context.Context, q *db.Queries, e target) (int64, error) {
		return q.EraseConversations(ctx, db.EraseConversationsParams{Project: e.project, Conversations: e.conversations})
	}},
}

// ErrUnfinished is a Run that reached its deadline with work left; running it again goes on.
var ErrUnfinished = errors.New("erasure not finished yet")

// Run works erasure id until it is done, or until ctx's deadline comes (ErrUnfinished) or ctx
// ends. Every batch commits with its count in the audit record, and what it erased no longer
// matches, so a run cut short anywhere (a kill included) is resumed by the next one. A finished
// erasure runs again as nothing.
func (s *Service) Run(ctx context.Context, id string) error {
	q := db.Planned(s.Pool)
	e, err := q.GetErasure(ctx, id)
	if err != nil {
		return fmt.Errorf("read erasure %s: %w", id, err)
	}
	if e.State == "done" {
		return nil
	}
	addresses, err := q.ErasureTargets(ctx, id)
	if err != nil {
		return fmt.Errorf("read erasure %s: %w", id, err)
	}
	t := target{project: e.Project, testMode: e.TestMode, addresses: addresses}
	if t.conversations, err = q.ErasureConversations(ctx, db.ErasureConversationsParams{Project: e.Project, TestMode: e.TestMode, Addresses: addresses}); err != nil {
		return fmt.Errorf("find the conversations of erasure %s: %w", id, err)
	}
	batch := s.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	deadline, bounded := ctx.Deadline()
	for {
		if bounded && time.Until(deadline) < 2*time.Second {
			return ErrUnfinished
		}
		var n int64
		err := s.counted(ctx, id, "messages", func(q *db.Queries) (int64, error) {
			n, err = q.EraseMessageBatch(ctx, db.EraseMessageBatchParams{Project: t.project, TestMode: t.testMode,
				Conversations: t.conversations, BatchSize: int32(batch)})
			return n, err
		})
		if err != nil {
			return err
		}
		if n < int64(batch) {
			break
		}
	}
	for _, st := range steps {
		if err := s.counted(ctx, id, st.what, func(q *db.Queries) (int64, error) { return st.run(ctx, q, t) }); err != nil {
			return err
		}
	}
	finished := s.now()
	if err := q.FinishErasure(ctx, db.FinishErasureParams{ID: id, FinishedAt: &finished}); err != nil {
		return fmt.Errorf("finish erasure %s: %w", id, err)
	}
	s.Log.Info("erased a person", "erasure", id, "project", e.Project)
	return nil
}

// counted runs one step and adds its rows to the audit record, in one transaction.
func (s *Service) counted(ctx context.Context, id, what string, run func(q *db.Queries) (int64, error)) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		n, err := run(q)
		if err != nil {
			return fmt.Errorf("erase %s: %w", what, err)
		}
		if n == 0 {
			return nil
		}
		return q.AddErasureCount(ctx, db.AddErasureCountParams{ID: id, What: what, N: n})
	})
}

// Args is the queue's job that runs an erasure.
type Args struct {
	ID string `json:"id"`
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return "contact.erase" }

// Worker runs erasures from the queue, a bounded slice of work at a time: an erasure of a
// person with many messages goes on in the next run, and one whose worker died is taken over
// when the queue rescues its job.
type Worker struct {
	river.WorkerDefaults[Args]
	Service *Service
}

// Slice is how long one run of the job works before it makes way (below the queue's job
// timeout).
const Slice = 20 * time.Second

// Work implements river.Worker.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	ctx, cancel := context.WithTimeout(ctx, Slice)
	defer cancel()
	err := w.Service.Run(ctx, job.Args.ID)
	if errors.Is(err, ErrUnfinished) {
		return river.JobSnooze(time.Millisecond)
	}
	return err
}

// Queue starts erasures for the queue's workers to run: the API's contact deletion.
type Queue struct {
	Service *Service
	Client  *river.Client[pgx.Tx]
}

// Erase records the erasure of req in tx and queues the job that runs it, committed together.
func (q *Queue) Erase(ctx context.Context, tx pgx.Tx, req Request) error {
	id, err := q.Service.Start(ctx, tx, req)
	if err != nil {
		return err
	}
	if _, err := q.Client.InsertTx(ctx, tx, Args{ID: id}, nil); err != nil {
		return fmt.Errorf("queue erasure %s: %w", id, err)
	}
	return nil
}
