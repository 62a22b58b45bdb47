package message

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/sandbox"
)

// DispatchArgs hands a queued message to its transport.
type DispatchArgs struct {
	MessageID string `json:"messageId"`
}

// Kind names the job kind.
func (DispatchArgs) Kind() string { return "message.dispatch" }

// statusFrom says from which statuses a message may move to each status: a late or repeated
// step is ignored.
var statusFrom = map[string][]string{
	"sent":      {"queued", "sending"},
	"delivered": {"sent"},
	"read":      {"sent", "delivered"},
	"failed":    {"queued", "sending", "sent"},
}

// DispatchWorker sends queued messages.
type DispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	Service   *Service
	Transport transport.Transport
}

// Work sends the message and records the outcome with its event.
func (w *DispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	s := w.Service
	m, err := db.New(s.pool).GetMessageByID(ctx, job.Args.MessageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read message %s: %w", job.Args.MessageID, err)
	}
	if m.Status != "queued" {
		return nil // already handed over: a retried job must not send twice
	}
	attachments, err := outboundAttachments(ctx, db.New(s.pool), m)
	if err != nil {
		return err
	}
	res, err := w.Transport.Send(ctx, transport.Outbound{ID: m.ID, Channel: m.Channel, MessageType: m.MessageType,
		To: m.Recipient, From: m.Originator, Text: deref(m.Body), Subject: deref(m.Subject), Attachments: attachments})
	if failure := transport.AsFailure(err); failure != nil {
		if done, err := s.fallBack(ctx, m, failure); done || err != nil {
			return err
		}
		return s.move(ctx, m.ID, "failed", nil, failure, nil)
	}
	if err != nil {
		return fmt.Errorf("send message %s: %w", m.ID, err) // retried by the queue
	}
	return s.move(ctx, m.ID, "sent", &res.ProviderMessageID, nil, res.Steps)
}

// move changes a message's status with its event in one transaction, then plays the
// transport's next planned step (the sandbox's) in memory when it is due. A step lost with the
// process is made by the sandbox's catch-up (SandboxCatchUpWorker); statuses only move forward,
// so a step made twice is made once.
func (s *Service) move(ctx context.Context, id, status string, providerID *string, failure *transport.Failure, next []transport.Step) error {
	moved := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		p := db.SetMessageStatusParams{ID: id, Status: status, ProviderMessageID: providerID, UpdatedAt: s.now().UTC(),
			FromStatuses: statusFrom[status]}
		if failure != nil {
			p.ErrorCode, p.ErrorMessage = &failure.Code, &failure.Message
			if failure.ProviderCode != "" {
				p.ErrorProviderCode = &failure.ProviderCode
			}
		}
		row, err := db.New(tx).SetMessageStatus(ctx, p)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // not from a status this one follows: stale or repeated
		}
		if err != nil {
			return fmt.Errorf("move message %s to %s: %w", id, status, err)
		}
		moved = true
		return s.event(ctx, tx, db.Message(row)) // the same columns: the statement returns the moved row
	})
	if err == nil && moved && len(next) > 0 {
		step := next[0]
		time.AfterFunc(step.After, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// A failure here is not lost: the catch-up makes the same step later.
			_ = s.move(ctx, id, step.Status, nil, nil, next[1:])
		})
	}
	return err
}

// SandboxCatchUpArgs makes the sandbox's simulated steps that are overdue: those whose
// in-memory timer went with a process that stopped, or fell behind.
type SandboxCatchUpArgs struct{}

// Kind names the job kind.
func (SandboxCatchUpArgs) Kind() string { return "message.sandbox_catch_up" }

// SandboxCatchUpEvery is how often the catch-up runs, and how late past its time a step must be
// before the catch-up makes it (the in-memory timer normally has).
const SandboxCatchUpEvery = 10 * time.Second

// sandboxCatchUpBatch bounds one run; a longer backlog is taken by the runs after.
const sandboxCatchUpBatch = 1000

// SandboxCatchUpWorker makes overdue sandbox steps.
type SandboxCatchUpWorker struct {
	river.WorkerDefaults[SandboxCatchUpArgs]
	Service *Service
	Sandbox sandbox.Sandbox
}

// Work moves every sandbox message whose next step is more than SandboxCatchUpEvery late.
func (w *SandboxCatchUpWorker) Work(ctx context.Context, _ *river.Job[SandboxCatchUpArgs]) error {
	s := w.Service
	now := s.now()
	earliest := min(w.Sandbox.DeliverAfter, w.Sandbox.ReadAfter)
	rows, err := db.New(s.pool).SandboxInFlight(ctx, db.SandboxInFlightParams{
		Before: now.Add(-earliest - SandboxCatchUpEvery), MaxRows: sandboxCatchUpBatch})
	if err != nil {
		return fmt.Errorf("read overdue sandbox steps: %w", err)
	}
	for _, m := range rows {
		step, ok := w.Sandbox.Next(m.Channel, m.Status)
		if !ok || m.UpdatedAt.Add(step.After+SandboxCatchUpEvery).After(now) {
			continue
		}
		var rest []transport.Step
		if after, ok := w.Sandbox.Next(m.Channel, step.Status); ok {
			rest = []transport.Step{after}
		}
		if err := s.move(ctx, m.ID, step.Status, nil, nil, rest); err != nil {
			return err
		}
	}
	return nil
}
