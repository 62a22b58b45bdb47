package message

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// StatusReader asks a live message's Provider for its status now (registry.Registry); ok is
// false when the Provider has no such read.
type StatusReader interface {
	MessageStatus(ctx context.Context, m db.Message) (u transport.StatusUpdate, ok bool, err error)
	// StatusChannels are the channels whose messages it can ask about: only those are read, so
	// messages no Provider can be asked about never fill a run.
	StatusChannels() []string
}

// Lost status callbacks (docs/transports.md#lost-status-callbacks): a provider that took a
// message reports its delivery by a callback, which Twilio does not retry when the callback is
// refused or cut. A live message still sent ReconcileAfter after it was sent is asked of its
// Provider, again an hour later, and a last time a day later; each run asks at most
// ReconcileBatch messages, every ReconcileEvery, so the provider sees a bounded rate.
const (
	DefaultReconcileAfter = 10 * time.Minute
	ReconcileEvery        = time.Minute
	ReconcileBatch        = 200
	// reconcileLookback bounds the days read: a message older than its last check (a day) plus a
	// margin is not asked again.
	reconcileLookback = 3 * 24 * time.Hour
)

// ReconcileArgs is the periodic job that asks Providers about live messages left sent.
type ReconcileArgs struct{}

// Kind names the job kind.
func (ReconcileArgs) Kind() string { return "message.reconcile" }

// ReconcileWorker asks Providers about live messages whose status callback did not come.
type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	Service *Service
	Reader  StatusReader
	// After is how long after sent a message is first asked about (DefaultReconcileAfter when
	// zero); the second and third asks follow an hour and a day later.
	After time.Duration
}

// Work asks one batch.
func (w *ReconcileWorker) Work(ctx context.Context, _ *river.Job[ReconcileArgs]) error {
	_, err := w.Service.Reconcile(ctx, w.Reader, w.After, ReconcileBatch)
	return err
}

// Reconcile asks the Providers of up to limit live messages left sent for their status, and
// applies what they answer as their callbacks would have; it returns how many moved.
func (s *Service) Reconcile(ctx context.Context, reader StatusReader, after time.Duration, limit int) (int, error) {
	if after <= 0 {
		after = DefaultReconcileAfter
	}
	now := s.now().UTC()
	q := db.Planned(s.pool)
	stale, err := q.StaleSentMessages(ctx, db.StaleSentMessagesParams{FirstBefore: now.Add(-after),
		SecondBefore: now.Add(-after - time.Hour), ThirdBefore: now.Add(-after - 24*time.Hour),
		Since: now.Add(-reconcileLookback).Truncate(24 * time.Hour), Max: int32(limit), Channels: reader.StatusChannels()})
	if err != nil {
		return 0, fmt.Errorf("read messages left sent: %w", err)
	}
	moved := 0
	for _, m := range stale {
		u, ok, err := reader.MessageStatus(ctx, m)
		if err != nil {
			return moved, fmt.Errorf("ask the provider of message %s: %w", m.ID, err)
		}
		if ok && u.Status != "" && u.Status != transport.StatusSent {
			done, err := s.ApplyProviderStatus(ctx, StatusChange{MessageID: m.ID, Status: u.Status, Failure: u.Failure,
				Via: Via{Provider: *m.Provider}})
			if err != nil {
				return moved, err
			}
			if done {
				moved++
				continue
			}
		}
		// Still sent at the provider (a carrier that reports no delivery), or nothing to ask:
		// asked again later, three times in all.
		if err := q.CountStatusCheck(ctx, m.ID); err != nil {
			return moved, fmt.Errorf("count the status check of message %s: %w", m.ID, err)
		}
	}
	return moved, nil
}
