package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// A conversation's page names its days as an OR of ranges whose bounds are array elements: the
// planner must fold them to constants and read only those days' partitions, not every one.
func TestAConversationPageLocksOnlyTheDaysItReads(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	today := time.Now().UTC().Truncate(partition.Day)
	pgtest.SixtyDays(t, pool, today, "messages")
	conv := "conv_1"
	for _, spans := range [][]partition.Span{
		{{From: today.Add(-3 * partition.Day), To: today.Add(-2 * partition.Day)}},
		{{From: today, To: today.Add(partition.Day)}, {From: today.Add(-12 * partition.Day), To: today.Add(-10 * partition.Day)},
			{From: today.Add(-40 * partition.Day), To: today.Add(-39 * partition.Day)}},
	} {
		froms, tos := partition.SpanBounds(spans)
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := db.Planned(tx).ListConversationMessages(ctx, db.ListConversationMessagesParams{ConversationID: &conv,
				Project: "p", Froms: froms, Tos: tos, PageSize: 50}); err != nil {
				return err
			}
			days := 0
			for _, s := range spans {
				days += int(s.To.Sub(s.From) / partition.Day)
			}
			if locked := pgtest.LockedPartitions(t, tx, "messages"); len(locked) != days {
				t.Errorf("a page of %d days locked %d partitions: %v", days, len(locked), locked)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
