package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Scheduler fires cron triggers: it claims the due ones with FOR UPDATE SKIP LOCKED, queues a
// run of each and moves its next run on, in one transaction, so each tick fires once across
// every worker. A tick missed while no worker ran fires once when one is back, not once per
// missed tick.
type Scheduler struct {
	pool *pgxpool.Pool
	// Every is how often due triggers are looked for (default 250 ms: a tick fires within a
	// second of its time).
	Every time.Duration
	Log   logr.Logger
	now   func() time.Time
}

// NewScheduler returns a scheduler.
func NewScheduler(pool *pgxpool.Pool, log logr.Logger) *Scheduler {
	return &Scheduler{pool: pool, Every: 250 * time.Millisecond, Log: log, now: time.Now}
}

// NeedLeaderElection: every worker schedules; the row locks keep each tick to one of them.
func (s *Scheduler) NeedLeaderElection() bool { return false }

// Start fires due triggers until ctx ends.
func (s *Scheduler) Start(ctx context.Context) error {
	for {
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error(err, "fire cron triggers")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.Every):
		}
	}
}

// Tick fires the triggers due now and returns how many fired.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	fired := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		now := s.now().UTC()
		due, err := q.DueCronTriggers(ctx, db.DueCronTriggersParams{Now: now, Max: 100})
		if err != nil {
			return err
		}
		for _, t := range due {
			scheduled := *t.NextRunAt
			next, err := NextRun(*t.Cron, now)
			if err != nil {
				// An expression that no longer parses (it did when it was made) stops.
				next = time.Time{}
			}
			var nextAt *time.Time
			if !next.IsZero() {
				nextAt = &next
			}
			if err := q.AdvanceCronTrigger(ctx, db.AdvanceCronTriggerParams{ID: t.ID, LastRunAt: now, NextRunAt: nextAt}); err != nil {
				return err
			}
			id, err := randid.Prefixed("fnr_", 20)
			if err != nil {
				return err
			}
			eventID, err := randid.Prefixed("evt_", 24)
			if err != nil {
				return err
			}
			body, err := json.Marshal(Event{ID: eventID, Type: EventCron, Timestamp: scheduled,
				Data: map[string]any{"cron": *t.Cron, "triggerId": t.ID, "scheduledAt": scheduled}})
			if err != nil {
				return err
			}
			err = q.InsertFunctionRuns(ctx, db.InsertFunctionRunsParams{Ids: []string{id}, Project: t.Project,
				FunctionUids: []string{t.FunctionUid}, FunctionNames: []string{t.FunctionName}, TriggerIds: []string{t.ID},
				EventIds: []string{eventID}, EventTypes: []string{EventCron}, Events: [][]byte{body}, Now: now})
			if err != nil {
				return fmt.Errorf("queue the run of trigger %s: %w", t.ID, err)
			}
			fired++
		}
		return nil
	})
	return fired, err
}
