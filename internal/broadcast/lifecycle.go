package broadcast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// MaxReviewAttempts bounds how often a broadcast is reviewed: its send and two retries.
const MaxReviewAttempts = 3

// announced are the statuses whose reaching raises broadcast.status_changed (spec: Broadcast).
var announced = []string{StatusPendingReview, StatusApproved, StatusRejected, StatusSending, StatusCompleted, StatusCancelled}

// final statuses end a broadcast: nothing moves it again.
var final = []string{StatusCompleted, StatusCancelled, StatusFailed, StatusRejectedFinal}

// Queue enqueues jobs in a transaction (River's client).
type Queue interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Deliveries enqueues events in a transaction (delivery.Service).
type Deliveries interface {
	Enqueue(ctx context.Context, tx pgx.Tx, ev delivery.Event) ([]string, error)
}

// move changes a broadcast's status in tx, with its event when the spec announces the status.
func (s *Service) move(ctx context.Context, tx pgx.Tx, b db.Broadcast, p db.SetBroadcastStatusParams) (db.Broadcast, error) {
	p.ID, p.Now = b.ID, s.now().UTC()
	row, err := db.Planned(tx).SetBroadcastStatus(ctx, p)
	if err != nil {
		return db.Broadcast{}, fmt.Errorf("move broadcast %s to %s: %w", b.ID, p.Status, err)
	}
	if row.Status == b.Status || !slices.Contains(announced, row.Status) || s.deliveries == nil {
		return row, nil
	}
	data := map[string]any{"broadcastId": row.ID, "name": row.Name, "previousStatus": b.Status, "currentStatus": row.Status,
		"totalContacts": row.TotalContacts}
	if v := viewOf(row); v.ReviewResult != nil && (row.Status == StatusApproved || row.Status == StatusRejected) {
		data["reviewResult"] = v.ReviewResult
	}
	_, err = s.deliveries.Enqueue(ctx, tx, delivery.Event{Project: row.Project, Name: string(v1alpha1.EventBroadcastStatusChanged),
		Data: data, AllSenders: true, Mode: delivery.ModeOf(row.TestMode)})
	return row, err
}

// wrong is an operation on a broadcast whose status does not allow it.
func wrong(b db.Broadcast, msg string) error {
	return &WrongStatus{Status: b.Status, Err: apperror.New(apperror.Invalid, "invalid_request", msg)}
}

// Send submits a draft with recipients for review; scheduledAt (RFC 3339, in the future) sets
// when it goes once approved.
func (s *Service) Send(ctx context.Context, k Key, id string, scheduledAt *string) (Broadcast, error) {
	var at *time.Time
	if scheduledAt != nil {
		t, err := time.Parse(time.RFC3339, *scheduledAt)
		switch {
		case err != nil:
			return Broadcast{}, apperror.InvalidFields(apperror.FieldError{Path: "scheduledAt", Message: "must be an RFC 3339 time, such as 2026-12-01T09:00:00Z"})
		case !t.After(s.now()):
			return Broadcast{}, apperror.InvalidFields(apperror.FieldError{Path: "scheduledAt", Message: "must be in the future"})
		}
		t = t.UTC()
		at = &t
	}
	var out Broadcast
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.BroadcastForUpdate(ctx, db.BroadcastForUpdateParams{ID: id, Project: k.Project, TestMode: k.TestMode})
		if err != nil {
			return notFound(err, id)
		}
		if row.Status != StatusDraft {
			return wrong(row, fmt.Sprintf("Broadcast %s was sent already: it is %s.", id, row.Status))
		}
		if err := s.identityVerified(ctx, row); err != nil {
			return err
		}
		if row.TotalContacts == 0 {
			return apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Broadcast %s has no recipients: add them (POST /v1/broadcasts/%s/contacts) before sending.", id, id))
		}
		if err := s.estimate(ctx, tx, row); err != nil {
			return err
		}
		if at == nil && row.ScheduledAt != nil && !row.ScheduledAt.After(s.now()) {
			// A time set at creation that has passed means now.
			now := s.now().UTC()
			at = &now
		}
		row, err = s.move(ctx, tx, row, db.SetBroadcastStatusParams{Status: StatusPendingReview, AddAttempts: 1, ScheduledAt: at})
		if err != nil {
			return err
		}
		if _, err := s.queue.InsertTx(ctx, tx, ReviewArgs{BroadcastID: id}, nil); err != nil {
			return fmt.Errorf("enqueue review of %s: %w", id, err)
		}
		out = viewOf(row)
		return nil
	})
	return out, err
}

// Escalate asks an operator to look again at a rejected broadcast.
func (s *Service) Escalate(ctx context.Context, k Key, id string) (Broadcast, error) {
	return s.transition(ctx, k, id, func(tx pgx.Tx, row db.Broadcast) (db.Broadcast, error) {
		if row.Status != StatusRejected {
			return row, wrong(row, fmt.Sprintf("Only rejected broadcasts can be escalated; broadcast %s is %s.", id, row.Status))
		}
		return s.move(ctx, tx, row, db.SetBroadcastStatusParams{Status: StatusEscalated})
	})
}

// RetryReview reviews a rejected broadcast again, up to MaxReviewAttempts reviews in all (a
// RiskPolicy changed meanwhile may decide otherwise).
func (s *Service) RetryReview(ctx context.Context, k Key, id string) (Broadcast, error) {
	return s.transition(ctx, k, id, func(tx pgx.Tx, row db.Broadcast) (db.Broadcast, error) {
		if row.Status != StatusRejected {
			return row, wrong(row, fmt.Sprintf("Only a rejected broadcast is reviewed again; broadcast %s is %s.", id, row.Status))
		}
		if row.ReviewAttempts >= MaxReviewAttempts {
			return row, wrong(row, fmt.Sprintf("Broadcast %s was reviewed %d times, the most there are; escalate it for an operator's decision.", id, row.ReviewAttempts))
		}
		row, err := s.move(ctx, tx, row, db.SetBroadcastStatusParams{Status: StatusPendingReview, AddAttempts: 1})
		if err != nil {
			return row, err
		}
		_, err = s.queue.InsertTx(ctx, tx, ReviewArgs{BroadcastID: id}, nil)
		return row, err
	})
}

// Cancel stops a broadcast that has not ended: recipients not yet handed to the send path are
// skipped; messages already queued may still be delivered. What it still has reserved returns
// to the balance. Skipping waits for a chunk under way to finish with the recipients it holds
// (they stay queued); the broadcast's row is locked after, as a fold locks it.
func (s *Service) Cancel(ctx context.Context, k Key, id string) (Broadcast, error) {
	var out Broadcast
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.Broadcast(ctx, db.BroadcastParams{ID: id, Project: k.Project, TestMode: k.TestMode})
		if err != nil {
			return notFound(err, id)
		}
		if slices.Contains(final, row.Status) {
			return wrong(row, fmt.Sprintf("Broadcast %s is %s: there is nothing left to cancel.", id, row.Status))
		}
		now := s.now().UTC()
		skipped, err := q.SkipPendingBroadcastContacts(ctx, db.SkipPendingBroadcastContactsParams{ID: id, Now: now})
		if err != nil {
			return fmt.Errorf("skip recipients of %s: %w", id, err)
		}
		// Its recorded changes too, so that what it releases is what it still has reserved.
		if row, err = foldIn(ctx, q, counts{db.CountBroadcastParams{ID: id, Pending: -skipped, Skipped: skipped, Now: now}}); err != nil {
			return notFound(err, id)
		}
		if slices.Contains(final, row.Status) { // it ended meanwhile
			return wrong(row, fmt.Sprintf("Broadcast %s is %s: there is nothing left to cancel.", id, row.Status))
		}
		if row, err = s.settle(ctx, tx, row, now); err != nil {
			return err
		}
		if row, err = s.move(ctx, tx, row, db.SetBroadcastStatusParams{Status: StatusCancelled}); err != nil {
			return err
		}
		out, err = viewIn(ctx, q, row)
		return err
	})
	return out, err
}

// Reschedule moves the time of a scheduled broadcast.
func (s *Service) Reschedule(ctx context.Context, k Key, id string, scheduledAt *string) (Broadcast, error) {
	if scheduledAt == nil {
		return Broadcast{}, apperror.InvalidFields(apperror.FieldError{Path: "scheduledAt", Message: "is required"})
	}
	t, err := time.Parse(time.RFC3339, *scheduledAt)
	switch {
	case err != nil:
		return Broadcast{}, apperror.InvalidFields(apperror.FieldError{Path: "scheduledAt", Message: "must be an RFC 3339 time, such as 2026-12-01T09:00:00Z"})
	case !t.After(s.now()):
		return Broadcast{}, apperror.InvalidFields(apperror.FieldError{Path: "scheduledAt", Message: "must be in the future"})
	}
	return s.transition(ctx, k, id, func(tx pgx.Tx, row db.Broadcast) (db.Broadcast, error) {
		if row.Status != StatusScheduled {
			return row, wrong(row, fmt.Sprintf("Only a scheduled broadcast is rescheduled; broadcast %s is %s.", id, row.Status))
		}
		at := t.UTC()
		return db.Planned(tx).ReschedulePendingBroadcast(ctx, db.ReschedulePendingBroadcastParams{ID: id, ScheduledAt: &at, Now: s.now().UTC()})
	})
}

// transition runs change on the locked broadcast in one transaction.
func (s *Service) transition(ctx context.Context, k Key, id string, change func(pgx.Tx, db.Broadcast) (db.Broadcast, error)) (Broadcast, error) {
	var out Broadcast
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		row, err := db.Planned(tx).BroadcastForUpdate(ctx, db.BroadcastForUpdateParams{ID: id, Project: k.Project, TestMode: k.TestMode})
		if err != nil {
			return notFound(err, id)
		}
		row, err = change(tx, row)
		if err != nil {
			return err
		}
		out, err = viewIn(ctx, db.Planned(tx), row)
		return err
	})
	return out, err
}

// afterApproval is where an approved broadcast goes: scheduled when its time is ahead, else it
// stays approved for the send path to take.
func (s *Service) afterApproval(ctx context.Context, tx pgx.Tx, row db.Broadcast) (db.Broadcast, error) {
	if row.ScheduledAt != nil && row.ScheduledAt.After(s.now()) {
		return s.move(ctx, tx, row, db.SetBroadcastStatusParams{Status: StatusScheduled})
	}
	return row, nil
}

// reviewed records a review's result on a broadcast still pending it.
func (s *Service) reviewed(ctx context.Context, id string, status string, result ReviewResult) error {
	raw, _ := json.Marshal(result)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		row, err := db.Planned(tx).LockBroadcast(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if row.Status != StatusPendingReview && row.Status != StatusEscalated {
			return nil // cancelled or decided meanwhile
		}
		if row.Status == StatusEscalated && status == StatusRejected {
			status = StatusRejectedFinal
		}
		row, err = s.move(ctx, tx, row, db.SetBroadcastStatusParams{Status: status, ReviewResult: raw})
		if err != nil || status != StatusApproved {
			return err
		}
		_, err = s.afterApproval(ctx, tx, row)
		return err
	})
}

// identityVerified refuses a broadcast on any channel but WhatsApp (whose business verification
// Meta runs) from a project whose identity is not verified: 403 kyc_required. Bulk sending is
// what a spammer wants first; single sends need no verification (spec: Limits, Sending limits 5).
func (s *Service) identityVerified(ctx context.Context, b db.Broadcast) error {
	if b.Channel == string(v1alpha1.ChannelWhatsApp) {
		return nil
	}
	p, err := kubewrite.ProjectOf(ctx, s.reader, b.Project)
	if err != nil {
		return err
	}
	if p != nil {
		switch p.Spec.Verification {
		case v1alpha1.VerificationIdentityApproved, v1alpha1.VerificationBusinessApproved, v1alpha1.VerificationTenDLCBrand:
			return nil
		}
	}
	return apperror.New(apperror.Forbidden, "kyc_required",
		"Broadcasts on "+b.Channel+" need the project's identity verification: an operator approves it by setting spec.verification to identity_approved (or business_approved) on the Project. WhatsApp broadcasts do not.")
}
