package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/retention"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestPolicyBounds(t *testing.T) {
	if err := retention.Default.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []retention.Policy{
		{Messages: 0, WebhookDeliveries: 30, IdempotencyKeys: 7},
		{Messages: 3651, WebhookDeliveries: 30, IdempotencyKeys: 7},
		{Messages: 365, WebhookDeliveries: 366, IdempotencyKeys: 7},
		{Messages: 365, WebhookDeliveries: 30, IdempotencyKeys: 31},
		{Messages: -1, WebhookDeliveries: 30, IdempotencyKeys: 7},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

// The pruner drops each table's days past its setting, and keeps the rest.
func TestPruneDropsExpiredDays(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)
	if _, err := postgres.MigrateTo(ctx, pool, 37); err != nil {
		t.Fatal(err)
	}
	// Converted 60 days ago, with a partition for every day since.
	then := func() time.Time { return time.Now().Add(-60 * partition.Day) }
	if err := (&partition.Converter{Pool: pool, Log: testr.New(t), Now: then}).ConvertAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil { // the migrations after the conversion
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(partition.Day)
	for _, tbl := range partition.Tables {
		if _, err := partition.Ensure(ctx, pool, tbl, today.Add(-60*partition.Day), today.Add(partition.Day)); err != nil {
			t.Fatal(err)
		}
	}
	// A message, a key, a delivery and an attempt at noon of each of the last 50 days.
	if _, err := pool.Exec(ctx, `
		WITH days AS (SELECT d, $1::timestamptz - d * interval '1 day' + interval '12 hours' AS at FROM generate_series(0, 49) AS d)
		, m AS (INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, created_at, updated_at)
		        SELECT 'msg_' || d, 'p', false, 'outbound', 'sms', 'text', 'sent', '+1555', at, at FROM days)
		, k AS (INSERT INTO message_idempotency_keys (project, test_mode, key, message_id, created_at)
		        SELECT 'p', false, 'k' || d, 'msg_' || d, at FROM days)
		, w AS (INSERT INTO webhook_deliveries (id, project, event, endpoint_kind, endpoint_name, data, created_at)
		        SELECT 'evt_' || d, 'p', 'message.sent', 'sender', 's', '{}', at FROM days)
		, i AS (INSERT INTO inbound_days (project, test_mode, recipient, day)
		        SELECT 'p', false, '+1555', (at AT TIME ZONE 'UTC')::date FROM days)
		INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, url, latency_ms)
		SELECT 'evt_' || d, 1, at, 'https://example.com', 1 FROM days`, today); err != nil {
		t.Fatal(err)
	}
	p := retention.Pruner{Pool: pool, Log: testr.New(t), Policy: retention.Policy{Messages: 30, WebhookDeliveries: 10, IdempotencyKeys: 3}}
	if err := p.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int{
		// A day's partition is dropped once it ends before now less the setting: the days kept are
		// today and the setting's days before it.
		"messages": 30, "message_idempotency_keys": 3, "webhook_deliveries": 10, "webhook_delivery_attempts": 10,
		"inbound_days": 30, // kept as long as the messages
	} {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want+1 {
			t.Errorf("%s: %d days left, want %d", table, n, want+1)
		}
	}
	// Pruning again drops nothing more.
	if err := p.Prune(ctx); err != nil {
		t.Fatal(err)
	}
}
