package call

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// A call's state moves forward only: queued → ringing → in_progress → an end. Each move is one
// transaction with its webhook event; the end settles the call's money in the same one, so
// call.completed and call.failed carry the cost (spec: Events).

// The call events (spec: Events).
const (
	EventInitiated = "call.initiated"
	EventAnswered  = "call.answered"
	EventCompleted = "call.completed"
	EventFailed    = "call.failed"
)

// Normalize reads a telephony provider's call status (Twilio's CallStatus: queued, initiated,
// ringing, in-progress, completed, busy, no-answer, failed, canceled) as a call status; "" for
// one that says nothing new.
func Normalize(providerStatus string) string {
	switch providerStatus {
	case "queued", "initiated", "ringing":
		return StatusRinging
	case "in-progress", "answered":
		return StatusInProgress
	case "completed":
		return StatusCompleted
	case "busy":
		return StatusBusy
	case "no-answer":
		return StatusNoAnswer
	case "failed":
		return StatusFailed
	case "canceled":
		return StatusCanceled
	}
	return ""
}

// Progress is what a provider reports of a call.
type Progress struct {
	// Status is a call status (Normalize).
	Status string
	// Duration is the provider's billable seconds on an end; nil when it did not say.
	Duration *int32
	// AnsweredBy is the provider's answering machine detection: human, machine_*, fax.
	AnsweredBy string
	// Error is why a failed call failed, when the provider said.
	Error string
}

// Advance applies a provider's report on call id: ringing changes nothing new, in_progress
// answers it, an end ends it (its reason from the status, unless Switchboard decided one).
func (s *Service) Advance(ctx context.Context, id string, p Progress) error {
	switch p.Status {
	case StatusInProgress:
		return s.answer(ctx, id, p.AnsweredBy)
	case StatusCompleted, StatusBusy, StatusNoAnswer, StatusFailed, StatusCanceled:
		reason := map[string]string{StatusCompleted: EndHangup, StatusBusy: EndBusy, StatusNoAnswer: EndNoAnswer,
			StatusFailed: EndFailed, StatusCanceled: EndCanceled}[p.Status]
		_, _, err := s.end(ctx, id, ending{status: p.Status, reason: reason, duration: p.Duration, message: p.Error})
		return err
	}
	return nil
}

// answer moves a queued or ringing call to in_progress with call.answered; a call past that
// is left as it is.
func (s *Service) answer(ctx context.Context, id, answeredBy string) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		c, err := q.AnswerCall(ctx, db.AnswerCallParams{ID: id, AnsweredBy: nonEmpty(answeredBy), Now: ptrTime(s.now())})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("answer call %s: %w", id, err)
		}
		_, err = s.Events.Enqueue(ctx, tx, event(EventAnswered, c, false))
		return err
	})
}

// ending is how a call ended.
type ending struct {
	status, reason, message string
	// duration is the provider's; nil counts from the answer to now.
	duration *int32
}

// end ends an active call: its status, reason and duration, its money settled, and its event,
// in one transaction; a session holding it here stops. ended is false when it had ended already.
func (s *Service) end(ctx context.Context, id string, e ending) (c db.Call, ended bool, err error) {
	now := s.now()
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		cur, err := q.LockCall(ctx, id)
		if err != nil {
			return fmt.Errorf("lock call %s: %w", id, err)
		}
		if !Active(cur.Status) {
			c = cur
			return nil
		}
		status := e.status
		if status == StatusCompleted && cur.AnsweredAt == nil {
			status = StatusFailed // never answered: it held no conversation
		}
		duration := int32(0)
		switch {
		case cur.AnsweredAt == nil:
		case e.duration != nil:
			duration = *e.duration
		default:
			duration = int32(max(1, math.Ceil(now.Sub(*cur.AnsweredAt).Seconds())))
		}
		if c, err = q.EndCall(ctx, db.EndCallParams{ID: id, Status: status, EndReason: &e.reason, DurationSeconds: &duration,
			ErrorMessage: nonEmpty(e.message), Now: &now}); err != nil {
			return fmt.Errorf("end call %s: %w", id, err)
		}
		if c, err = s.settle(ctx, tx, c); err != nil {
			return err
		}
		name := EventCompleted
		if c.Status != StatusCompleted {
			name = EventFailed
		}
		ended = true
		_, err = s.Events.Enqueue(ctx, tx, event(name, c, true))
		return err
	})
	if err == nil && ended {
		s.stopSession(id)
	}
	return c, ended, err
}

// settle charges an ended call inside tx: its telephony, per started minute of talk at the
// PriceList's voice price for the number called, with what was set aside when it was placed
// given back; its cost adds its turns' model tokens, charged as they were answered. A call is
// paid in full even past the project's credit limit: it happened; the next one is refused.
func (s *Service) settle(ctx context.Context, tx pgx.Tx, c db.Call) (db.Call, error) {
	if c.SettledAt != nil {
		return c, nil
	}
	q := db.Planned(tx)
	now := s.now()
	var telephony billing.Micros
	if !c.TestMode {
		price, acct, priced, err := s.minutePrice(ctx, c.Project, c.ToNumber)
		if err != nil {
			return c, err
		}
		if c.ReservedMicros > 0 {
			if err := billing.Release(ctx, tx, c.Project, billing.Micros(c.ReservedMicros), "call "+c.ID, now); err != nil {
				return c, err
			}
		}
		if priced && c.DurationSeconds != nil && *c.DurationSeconds > 0 {
			minutes := (int64(*c.DurationSeconds) + 59) / 60
			telephony = price * billing.Micros(minutes)
			acct.Parent, acct.CreditLimit = nil, math.MaxInt64/4
			if err := billing.ChargeAll(ctx, tx, acct, []billing.Charge{{MessageID: c.ID, Amount: telephony}}, false, now); err != nil {
				return c, fmt.Errorf("charge call %s: %w", c.ID, err)
			}
		}
	}
	model, err := q.CallModelCost(ctx, &c.ID)
	if err != nil {
		return c, fmt.Errorf("read the model cost of call %s: %w", c.ID, err)
	}
	cost := int64(telephony) + model
	if err := q.SettleCall(ctx, db.SettleCallParams{ID: c.ID, CostMicros: &cost, Now: &now}); err != nil {
		return c, fmt.Errorf("settle call %s: %w", c.ID, err)
	}
	c.CostMicros, c.SettledAt, c.ReservedMicros = &cost, &now, 0
	return c, nil
}

// event is a call event of c; final ones carry its cost.
func event(name string, c db.Call, final bool) delivery.Event {
	data := map[string]any{"callId": c.ID, "direction": c.Direction, "from": c.FromNumber, "to": c.ToNumber, "status": c.Status,
		"durationSeconds": c.DurationSeconds, "endReason": c.EndReason, "transcriptAvailable": c.TurnCount > 0}
	if v := view(c, nil); len(v.Metadata) > 0 {
		data["metadata"] = v.Metadata
	}
	if final {
		cost := 0.0
		if c.CostMicros != nil {
			cost = float64(*c.CostMicros) / 1e6
		}
		data["cost"], data["currency"] = cost, "USD"
	}
	return delivery.Event{Project: c.Project, Name: name, Sender: c.Sender, From: c.FromNumber, To: c.ToNumber,
		Transport: "voice", Data: data, Mode: delivery.ModeOf(c.TestMode)}
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC()
	}
	return time.Now().UTC()
}
