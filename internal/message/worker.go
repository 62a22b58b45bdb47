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
)

// DispatchArgs hands a queued message to its transport.
type DispatchArgs struct {
	MessageID string `json:"messageId"`
}

// Kind names the job kind.
func (DispatchArgs) Kind() string { return "message.dispatch" }

// StatusArgs moves a message to a status its transport announced, then schedules the next.
type StatusArgs struct {
	MessageID string           `json:"messageId"`
	Status    string           `json:"status"`
	Next      []transport.Step `json:"next,omitempty"`
}

// Kind names the job kind.
func (StatusArgs) Kind() string { return "message.status" }

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
	if err != nil {
		return fmt.Errorf("send message %s: %w", m.ID, err) // retried by the queue
	}
	if res.Failure != nil {
		if done, err := s.fallBack(ctx, m, res.Failure); done || err != nil {
			return err
		}
		return s.move(ctx, m.ID, "failed", nil, res.Failure, nil)
	}
	return s.move(ctx, m.ID, "sent", &res.ProviderMessageID, nil, res.Steps)
}

// StatusWorker applies a status change the transport announced.
type StatusWorker struct {
	river.WorkerDefaults[StatusArgs]
	Service *Service
}

// Work moves the message and schedules the step after.
func (w *StatusWorker) Work(ctx context.Context, job *river.Job[StatusArgs]) error {
	return w.Service.move(ctx, job.Args.MessageID, job.Args.Status, nil, nil, job.Args.Next)
}

// move changes a message's status with its event, and schedules the next step, in one
// transaction. The next step is a durable job; since the queue promotes future jobs only every
// few seconds, this process also fires the step on time in memory. Whichever comes second finds
// the status already moved and does nothing (statuses only move forward).
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
		m := db.Message(row) // the same columns: the statement returns the moved row
		if err := s.event(ctx, tx, m); err != nil {
			return err
		}
		if len(next) > 0 {
			step := next[0]
			if _, err := s.queue.InsertTx(ctx, tx, StatusArgs{MessageID: id, Status: step.Status, Next: next[1:]},
				&river.InsertOpts{ScheduledAt: time.Now().Add(step.After)}); err != nil {
				return fmt.Errorf("schedule %s of message %s: %w", step.Status, id, err)
			}
		}
		moved = true
		return nil
	})
	if err == nil && moved && len(next) > 0 {
		step := next[0]
		time.AfterFunc(step.After, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// A failure here is not lost: the durable job makes the same step later.
			_ = s.move(ctx, id, step.Status, nil, nil, next[1:])
		})
	}
	return err
}
