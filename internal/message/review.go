package message

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/phonecheck"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/risk"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
)

// Risk review error codes (spec: Message).
const (
	ErrRiskRejected      = "RISK_REJECTED"
	ErrRiskBlocked       = "RISK_BLOCKED"
	ErrRiskReviewExpired = "RISK_REVIEW_EXPIRED"
	ErrSendingSuspended  = "SENDING_SUSPENDED"
)

// refunded are the failures whose charge is returned: the message never went.
var refunded = map[string]bool{ErrRiskRejected: true, ErrRiskBlocked: true, ErrRiskReviewExpired: true, ErrSendingSuspended: true,
	urlcheck.ErrURLRejected: true, urlcheck.ErrURLMalicious: true,
	// registry.ErrNumberNotOwned: the sender's number changed hands before the message went.
	"NUMBER_NOT_OWNED": true}

// SetRiskPolicies makes dispatch review sms, sms_oneway, email and voice sends by the
// RiskPolicy of their project.
func (s *Service) SetRiskPolicies(p *risk.Policies) { s.risk = p }

// refusal is a send review refused or blocked, with the policy's suspension threshold.
type refusal struct {
	*transport.Failure
	suspendAfter  int64
	suspendWithin time.Duration
}

// review decides m by its project's risk policy: nil to go on; a refusal to fail it (refused
// or blocked); held when it now waits for an operator.
func (s *Service) review(ctx context.Context, m db.Message) (f *refusal, held bool, err error) {
	if (s.risk == nil && s.urls == nil) || !risk.Reviewed[m.Channel] || m.Direction != "outbound" || m.RiskReviewed || m.RiskHold {
		return nil, m.RiskHold, nil
	}
	var pol *risk.Policy
	var d risk.Decision
	if s.risk != nil {
		if pol, d, err = s.decide(ctx, m); err != nil {
			return nil, false, err
		}
	}
	if pol == nil {
		return s.reviewURLs(ctx, m, nil)
	}
	now := s.now().UTC()
	switch d.Outcome {
	case risk.Refuse:
		return &refusal{&transport.Failure{Code: ErrRiskRejected, Message: "Risk review refused the message: " + d.Reason},
			pol.SuspendAfter, pol.SuspendWithin}, false, nil
	case risk.Block:
		return &refusal{&transport.Failure{Code: ErrRiskBlocked, Message: "Risk review blocked the message: " + d.Reason},
			pol.SuspendAfter, pol.SuspendWithin}, false, nil
	case risk.Hold:
		return nil, true, s.hold(ctx, m, d, now, pol.Window)
	}
	return s.reviewURLs(ctx, m, pol)
}

// ruleURLVerification is the rule of a hold that waits for the message's URLs to be verified.
const ruleURLVerification = "url_verification"

// SetURLGate makes dispatch verify the URLs of live sms, sms_oneway and email sends
// (docs/urls.md): a message with a rejected or malicious URL fails, one whose URL waits for a
// verdict is held until it has one.
func (s *Service) SetURLGate(g *urlcheck.Service) { s.urls = g }

// urlChecked are the channels whose links are verified.
var urlChecked = map[string]bool{"sms": true, "sms_oneway": true, "email": true}

// reviewURLs verifies m's URLs; pol (nil: none) sets the hold's window and counts refusals
// toward a suspension.
func (s *Service) reviewURLs(ctx context.Context, m db.Message, pol *risk.Policy) (*refusal, bool, error) {
	if s.urls == nil || m.TestMode || !urlChecked[m.Channel] {
		return nil, false, nil
	}
	g, err := s.urlGate(ctx, m)
	if err != nil {
		return nil, false, err
	}
	if g.Code != "" {
		r := &refusal{Failure: &transport.Failure{Code: g.Code, Message: g.Reason}}
		if pol != nil {
			r.suspendAfter, r.suspendWithin = pol.SuspendAfter, pol.SuspendWithin
		}
		return r, false, nil
	}
	if len(g.Waiting) == 0 {
		return nil, false, nil
	}
	window := risk.DefaultReviewWindow
	if pol != nil {
		window = pol.Window
	}
	d := risk.Decision{Rule: ruleURLVerification, Reason: "waiting for the verification of " + strings.Join(g.Waiting, ", ")}
	return nil, true, s.hold(ctx, m, d, s.now().UTC(), window)
}

func (s *Service) urlGate(ctx context.Context, m db.Message) (urlcheck.Gate, error) {
	if !mayLink(deref(m.Body)) && !mayLink(deref(m.Subject)) {
		return urlcheck.Gate{}, nil // most texts: the link finder's regular expression is not cheap
	}
	f := risk.Features(m.Channel, m.Recipient, deref(m.Body), deref(m.Subject), "")
	links := make([]string, len(f.Links))
	for i, l := range f.Links {
		links[i] = l.URL
	}
	return s.urls.Check(ctx, m.Project, m.TestMode, links)
}

// mayLink tells whether text may hold a link: every link the finder takes has a scheme ("://")
// or a dot between two letters or digits ("example.com", "10.0.0.1").
func mayLink(text string) bool {
	if strings.Contains(text, "://") {
		return true
	}
	for i := 1; i+1 < len(text); i++ {
		if text[i] == '.' && alnum(text[i-1]) && alnum(text[i+1]) {
			return true
		}
	}
	return false
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// ReleaseURLHolds decides the messages held for their URLs whose URLs now have verdicts: all
// approved, the message goes; one rejected or malicious, it fails (refunded). It returns how
// many it decided.
func (s *Service) ReleaseURLHolds(ctx context.Context) (int, error) {
	if s.urls == nil {
		return 0, nil
	}
	holds, err := db.Planned(s.pool).OpenURLHolds(ctx, db.OpenURLHoldsParams{Since: s.holdsSince(), MaxRows: 500})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range holds {
		m, err := db.Planned(s.pool).GetMessageByID(ctx, h.MessageID)
		if err != nil {
			return n, err
		}
		g, err := s.urlGate(ctx, m)
		if err != nil {
			return n, err
		}
		switch {
		case g.Code != "":
			err = s.endHold(ctx, m.ID, "refused", "URL verification", &transport.Failure{Code: g.Code, Message: g.Reason})
		case len(g.Waiting) == 0:
			err = s.endHold(ctx, m.ID, "approved", "URL verification", nil)
		default:
			continue
		}
		if err != nil && apperror.As(err) == nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// decide is what m's project's risk policy says of it; a nil policy reviews nothing.
func (s *Service) decide(ctx context.Context, m db.Message) (*risk.Policy, risk.Decision, error) {
	pol, err := s.risk.For(ctx, m.Project)
	if err != nil || pol == nil {
		return nil, risk.Decision{}, err
	}
	country := ""
	if strings.HasPrefix(m.Recipient, "+") {
		if r, err := phonecheck.Inspect(m.Recipient); err == nil {
			country = r.CountryCode
		}
	}
	features := risk.Features(m.Channel, m.Recipient, deref(m.Body), deref(m.Subject), country)
	now := s.now().UTC()
	fresh, err := db.Planned(s.pool).NewConversationsSince(ctx, db.NewConversationsSinceParams{Project: m.Project, TestMode: m.TestMode,
		Since: now.Add(-time.Hour)})
	if err != nil {
		return nil, risk.Decision{}, fmt.Errorf("count first contacts of %s: %w", m.Project, err)
	}
	proj := risk.Project{ID: m.Project, NewRecipientsLastHour: fresh}
	if p, err := s.project(ctx, m.Project); err != nil {
		return nil, risk.Decision{}, err
	} else if p != nil {
		proj.Plan, proj.Verification = string(p.Spec.Plan), string(p.Spec.Verification)
	}
	d := pol.Decide(ctx, m.ID, features, proj)
	return pol, d, nil
}

// hold keeps m queued with riskHold until an operator decides or window passes.
func (s *Service) hold(ctx context.Context, m db.Message, d risk.Decision, now time.Time, window time.Duration) error {
	// Tried again once when now's day has no partition of holds yet.
	return partition.Retry(ctx, s.pool, func() error { return s.holdTx(ctx, m, d, now, window) })
}

func (s *Service) holdTx(ctx context.Context, m db.Message, d risk.Decision, now time.Time, window time.Duration) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if _, err := q.HoldMessage(ctx, db.HoldMessageParams{ID: m.ID, Now: now}); errors.Is(err, pgx.ErrNoRows) {
			return nil // moved on meanwhile
		} else if err != nil {
			return fmt.Errorf("hold message %s: %w", m.ID, err)
		}
		return q.RecordHold(ctx, db.RecordHoldParams{MessageID: m.ID, Project: m.Project, TestMode: m.TestMode, Rule: d.Rule,
			Reason: d.Reason, HeldAt: now, ExpiresAt: now.Add(window)})
	})
}

// Hold is a message waiting for an operator's decision.
type Hold = db.RiskHold

// OpenHolds lists the holds waiting for a decision (every project's when project is ""),
// oldest first, at most limit.
func (s *Service) OpenHolds(ctx context.Context, project string, limit int32) ([]Hold, error) {
	return db.Planned(s.pool).OpenHolds(ctx, db.OpenHoldsParams{Project: project, Since: s.holdsSince(), MaxRows: limit})
}

// holdsSince bounds the holds that may still be open: made within the longest review window,
// with the rest of partition.Lookback to spare for workers that were down (the expiry sweep's).
// Holds are partitioned by when they were made, and a bound lets a query plan only those days.
func (s *Service) holdsSince() time.Time {
	return s.now().UTC().Add(-partition.Lookback)
}

// DecideHold approves (the message is dispatched, not reviewed again) or refuses (it fails with
// RISK_REJECTED and its charge returns) a held message; by names who decided. A message with no
// open hold is a 404.
func (s *Service) DecideHold(ctx context.Context, messageID string, approve bool, by string) error {
	decision := "refused"
	if approve {
		decision = "approved"
	}
	return s.endHold(ctx, messageID, decision, by, &transport.Failure{Code: ErrRiskRejected, Message: "An operator refused the message in risk review."})
}

// ExpireHolds fails the holds whose review window has closed with RISK_REVIEW_EXPIRED; it
// returns how many.
func (s *Service) ExpireHolds(ctx context.Context) (int, error) {
	ids, err := db.Planned(s.pool).ExpiredHolds(ctx, db.ExpiredHoldsParams{Now: s.now().UTC(), Since: s.holdsSince(), MaxRows: 500})
	if err != nil {
		return 0, fmt.Errorf("find expired holds: %w", err)
	}
	return decideEach(ids, func(id string) error {
		return s.endHold(ctx, id, "expired", "review window", &transport.Failure{Code: ErrRiskReviewExpired,
			Message: "Nobody decided on the message within its risk review window."})
	})
}

// decideEach decides each held message and counts those it decided; one decided meanwhile (its
// decision answers not found) is skipped.
func decideEach(ids []string, decide func(id string) error) (int, error) {
	n := 0
	for _, id := range ids {
		err := decide(id)
		if apperror.As(err) != nil {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// DecideHoldsByProjects carries out the Projects' approveHoldsBefore and refuseHoldsBefore
// (refusal first, so it wins for a hold both cover); it returns how many holds it decided.
func (s *Service) DecideHoldsByProjects(ctx context.Context) (int, error) {
	var projects v1alpha1.ProjectList
	if err := s.reader.List(ctx, &projects); err != nil {
		return 0, fmt.Errorf("list projects: %w", err)
	}
	n := 0
	for _, p := range projects.Items {
		for _, d := range []struct {
			before  *metav1.Time
			approve bool
			field   string
		}{{p.Spec.RefuseHoldsBefore, false, "refuseHoldsBefore"}, {p.Spec.ApproveHoldsBefore, true, "approveHoldsBefore"}} {
			if d.before == nil {
				continue
			}
			// Resource times are whole seconds: a hold of the field's second is covered.
			ids, err := db.Planned(s.pool).OpenHoldsHeldBefore(ctx, db.OpenHoldsHeldBeforeParams{Project: p.Namespace, Since: s.holdsSince(),
				Before: d.before.Time.Add(time.Second), MaxRows: 500})
			if err != nil {
				return n, fmt.Errorf("find holds of %s: %w", p.Namespace, err)
			}
			decided, err := decideEach(ids, func(id string) error {
				return s.DecideHold(ctx, id, d.approve, "Project "+p.Namespace+" spec."+d.field)
			})
			n += decided
			if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// endHold records the decision on messageID's hold and carries it out in one transaction.
func (s *Service) endHold(ctx context.Context, messageID, decision, by string, failure *transport.Failure) error {
	now := s.now().UTC()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if _, err := q.DecideHold(ctx, db.DecideHoldParams{MessageID: messageID, Decision: &decision, DecidedBy: &by, Now: &now}); errors.Is(err, pgx.ErrNoRows) {
			return apperror.NotFoundf("No message %s waits for a risk review decision.", messageID)
		} else if err != nil {
			return fmt.Errorf("decide hold of %s: %w", messageID, err)
		}
		if decision == "approved" {
			if err := q.ReleaseHold(ctx, db.ReleaseHoldParams{ID: messageID, Now: now}); err != nil {
				return err
			}
			_, err := s.queue.InsertTx(ctx, tx, DispatchArgs{MessageID: messageID}, nil)
			return err
		}
		if err := q.EndHold(ctx, messageID); err != nil {
			return err
		}
		var f followed
		if _, err := s.applyIn(ctx, tx, StatusChange{MessageID: messageID, Status: transport.StatusFailed, Failure: failure}, &f); err != nil {
			return err
		}
		return s.follow(ctx, tx, f)
	})
}

// HoldExpirer fails expired holds, and decides those Projects' fields cover, every Every (30 s
// when zero); every worker runs one: a decision is a conditional update, so two never decide one
// message twice.
type HoldExpirer struct {
	Service *Service
	Every   time.Duration
}

// Start runs until ctx ends.
func (h *HoldExpirer) Start(ctx context.Context) error {
	every := h.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_, _ = h.Service.ExpireHolds(ctx) // tried again at the next tick
			_, _ = h.Service.DecideHoldsByProjects(ctx)
			_, _ = h.Service.ReleaseURLHolds(ctx)
		}
	}
}

// NeedLeaderElection: every worker may expire holds.
func (h *HoldExpirer) NeedLeaderElection() bool { return false }
