package message

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/quota"
	"github.com/switchboard-io/switchboard/internal/risk"
)

// Calls (internal/call) pass the policies of a voice send: the project's suspension, its daily
// voice ceiling and risk review. They live here, beside the sends' own, so the two never drift.

// CheckCall refuses a call of a suspended project (403 sending_suspended). It reads through the
// pool: call it before the call's transaction, never inside it.
func (s *Service) CheckCall(ctx context.Context, project string, testMode bool) error {
	return (notSuspended{s}).CheckAccept(ctx, &Outbound{Project: project, TestMode: testMode})
}

// TakeCall takes one call from the project's daily voice ceiling, and its parent's, inside tx
// (429 daily_limit_exceeded); it reads nothing else through the pool.
func (s *Service) TakeCall(ctx context.Context, tx pgx.Tx, project string, testMode bool) error {
	counted, err := s.countedOn(ctx, project)
	if err != nil {
		return err
	}
	takes := make([]quota.Take, len(counted))
	for i, p := range counted {
		takes[i] = quota.Take{Project: p, TestMode: testMode, Meter: quota.Voice, N: 1}
	}
	return quota.TakeAll(ctx, tx, s.now().UTC(), takes, s.limitsOf(ctx))
}

// ReviewCall decides an outbound call to to, whose greeting is text, by the project's risk
// policy before it is placed. A call is never held for review (spec: Risk review): what would
// hold a message refuses the call. It returns why the call is refused ("" when it may go); a
// refusal counts toward the policy's suspension threshold as a refused message does.
func (s *Service) ReviewCall(ctx context.Context, callID, project string, testMode bool, to, text string) (string, error) {
	if s.risk == nil {
		return "", nil
	}
	m := db.Message{ID: callID, Project: project, TestMode: testMode, Channel: "voice", Direction: "outbound", Recipient: to, Body: &text}
	pol, d, err := s.decide(ctx, m)
	if err != nil || pol == nil || d.Outcome == risk.Approve || d.Outcome == "" {
		return "", err
	}
	if err := s.afterRefusal(ctx, m, pol.SuspendAfter, pol.SuspendWithin); err != nil {
		return "", err
	}
	reason := d.Reason
	if reason == "" {
		reason = string(d.Outcome)
	}
	return "Risk review refused the call: " + reason, nil
}
