package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// The queue's statements run for every delivery. On a year of daily partitions, a statement that
// names a partitioned table without a bound on its time plans and locks all of them (with their
// indexes), which slowed delivery fivefold and held up the detach of old partitions. Each
// statement here, run in a transaction on 60 days of partitions, must hold locks on the days it
// reads only.
func TestTheQueueLocksOnlyRecentPartitions(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC()
	pgtest.SixtyDays(t, pool, now, "webhook_deliveries", "webhook_delivery_attempts")
	id, err := randid.Timed("evt_", now)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Planned(pool).InsertWebhookDeliveries(ctx, db.InsertWebhookDeliveriesParams{
		Ids: []string{id}, Project: "p", Events: []string{"message.sent"}, EndpointKinds: []string{"sender"},
		EndpointNames: []string{"support"}, Data: [][]byte{[]byte(`{}`)}, AddressesFrom: []string{""}, AddressesTo: []string{""},
		Transports: []string{""}, Modes: []string{"live"}, CreatedAt: now,
	}); err != nil {
		t.Fatal(err)
	}

	// inTx runs a statement in a transaction of its own, counts what it locked, and commits.
	inTx := func(name string, run func(q *db.Queries) error, most map[string]int) {
		t.Helper()
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := run(db.Planned(tx)); err != nil {
				return err
			}
			for table, most := range most {
				if locked := pgtest.LockedPartitions(t, tx, table); len(locked) > most {
					t.Errorf("%s locked %d partitions of %s (%v), want at most %d", name, len(locked), table, locked, most)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}

	// from counts the partitions of table that hold rows at or after at: what a statement bounded
	// from at on reads (the days made ahead included: two, or three late in a UTC day, when a
	// conversion's cutover is the midnight after next).
	from := func(table string, at time.Time) int {
		parts, err := partition.List(ctx, pool, partition.Table{Name: table})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range parts {
			if p.To.After(at) {
				n++
			}
		}
		return n
	}
	horizon := from("webhook_deliveries", now.Add(-delivery.ClaimHorizon))
	var claimed []db.WebhookDelivery
	inTx("the claim", func(q *db.Queries) error {
		claimed, err = q.ClaimWebhookDeliveries(ctx, db.ClaimWebhookDeliveriesParams{
			Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute), Max: 20, MadeSince: now.Add(-delivery.ClaimHorizon)})
		return err
	}, map[string]int{"webhook_deliveries": horizon})
	if len(claimed) != 1 {
		t.Fatalf("claimed %d deliveries, want the one due", len(claimed))
	}

	createdFrom, createdTo := partition.Bounds([]string{id})
	finish := db.FinishWebhookAttemptsParams{Ids: []string{id}, Attempts: []int32{1}, Made: []bool{true},
		Statuses: []string{"delivered"}, NextAttemptsAt: []time.Time{now}, StartedAt: []time.Time{now}, Urls: []string{"https://hooks.example.test"},
		StatusCodes: []int32{200}, LatenciesMs: []int32{12}, Errors: []string{""}, ResponseBodies: []string{"ok"},
		FinishedAt: []time.Time{now}, CreatedFrom: createdFrom, CreatedTo: createdTo}
	inTx("recording the attempt", func(q *db.Queries) error { return q.FinishWebhookAttempts(ctx, finish) },
		map[string]int{"webhook_deliveries": 1, "webhook_delivery_attempts": 1})
	var status string
	if err := pool.QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE id = $1`, id).Scan(&status); err != nil || status != "delivered" {
		t.Fatalf("the delivery is %q (%v), want delivered", status, err)
	}
	inTx("reading a delivery", func(q *db.Queries) error { _, err := q.GetWebhookDelivery(ctx, id); return err },
		map[string]int{"webhook_deliveries": 1})
	inTx("reading its attempts", func(q *db.Queries) error { _, err := q.ListWebhookAttempts(ctx, id); return err },
		map[string]int{"webhook_delivery_attempts": from("webhook_delivery_attempts", now.Add(-time.Minute))})
}

// Recording a batch reads the batch's own rows, whatever else is pending. On a day's partition
// that autovacuum has not analyzed yet (every partition, for its first minute or more of
// traffic), the planner once took the pending rows for a handful and read all of them for every
// result: a batch of 200 among 2,500 pending went through half a million rows and took 300 ms,
// and the worker delivered at the pace of its recording (BenchmarkDeliveries: 200-800/s). The
// statement now finds each row by key. The rows its plan went through are counted, not timed.
func TestRecordingABatchReadsOnlyItsRows(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC()
	const pending, batch = 3000, 200
	p := db.InsertWebhookDeliveriesParams{Project: "p", CreatedAt: now}
	for range pending {
		id, err := randid.Timed("evt_", now)
		if err != nil {
			t.Fatal(err)
		}
		p.Ids, p.Events, p.EndpointKinds = append(p.Ids, id), append(p.Events, "message.sent"), append(p.EndpointKinds, "sender")
		p.EndpointNames, p.Data = append(p.EndpointNames, "support"), append(p.Data, []byte(`{}`))
		p.AddressesFrom, p.AddressesTo = append(p.AddressesFrom, ""), append(p.AddressesTo, "")
		p.Transports, p.Modes = append(p.Transports, ""), append(p.Modes, "live")
	}
	if err := db.Planned(pool).InsertWebhookDeliveries(ctx, p); err != nil {
		t.Fatal(err)
	}
	claimed, err := db.Planned(pool).ClaimWebhookDeliveries(ctx, db.ClaimWebhookDeliveriesParams{
		Now: now.Add(time.Second), LeaseUntil: now.Add(time.Minute), Max: batch, MadeSince: now.Add(-delivery.ClaimHorizon)})
	if err != nil || len(claimed) != batch {
		t.Fatalf("claimed %d (%v), want %d", len(claimed), err, batch)
	}
	var f db.FinishWebhookAttemptsParams
	for _, d := range claimed {
		f.Ids, f.Attempts, f.Made = append(f.Ids, d.ID), append(f.Attempts, d.Attempts), append(f.Made, true)
		f.Statuses, f.NextAttemptsAt, f.StartedAt = append(f.Statuses, "delivered"), append(f.NextAttemptsAt, now), append(f.StartedAt, now)
		f.Urls, f.StatusCodes, f.LatenciesMs = append(f.Urls, "https://hooks.example.test"), append(f.StatusCodes, 204), append(f.LatenciesMs, 3)
		f.Errors, f.ResponseBodies, f.FinishedAt = append(f.Errors, ""), append(f.ResponseBodies, ""), append(f.FinishedAt, now)
	}
	f.CreatedFrom, f.CreatedTo = partition.Bounds(f.Ids)
	// The statement as run, then run again under EXPLAIN ANALYZE (rolled back): the rows its
	// scans of the deliveries' partitions produced, each times its loops, whatever this
	// machine's speed.
	capture := &pgtest.Capture{}
	conn := capture.Conn(t, pool)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Planned(tx).FinishWebhookAttempts(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Nested loops only: the plans a planner that takes a partition for a handful of rows
	// makes, whatever this machine's statistics say today.
	plan := pgtest.Explain(t, conn, "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off", capture.SQL, capture.Args...)
	// Each result's row is found twice, for its outcome and for its update; and no node goes
	// over the pending rows once per result (pending × batch rows, 600,000 here).
	if read := plan.RowsOf("webhook_deliveries_"); read > 2*batch {
		t.Errorf("recording %d attempts among %d pending read %.0f delivery rows, want at most %d", batch, pending, read, 2*batch)
	}
	if work := plan.RowsOf(""); work > 2*batch*batch {
		t.Errorf("recording %d attempts among %d pending made %.0f rows in its plan, want at most %d", batch, pending, work, 2*batch*batch)
	}
	if err := db.Planned(pool).FinishWebhookAttempts(ctx, f); err != nil {
		t.Fatal(err)
	}
	var delivered int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`).Scan(&delivered); err != nil || delivered != batch {
		t.Fatalf("%d delivered (%v), want %d", delivered, err, batch)
	}
}
