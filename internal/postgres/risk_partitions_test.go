package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Holds and refusals are partitioned by when they were made. Among 60 days of partitions, each
// statement on them reads and locks only the days from its bound on (a message's time, the last
// 30 days for holds that may be open, a suspension's window), and a hold or refusal of a message
// is recorded once however often it is recorded.
func TestRiskStatementsLockOnlyTheirDays(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC()
	pgtest.SixtyDays(t, pool, now, "risk_holds", "risk_refusals")
	msg, err := randid.Timed("msg_", now)
	if err != nil {
		t.Fatal(err)
	}
	since := now.Add(-partition.Lookback)
	hold := db.RecordHoldParams{MessageID: msg, Project: "p", Rule: "r", Reason: "why", HeldAt: now, ExpiresAt: now.Add(time.Hour)}
	refusal := db.RecordRefusalParams{Project: "p", MessageID: msg, At: now}
	decision, by := "approved", "test"
	for _, s := range []struct {
		name, table string
		from        time.Time // the first day it may read
		run         func(q *db.Queries) error
	}{
		{"record a hold", "risk_holds", now, func(q *db.Queries) error { return q.RecordHold(ctx, hold) }},
		{"decide a hold", "risk_holds", now, func(q *db.Queries) error {
			_, err := q.DecideHold(ctx, db.DecideHoldParams{MessageID: msg, Decision: &decision, DecidedBy: &by, Now: &now})
			if err == pgx.ErrNoRows {
				err = nil
			}
			return err
		}},
		{"open holds", "risk_holds", since, func(q *db.Queries) error {
			_, err := q.OpenHolds(ctx, db.OpenHoldsParams{Since: since, MaxRows: 10})
			return err
		}},
		{"expired holds", "risk_holds", since, func(q *db.Queries) error {
			_, err := q.ExpiredHolds(ctx, db.ExpiredHoldsParams{Since: since, Now: now, MaxRows: 10})
			return err
		}},
		{"a project's holds before a time", "risk_holds", since, func(q *db.Queries) error {
			_, err := q.OpenHoldsHeldBefore(ctx, db.OpenHoldsHeldBeforeParams{Project: "p", Since: since, Before: now, MaxRows: 10})
			return err
		}},
		{"holds for URLs", "risk_holds", since, func(q *db.Queries) error {
			_, err := q.OpenURLHolds(ctx, db.OpenURLHoldsParams{Since: since, MaxRows: 10})
			return err
		}},
		{"record a refusal", "risk_refusals", now, func(q *db.Queries) error { return q.RecordRefusal(ctx, refusal) }},
		{"count refusals", "risk_refusals", now.Add(-time.Hour), func(q *db.Queries) error {
			_, err := q.RiskRefusalsSince(ctx, db.RiskRefusalsSinceParams{Project: "p", Since: now.Add(-time.Hour)})
			return err
		}},
	} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := s.run(db.Planned(tx)); err != nil {
				return err
			}
			// A message's own bound is a minute before its time: at midnight, the day before too.
			first := "_p" + s.from.Add(-time.Minute).Format("20060102")
			locked := pgtest.LockedPartitions(t, tx, s.table)
			if len(locked) == 0 {
				t.Errorf("%s read no partition of %s", s.name, s.table)
			}
			for _, name := range locked {
				if name[len(s.table):] < first {
					t.Errorf("%s locked %s, before its bound's day", s.name, name)
				}
			}
			return pgx.ErrTxClosed // rolled back
		})
		if err != nil && err != pgx.ErrTxClosed {
			t.Fatalf("%s: %v", s.name, err)
		}
	}

	// Recorded twice (a retried job), each counts once.
	q := db.Planned(pool)
	for range 2 {
		if err := q.RecordHold(ctx, hold); err != nil {
			t.Fatal(err)
		}
		if err := q.RecordRefusal(ctx, refusal); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := q.RiskRefusalsSince(ctx, db.RiskRefusalsSinceParams{Project: "p", Since: now.Add(-time.Hour)}); err != nil || n != 1 {
		t.Fatalf("a refusal recorded twice counts %d (%v)", n, err)
	}
	if holds, err := q.OpenHolds(ctx, db.OpenHoldsParams{Since: since, MaxRows: 10}); err != nil || len(holds) != 1 {
		t.Fatalf("a hold recorded twice: %d open (%v)", len(holds), err)
	}
}
