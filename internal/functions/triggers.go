package functions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/robfig/cron/v3"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// EventCron is the trigger type that fires on a schedule.
const EventCron = "cron"

// MaxTriggers bounds a function's triggers (the CRD says the same).
const MaxTriggers = 100

// EventTypes are what a trigger may subscribe to: every webhook event, and cron.
func EventTypes() []string { return append(v1alpha1.WebhookEventNames(), EventCron) }

// cronParser reads five-field expressions (minute hour day-of-month month day-of-week), with
// the usual descriptors (@hourly, @daily…).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// NextRun is when a cron expression fires next after t, in UTC.
func NextRun(expr string, t time.Time) (time.Time, error) {
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return time.Time{}, err
	}
	if strings.HasPrefix(strings.TrimSpace(expr), "@every") {
		return time.Time{}, errors.New("@every is not a cron schedule: use five fields")
	}
	next := sched.Next(t.UTC())
	if next.IsZero() {
		return time.Time{}, errors.New("the expression never fires")
	}
	return next, nil
}

// TriggerID is a trigger's id: the same trigger (function, event, sender, schedule) has the same
// id whether the API or a manifest declared it, which makes adding it again a no-op.
func TriggerID(f *v1alpha1.Function, t v1alpha1.FunctionTrigger) string {
	sum := sha256.Sum256([]byte(f.Namespace + "\x00" + f.Name + "\x00" + t.Event + "\x00" + t.Sender + "\x00" + t.Cron))
	return "fnt_" + hex.EncodeToString(sum[:10])
}

// Trigger is a trigger as the API shows it.
type Trigger = db.FunctionTrigger

// NewTrigger is one trigger a request asks for.
type NewTrigger struct {
	Event  string
	Sender string
	Cron   string
}

// AddTriggers adds the triggers that the function does not have yet: it returns those added and
// how many it had already.
func (s *Service) AddTriggers(ctx context.Context, f *v1alpha1.Function, want []NewTrigger) ([]Trigger, int, error) {
	var errs []apperror.FieldError
	for i, t := range want {
		if msg := s.checkTrigger(ctx, f.Namespace, t); msg != "" {
			path := fmt.Sprintf("eventTypes[%d]", i)
			if t.Event == EventCron {
				path = "cron"
			}
			errs = append(errs, apperror.FieldError{Path: path, Message: msg})
		}
	}
	if len(errs) > 0 {
		return nil, 0, apperror.InvalidFields(errs...)
	}
	var added []v1alpha1.FunctionTrigger
	skipped := 0
	f, err := s.change(ctx, f, func(f *v1alpha1.Function) error {
		added, skipped = nil, 0
		for _, t := range want {
			spec := v1alpha1.FunctionTrigger{Event: t.Event, Sender: t.Sender, Cron: strings.TrimSpace(t.Cron)}
			if slices.ContainsFunc(f.Spec.Triggers, func(x v1alpha1.FunctionTrigger) bool { return TriggerID(f, x) == TriggerID(f, spec) }) ||
				slices.ContainsFunc(added, func(x v1alpha1.FunctionTrigger) bool { return TriggerID(f, x) == TriggerID(f, spec) }) {
				skipped++
				continue
			}
			added = append(added, spec)
		}
		if len(f.Spec.Triggers)+len(added) > MaxTriggers {
			return apperror.InvalidFields(apperror.FieldError{Path: "eventTypes", Message: fmt.Sprintf("a function has at most %d triggers", MaxTriggers)})
		}
		f.Spec.Triggers = append(f.Spec.Triggers, added...)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.SyncTriggers(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	out := []Trigger{}
	for _, t := range added {
		id := TriggerID(f, t)
		if i := slices.IndexFunc(rows, func(r Trigger) bool { return r.ID == id }); i >= 0 {
			out = append(out, rows[i])
		}
	}
	return out, skipped, nil
}

// checkTrigger says what is wrong with a trigger ("" when nothing).
func (s *Service) checkTrigger(ctx context.Context, project string, t NewTrigger) string {
	if !slices.Contains(EventTypes(), t.Event) {
		return fmt.Sprintf("%q is not an event type (GET /v1/functions/event-types lists them)", t.Event)
	}
	if t.Event == EventCron {
		if strings.TrimSpace(t.Cron) == "" {
			return "a cron trigger needs a cron expression"
		}
		if len(strings.Fields(t.Cron)) != 5 && !strings.HasPrefix(strings.TrimSpace(t.Cron), "@") {
			return "must have five fields: minute hour day-of-month month day-of-week"
		}
		if _, err := NextRun(t.Cron, s.now()); err != nil {
			return "does not parse: " + err.Error()
		}
		return ""
	}
	if t.Sender != "" {
		if _, err := kubewrite.Read[v1alpha1.Sender](ctx, s.client, project, t.Sender, "sender"); err != nil {
			return fmt.Sprintf("the project has no sender %s", t.Sender)
		}
	}
	return ""
}

// SyncTriggers makes the function's trigger rows match its spec (a cron trigger's next run is
// set when it is made or turned on) and returns them.
func (s *Service) SyncTriggers(ctx context.Context, f *v1alpha1.Function) ([]Trigger, error) {
	now := s.now().UTC()
	keep := make([]string, 0, len(f.Spec.Triggers))
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		for _, t := range f.Spec.Triggers {
			id := TriggerID(f, t)
			keep = append(keep, id)
			var next *time.Time
			if t.Event == EventCron && !t.Disabled {
				if n, err := NextRun(t.Cron, now); err == nil {
					next = &n
				}
			}
			_, err := q.UpsertFunctionTrigger(ctx, db.UpsertFunctionTriggerParams{ID: id, Project: f.Namespace, FunctionUid: string(f.UID),
				FunctionName: f.Name, EventType: t.Event, Sender: nonEmpty(t.Sender), Cron: nonEmpty(t.Cron), Active: !t.Disabled,
				Now: now, NextRunAt: next})
			if err != nil {
				return err
			}
		}
		return q.DeleteFunctionTriggersExcept(ctx, db.DeleteFunctionTriggersExceptParams{FunctionUid: string(f.UID), Keep: keep})
	})
	if err != nil {
		return nil, fmt.Errorf("record the triggers of function %s: %w", f.Name, err)
	}
	return s.Triggers(ctx, f)
}

// Triggers lists the function's triggers, oldest first.
func (s *Service) Triggers(ctx context.Context, f *v1alpha1.Function) ([]Trigger, error) {
	rows, err := db.Planned(s.pool).FunctionTriggersOf(ctx, string(f.UID))
	if err != nil {
		return nil, fmt.Errorf("list the triggers of function %s: %w", f.Name, err)
	}
	if rows == nil {
		rows = []Trigger{}
	}
	return rows, nil
}

// TriggerOf returns a trigger of the project and its function: 404 when there is none.
func (s *Service) TriggerOf(ctx context.Context, project, id string) (Trigger, *v1alpha1.Function, error) {
	row, err := db.Planned(s.pool).FunctionTriggerOf(ctx, db.FunctionTriggerOfParams{ID: id, Project: project})
	if errors.Is(err, pgx.ErrNoRows) {
		return Trigger{}, nil, apperror.NotFoundf("Trigger %s not found.", id)
	}
	if err != nil {
		return Trigger{}, nil, fmt.Errorf("read trigger %s: %w", id, err)
	}
	f, err := s.Get(ctx, project, row.FunctionName)
	if err != nil || string(f.UID) != row.FunctionUid {
		return Trigger{}, nil, apperror.NotFoundf("Trigger %s not found.", id)
	}
	return row, f, nil
}

// SetTriggerActive turns a trigger on or off.
func (s *Service) SetTriggerActive(ctx context.Context, f *v1alpha1.Function, id string, active bool) error {
	f, err := s.change(ctx, f, func(f *v1alpha1.Function) error {
		for i, t := range f.Spec.Triggers {
			if TriggerID(f, t) == id {
				f.Spec.Triggers[i].Disabled = !active
				return nil
			}
		}
		return apperror.NotFoundf("Trigger %s not found.", id)
	})
	if err != nil {
		return err
	}
	_, err = s.SyncTriggers(ctx, f)
	return err
}

// DeleteTrigger removes a trigger.
func (s *Service) DeleteTrigger(ctx context.Context, f *v1alpha1.Function, id string) error {
	f, err := s.change(ctx, f, func(f *v1alpha1.Function) error {
		n := len(f.Spec.Triggers)
		f.Spec.Triggers = slices.DeleteFunc(f.Spec.Triggers, func(t v1alpha1.FunctionTrigger) bool { return TriggerID(f, t) == id })
		if len(f.Spec.Triggers) == n {
			return apperror.NotFoundf("Trigger %s not found.", id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, err = s.SyncTriggers(ctx, f)
	return err
}
