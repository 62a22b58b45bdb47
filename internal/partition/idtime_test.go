package partition_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// TestIDTimeInSQLIsGos: Postgres reads the millisecond a timed id carries as randid.TimeOf does,
// inlined into the statement (its plan shows no call of the function), and gives no time for an
// id of another shape.
func TestIDTimeInSQLIsGos(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	for _, at := range []time.Time{time.UnixMilli(0), time.UnixMilli(61), time.Date(2026, 11, 28, 10, 59, 59, 999_000_000, time.UTC),
		time.Now(), time.Date(2999, 12, 31, 23, 59, 59, 0, time.UTC)} {
		for _, prefix := range []string{"msg_", "bc_", "whd_x_", ""} {
			id, err := randid.Timed(prefix, at)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := randid.TimeOf(id)
			var got *time.Time
			if err := pool.QueryRow(ctx, `SELECT switchboard_id_time($1)`, id).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got == nil || !got.Equal(want) {
				t.Errorf("switchboard_id_time(%s) = %v, want %v", id, got, want)
			}
		}
	}
	for _, id := range []string{"", "msg_", "msg_short", "msg_abcdefghijklmnopqrstuvwxy-", "msg_abcdefghijklmnopqrstuvwxyz_",
		"msg_abcdefghijklmnopqrstuvwxyzA", "legacy-0123456789abcdefghijklmnop"} {
		var got *time.Time
		if err := pool.QueryRow(ctx, `SELECT switchboard_id_time($1)`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != nil {
			t.Errorf("switchboard_id_time(%q) = %v, want none", id, got)
		}
	}
	// A column, not a constant: Postgres works a constant out while it plans either way.
	rows, err := pool.Query(ctx, `EXPLAIN (VERBOSE, COSTS OFF) SELECT switchboard_id_from(id), switchboard_id_to(id) FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if strings.Contains(l, "switchboard_id") {
			t.Fatalf("the function is called, not inlined:\n%s", strings.Join(lines, "\n"))
		}
	}
}
