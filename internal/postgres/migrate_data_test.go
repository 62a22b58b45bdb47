package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// Deliveries pending in the job queue when 00008 moves them to a queue of their own keep their
// due time and mode, and their jobs go.
func TestTheDeliveryQueueMigrationCarriesPendingDeliveriesOver(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)
	if _, err := postgres.MigrateTo(ctx, pool, 7); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(5 * time.Minute).UTC().Truncate(time.Microsecond)
	if _, err := pool.Exec(ctx, `
		INSERT INTO webhook_deliveries (id, project, event, endpoint_kind, endpoint_name, data, status, attempts, created_at)
		VALUES ('evt_waiting', 'acme', 'message.sent', 'sender', 'main', '{}', 'pending', 1, now()),
		       ('evt_orphan', 'acme', 'message.sent', 'sender', 'main', '{}', 'pending', 0, now()),
		       ('evt_done', 'acme', 'message.sent', 'sender', 'main', '{}', 'delivered', 1, now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
		VALUES ('{"deliveryId":"evt_waiting","mode":"live"}', 'webhook.deliver', 5, 'webhooks', 'retryable', $1)`, due); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.MigrateTo(ctx, pool, 8); err != nil {
		t.Fatal(err)
	}
	var next time.Time
	var mode string
	if err := pool.QueryRow(ctx, `SELECT next_attempt_at, mode FROM webhook_deliveries WHERE id = 'evt_waiting'`).Scan(&next, &mode); err != nil {
		t.Fatal(err)
	}
	if !next.Equal(due) || mode != "live" {
		t.Errorf("the waiting delivery is due %v in mode %q, want %v and live", next, mode, due)
	}
	var orphanDue, doneDue *time.Time
	if err := pool.QueryRow(ctx, `SELECT (SELECT next_attempt_at FROM webhook_deliveries WHERE id = 'evt_orphan'),
		(SELECT next_attempt_at FROM webhook_deliveries WHERE id = 'evt_done')`).Scan(&orphanDue, &doneDue); err != nil {
		t.Fatal(err)
	}
	if orphanDue == nil || time.Since(*orphanDue) > time.Minute || doneDue != nil {
		t.Errorf("a pending delivery without a job is due %v (want now); a delivered one %v (want none)", orphanDue, doneDue)
	}
	var jobs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'webhook.deliver'`).Scan(&jobs); err != nil || jobs != 0 {
		t.Errorf("%d delivery jobs left (%v)", jobs, err)
	}
}
