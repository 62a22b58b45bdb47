package message

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// suspensionTTL is how long a replica trusts what it read of a project's suspension: a
// suspension (or its lifting) reaches every replica's sends within it.
const suspensionTTL = time.Second

// suspensions caches which projects' sending is suspended, per mode.
type suspensions struct {
	mu   sync.Mutex
	seen map[suspensionKey]suspensionState
}

type suspensionKey struct {
	project  string
	testMode bool
}

type suspensionState struct {
	row *db.SendingSuspension
	// parent is the project's parent ("" for none), read with the row: its suspension covers
	// the project too.
	parent  string
	checked time.Time
}

// SetSupportURL is where a suspended project is sent to get its sending back (403
// sending_suspended's details.dashboardUrl).
func (s *Service) SetSupportURL(u string) { s.supportURL = u }

// suspension returns the suspension in force for project in a mode, or nil: its own, or its
// parent's, which covers its sub-accounts.
func (s *Service) suspension(ctx context.Context, project string, testMode bool) (*db.SendingSuspension, error) {
	st, err := s.suspensionOf(ctx, project, testMode)
	if err != nil || st.row != nil || st.parent == "" {
		return st.row, err
	}
	parent, err := s.suspensionOf(ctx, st.parent, testMode)
	return parent.row, err
}

// suspensionOf returns what this replica knows of project's own suspension in a mode (and its
// parent), read again once it is suspensionTTL old.
func (s *Service) suspensionOf(ctx context.Context, project string, testMode bool) (suspensionState, error) {
	k := suspensionKey{project, testMode}
	now := s.now()
	s.suspended.mu.Lock()
	st, ok := s.suspended.seen[k]
	s.suspended.mu.Unlock()
	if ok && now.Sub(st.checked) < suspensionTTL {
		return st, nil
	}
	row, err := db.Planned(s.pool).Suspension(ctx, db.SuspensionParams{Project: project, TestMode: testMode})
	var found *db.SendingSuspension
	switch {
	case err == nil:
		found = &row
	case !errors.Is(err, pgx.ErrNoRows):
		return suspensionState{}, fmt.Errorf("read suspension of %s: %w", project, err)
	}
	p, err := s.project(ctx, project)
	if err != nil {
		return suspensionState{}, err
	}
	// The Project's liftSuspensionsBefore lifts it as `switchboard project unsuspend` does.
	// Resource times are whole seconds: a suspension of the same second as the field is lifted.
	if found != nil && p != nil && p.Spec.LiftSuspensionsBefore != nil && !p.Spec.LiftSuspensionsBefore.Time.Before(found.Since.Truncate(time.Second)) {
		by := "Project " + project + " spec.liftSuspensionsBefore"
		if _, err := db.Planned(s.pool).LiftSuspensions(ctx, db.LiftSuspensionsParams{Project: project, LiftedBy: &by,
			Now: ptrTime(now.UTC())}); err != nil {
			return suspensionState{}, fmt.Errorf("lift suspension of %s: %w", project, err)
		}
		found = nil
	}
	st = suspensionState{row: found, checked: now}
	if p != nil {
		st.parent = p.Spec.Parent
	}
	s.suspended.mu.Lock()
	if s.suspended.seen == nil {
		s.suspended.seen = map[suspensionKey]suspensionState{}
	}
	s.suspended.seen[k] = st
	s.suspended.mu.Unlock()
	return st, nil
}

// forget drops what this replica read of a project's suspension.
func (s *Service) forget(project string) {
	s.suspended.mu.Lock()
	defer s.suspended.mu.Unlock()
	for k := range s.suspended.seen {
		if k.project == project {
			delete(s.suspended.seen, k)
		}
	}
}

// notSuspended refuses sends of a suspended project: 403 sending_suspended.
type notSuspended struct{ s *Service }

func (p notSuspended) CheckAccept(ctx context.Context, o *Outbound) error {
	sus, err := p.s.suspension(ctx, o.Project, o.TestMode)
	if err != nil || sus == nil {
		return err
	}
	e := apperror.New(apperror.Forbidden, "sending_suspended",
		"Sending is suspended for this project after repeated risk review refusals; contact support to have it reviewed and lifted.")
	e.Details = map[string]any{"dashboardUrl": p.s.supportURL, "since": sus.Since.UTC(), "reason": sus.Reason}
	if p.s.supportURL == "" {
		e.Details["dashboardUrl"] = nil
	}
	return e
}

// suspendedFailure fails a queued message of a suspended project at dispatch.
var suspendedFailure = transport.Failure{Code: ErrSendingSuspended, Message: "Sending is suspended for this project after repeated risk review refusals."}

// afterRefusal counts a refused or blocked send and, when the project's policy's threshold is
// reached within its window, suspends the project's sending in that mode and fails its queued
// messages with SENDING_SUSPENDED. A sub-account's refusals count as its parent's, and suspend
// the parent with all its sub-accounts: N sub-accounts do not get N times the refusals.
func (s *Service) afterRefusal(ctx context.Context, m db.Message, after int64, within time.Duration) error {
	q := db.Planned(s.pool)
	now := s.now().UTC()
	account, err := s.parentOf(ctx, m.Project)
	if err != nil {
		return err
	}
	if account == "" {
		account = m.Project
	}
	err = partition.Retry(ctx, s.pool, func() error { // once more when now's day has no partition yet
		return q.RecordRefusal(ctx, db.RecordRefusalParams{Project: account, TestMode: m.TestMode, MessageID: m.ID, At: now})
	})
	if err != nil {
		return fmt.Errorf("record refusal of %s: %w", m.ID, err)
	}
	if after <= 0 {
		return nil
	}
	n, err := q.RiskRefusalsSince(ctx, db.RiskRefusalsSinceParams{Project: account, TestMode: m.TestMode, Since: now.Add(-within)})
	if err != nil {
		return fmt.Errorf("count refusals of %s: %w", account, err)
	}
	if n < after {
		return nil
	}
	reason := fmt.Sprintf("%d sends refused by risk review within %s", n, within)
	if _, err := q.Suspend(ctx, db.SuspendParams{Project: account, TestMode: m.TestMode, Reason: reason, Since: now}); errors.Is(err, pgx.ErrNoRows) {
		return nil // suspended already
	} else if err != nil {
		return fmt.Errorf("suspend %s: %w", account, err)
	}
	s.forget(account)
	projects := []string{account}
	if account != m.Project {
		projects = append(projects, m.Project)
	}
	for _, p := range projects {
		if err := s.failQueued(ctx, p, m.TestMode); err != nil {
			return err
		}
	}
	return nil
}

// failQueued fails every message of the project still waiting to go with SENDING_SUSPENDED.
func (s *Service) failQueued(ctx context.Context, project string, testMode bool) error {
	for {
		ids, err := db.Planned(s.pool).QueuedMessages(ctx, db.QueuedMessagesParams{Project: project, TestMode: testMode, MaxRows: 500,
			Since: s.now().Add(-partition.Lookback)})
		if err != nil {
			return fmt.Errorf("list queued messages of %s: %w", project, err)
		}
		moved := 0
		for _, id := range ids {
			f := suspendedFailure
			ok, err := s.ApplyStatus(ctx, StatusChange{MessageID: id, Status: transport.StatusFailed, Failure: &f})
			if err != nil {
				return err
			}
			if ok {
				moved++
			}
		}
		if len(ids) < 500 || moved == 0 {
			return nil
		}
	}
}

// LiftSuspension lifts project's suspension (every mode) and returns how many were lifted; by
// names the operator.
func (s *Service) LiftSuspension(ctx context.Context, project, by string) (int, error) {
	rows, err := db.Planned(s.pool).LiftSuspensions(ctx, db.LiftSuspensionsParams{Project: project, LiftedBy: &by, Now: ptrTime(s.now().UTC())})
	if err != nil {
		return 0, fmt.Errorf("lift suspension of %s: %w", project, err)
	}
	s.forget(project)
	return len(rows), nil
}
