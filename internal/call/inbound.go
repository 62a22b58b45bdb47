package call

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Incoming is a call to a sender's number, as its provider reports it.
type Incoming struct {
	Sender *v1alpha1.Sender
	// Provider is the namespace/name of the Provider it came through.
	Provider       string
	ProviderCallID string
	From, To       string
}

// Receive takes an incoming call for the sender's voice agent: the call, ringing, with
// call.initiated, and how it sounds. refused says why nobody takes it (no agent with voice, a
// balance that cannot pay its first minute); the provider then rejects it. A provider posting
// the same call again gets the same call.
func (s *Service) Receive(ctx context.Context, in Incoming) (c db.Call, sp Speech, refused string, err error) {
	q := db.Planned(s.Pool)
	if c, err = q.CallByProviderID(ctx, db.CallByProviderIDParams{Provider: in.Provider, ProviderCallID: &in.ProviderCallID}); err == nil {
		a, err := s.agentOf(ctx, c)
		if err != nil || a == nil {
			return c, Speech{}, "the agent is gone", err
		}
		return c, SpeechOf(a, deref(c.Language), ""), "", nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return c, sp, "", fmt.Errorf("read call %s: %w", in.ProviderCallID, err)
	}
	snd := in.Sender
	a, err := agent.AnsweringAgent(ctx, s.Reader, snd.Namespace, snd.Name)
	if err != nil {
		return c, sp, "", err
	}
	if a == nil || !a.Spec.Enabled || a.Spec.Voice == nil || !a.Spec.Voice.Enabled {
		return c, sp, "no agent with voice enabled answers on this number", nil
	}
	sp = SpeechOf(a, "", "")
	id, err := randid.Name("call_", 20)
	if err != nil {
		return c, sp, "", err
	}
	now := s.now()
	row := db.InsertCallParams{ID: id, Project: snd.Namespace, Sender: snd.Name, Agent: a.Name, Direction: Inbound,
		FromNumber: in.From, ToNumber: in.To, Status: StatusRinging, Provider: in.Provider, ProviderCallID: &in.ProviderCallID,
		Greeting: nonEmpty(sp.Greeting), Language: nonEmpty(sp.Language), Metadata: []byte(`{}`),
		MaxDurationSeconds: int32(maxMinutes(a, nil) * 60), CreatedAt: now}
	price, acct, priced, err := s.minutePrice(ctx, snd.Namespace, in.To)
	if err != nil {
		return c, sp, "", err
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if priced && price > 0 {
			if err := billing.Reserve(ctx, tx, acct, price, "call "+id, now); err != nil {
				return err
			}
			row.ReservedMicros = int64(price)
		}
		q := db.Planned(tx)
		var err error
		if c, err = q.InsertCall(ctx, row); err != nil {
			return fmt.Errorf("record incoming call: %w", err)
		}
		_, err = s.Events.Enqueue(ctx, tx, event(EventInitiated, c, false))
		return err
	})
	if e := apperror.As(err); err != nil && e != nil && e.Code == "insufficient_balance" {
		row.Status = StatusRinging
		v, err := s.refused(ctx, row, EndInsufficientBalance, "The project's balance cannot pay for the call.")
		if err != nil {
			return c, sp, "", err
		}
		c.ID = v.ID
		return c, sp, "the project's balance cannot pay for the call", nil
	}
	return c, sp, "", err
}

// Next is what a call does once its relay's session ended.
type Next struct {
	// TransferTo is the number to hand the call to, from CallerID.
	TransferTo, CallerID string
	// Resume hands the call to a new session (a replica takes it over), with Speech.
	Resume bool
	Speech Speech
}

// AfterRelay says what call id does now that its relay's session ended: the transfer the
// agent asked for; a new session when the session dropped (its process died) while the call
// is up and nobody ended it; else hang up.
func (s *Service) AfterRelay(ctx context.Context, id string, dropped bool) (Next, error) {
	c, err := db.Planned(s.Pool).CallByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Next{}, nil
	}
	if err != nil {
		return Next{}, fmt.Errorf("read call %s: %w", id, err)
	}
	switch {
	case deref(c.Ending) == EndTransfer && c.TransferTo != nil:
		from := c.FromNumber
		if c.Direction == Inbound {
			from = c.ToNumber
		}
		return Next{TransferTo: *c.TransferTo, CallerID: from}, nil
	case dropped && c.Status == StatusInProgress && c.Ending == nil && c.SessionUntil != nil:
		// Only a relay that was held: one whose handshake never succeeded is not retried.
		a, err := s.agentOf(ctx, c)
		if err != nil || a == nil {
			return Next{}, err
		}
		s.Log.Info("a call's relay dropped; a new session takes it over", "call", id)
		return Next{Resume: true, Speech: SpeechOf(a, deref(c.Language), "")}, nil
	}
	return Next{}, nil
}
