package broadcast

import (
	"context"
	"testing"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// A read's counters are the broadcast's row plus the changes not folded into it yet. Read in
// one snapshot (as Get and List read them), a change folded between the two reads is counted
// once; read at two moments, it would be counted nowhere: not in the row read before the fold,
// no longer among the changes read after it.
func TestCountersAreReadInOneSnapshot(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t)
	s, b := draftOf(t, pool, "sms", "hi", []ContactInput{contact("+15005550001", nil)})
	const recipients = 1000
	if _, err := pool.Exec(ctx, `UPDATE broadcasts SET status = 'sending', started_at = now(), pending_count = $2 WHERE id = $1`,
		b.ID, recipients); err != nil {
		t.Fatal(err)
	}
	// sending moves one recipient from pending to sending (a change recorded, not folded yet),
	// reads the row, lets the change be folded meanwhile (on another connection), then adds the
	// changes not folded to the row it read: what a read shows as sending.
	sending := func(q *db.Queries) int32 {
		t.Helper()
		if err := db.Planned(pool).AddBroadcastDeltas(ctx, db.AddBroadcastDeltasParams{BroadcastIds: []string{b.ID},
			Pending: []int32{-1}, Queued: []int32{0}, Sending: []int32{1}, Delivered: []int32{0}, Failed: []int32{0},
			Skipped: []int32{0}, Costs: []int64{0}, Released: []int64{0}}); err != nil {
			t.Fatal(err)
		}
		row, err := q.BroadcastByID(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.fold(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		rows := []db.Broadcast{row}
		if err := unfolded(ctx, q, rows); err != nil {
			t.Fatal(err)
		}
		return rows[0].QueuedCount + rows[0].SendingCount
	}
	var inSnapshot int32
	if err := s.snapshot(ctx, func(q *db.Queries) error { inSnapshot = sending(q); return nil }); err != nil {
		t.Fatal(err)
	}
	if inSnapshot != 1 {
		t.Errorf("read in one snapshot: %d sending, want 1", inSnapshot)
	}
	// The hazard the snapshot avoids: the second recipient's change is counted nowhere.
	if apart := sending(db.Planned(pool)); apart != 1 {
		t.Errorf("read at two moments: %d sending; this test no longer shows the change a fold hides (1 instead of 2)", apart)
	}
	got, err := s.Get(ctx, Key{Project: "acme", TestMode: true}, b.ID)
	if err != nil || got.PendingCount != recipients-2 || got.SendingCount != 2 {
		t.Errorf("Get: pending %d, sending %d, %v; want %d and 2", got.PendingCount, got.SendingCount, err, recipients-2)
	}
}
