package broadcast

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/risk"
)

// Policies finds a project's risk policy (risk.Policies): a broadcast is reviewed by the same
// rules, or the same external reviewer, as single sends.
type Policies interface {
	For(ctx context.Context, project string) (*risk.Policy, error)
}

// ReviewArgs is the job that reviews a broadcast sent for review.
type ReviewArgs struct {
	BroadcastID string `json:"broadcastId"`
}

// Kind names the job kind.
func (ReviewArgs) Kind() string { return "broadcast_review" }

// ReviewWorker works review jobs.
type ReviewWorker struct {
	river.WorkerDefaults[ReviewArgs]
	Service *Service
}

// Work reviews the broadcast; an error is retried by the queue.
func (w *ReviewWorker) Work(ctx context.Context, job *river.Job[ReviewArgs]) error {
	return w.Service.Review(ctx, job.Args.BroadcastID)
}

// Review decides a broadcast pending review with its project's risk policy: the rules' approve
// approves it, refuse and block reject it with the rule's reason, and hold leaves it pending for
// an operator (`switchboard broadcast approve|refuse`). Without a policy it is approved.
func (s *Service) Review(ctx context.Context, id string) error {
	row, err := db.Planned(s.pool).BroadcastByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read broadcast %s: %w", id, err)
	}
	if row.Status != StatusPendingReview {
		return nil
	}
	d := risk.Decision{Outcome: risk.Approve}
	if s.policies != nil {
		policy, err := s.policies.For(ctx, row.Project)
		if err != nil {
			return err
		}
		if policy != nil {
			f := fieldsOf(row)
			text := deref(f.text)
			if f.htmlBody != nil {
				text += " " + *f.htmlBody
			}
			m := risk.Features(row.Channel, "", text, deref(f.emailSubject), "")
			d = policy.Decide(ctx, id, m, s.riskProject(ctx, row.Project))
		}
	}
	now := s.now().UTC()
	switch d.Outcome {
	case risk.Hold:
		return nil // stays pending_review until an operator decides
	case risk.Refuse, risk.Block:
		score := 1.0
		return s.reviewed(ctx, id, StatusRejected, ReviewResult{Categories: []string{d.Rule}, Reasoning: d.Reason,
			ReviewedAt: now, Score: &score, FlaggedContent: []string{}})
	default:
		score := 0.0
		return s.reviewed(ctx, id, StatusApproved, ReviewResult{Reasoning: "No rule of the project's risk policy objected.",
			ReviewedAt: now, Score: &score})
	}
}

func (s *Service) riskProject(ctx context.Context, project string) risk.Project {
	p := risk.Project{ID: project}
	if pr, err := kubewrite.ProjectOf(ctx, s.reader, project); err == nil && pr != nil {
		p.Plan, p.Verification = string(pr.Spec.Plan), string(pr.Spec.Verification)
	}
	return p
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Awaiting lists the broadcasts waiting for an operator (held by review, or escalated), every
// project's when project is "", longest waiting first.
func (s *Service) Awaiting(ctx context.Context, project string, limit int32) ([]Broadcast, error) {
	rows, err := db.Planned(s.pool).BroadcastsAwaitingOperator(ctx, db.BroadcastsAwaitingOperatorParams{Project: project, MaxRows: limit})
	if err != nil {
		return nil, fmt.Errorf("list broadcasts awaiting an operator: %w", err)
	}
	out := make([]Broadcast, len(rows))
	for i, r := range rows {
		out[i] = viewOf(r)
	}
	return out, nil
}

// Decide is an operator's decision on a broadcast held by review or escalated: approve sends it
// on; refuse rejects a held one, and finally rejects an escalated one (rejected_final). by and
// reason are kept in its review result.
func (s *Service) Decide(ctx context.Context, id string, approve bool, by, reason string) error {
	row, err := db.Planned(s.pool).BroadcastByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return apperror.NotFoundf("No broadcast %s.", id)
	}
	if err != nil {
		return err
	}
	if row.Status != StatusPendingReview && row.Status != StatusEscalated {
		return apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Broadcast %s is %s: only one pending review or escalated waits for a decision.", id, row.Status))
	}
	status, score := StatusRejected, 1.0
	if approve {
		status, score = StatusApproved, 0
	}
	if reason == "" {
		reason = "Decided by an operator."
	}
	return s.reviewed(ctx, id, status, ReviewResult{Categories: []string{"operator:" + by}, Reasoning: reason,
		ReviewedAt: s.now().UTC(), Score: &score, FlaggedContent: []string{}})
}
