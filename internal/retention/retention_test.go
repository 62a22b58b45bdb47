package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/retention"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestPolicyBounds(t *testing.T) {
	for _, p := range []retention.Policy{retention.Default, {Messages: 365, WebhookDeliveries: 30, WebhookAttempts: 30, IdempotencyKeys: 7}} {
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []retention.Policy{
		{Messages: 0, WebhookDeliveries: 30, IdempotencyKeys: 7},
		{Messages: 3651, WebhookDeliveries: 30, IdempotencyKeys: 7},
		{Messages: 365, WebhookDeliveries: 366, IdempotencyKeys: 7},
		{Messages: 365, WebhookDeliveries: 30, IdempotencyKeys: 31},
		{Messages: -1, WebhookDeliveries: 30, IdempotencyKeys: 7},
		{Messages: 365, WebhookDeliveries: 30, WebhookAttempts: 31, IdempotencyKeys: 7}, // past the deliveries
		{Messages: 365, WebhookDeliveries: 30, WebhookAttempts: -1, IdempotencyKeys: 7},
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
	// Converted 60 days ago, with a partition for every day since, each table once the migration
	// that prepares it has run, as an installation upgraded through them converts them: those of
	// migration 37, broadcast recipients (42), a message's files (43).
	then := func() time.Time { return time.Now().Add(-60 * partition.Day) }
	convert := &partition.Converter{Pool: pool, Log: testr.New(t), Now: then}
	preparedBy := map[string]int64{"broadcast_contacts": 42, "message_attachments": 43, "attachment_contents": 43}
	for _, version := range []int64{37, 42, 43} {
		if _, err := postgres.MigrateTo(ctx, pool, version); err != nil {
			t.Fatal(err)
		}
		for _, tbl := range partition.Tables {
			if max(preparedBy[tbl.Name], 37) <= version {
				if err := convert.Convert(ctx, tbl); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil { // the migrations after the conversions
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(partition.Day)
	for _, tbl := range partition.Tables {
		if _, err := partition.Ensure(ctx, pool, tbl, today.Add(-60*partition.Day), today.Add(partition.Day)); err != nil {
			t.Fatal(err)
		}
	}
	// A message (held, and another refused, with a file and its content), a key, a delivery, an
	// attempt and a completed broadcast's recipient at noon of each of the last 50 days; 40 days
	// ago, a draft's recipient too.
	var broadcasts, statuses []string
	for d := range 50 {
		id, err := randid.Timed("bc_", today.Add(-time.Duration(d)*partition.Day+12*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		broadcasts, statuses = append(broadcasts, id), append(statuses, "completed")
	}
	draft, err := randid.Timed("bc_", today.Add(-40*partition.Day+12*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	broadcasts, statuses = append(broadcasts, draft), append(statuses, "draft")
	if _, err := pool.Exec(ctx, `
		WITH days AS (SELECT d, $1::timestamptz - d * interval '1 day' + interval '12 hours' AS at FROM generate_series(0, 49) AS d)
		, b AS (INSERT INTO broadcasts (id, project, test_mode, name, channel, message_type, status, created_at, updated_at)
		        SELECT id, 'p', false, 'b', 'sms', 'text', status, switchboard_id_at(id), now() FROM unnest($2::text[], $3::text[]) AS u(id, status)
		        RETURNING id)
		, c AS (INSERT INTO broadcast_contacts (id, broadcast_id, broadcast_at, recipient, recipient_type, status, created_at)
		        SELECT 'bcc_' || substr(id, 4), id, switchboard_id_at(id), '+1555', 'phone', 'delivered', now() FROM b)
		, m AS (INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, created_at, updated_at)
		        SELECT 'msg_' || d, 'p', false, 'outbound', 'sms', 'text', 'sent', '+1555', at, at FROM days)
		, k AS (INSERT INTO message_idempotency_keys (project, test_mode, key, message_id, created_at)
		        SELECT 'p', false, 'k' || d, 'msg_' || d, at FROM days)
		, w AS (INSERT INTO webhook_deliveries (id, project, event, endpoint_kind, endpoint_name, data, created_at)
		        SELECT 'evt_' || d, 'p', 'message.sent', 'sender', 's', '{}', at FROM days)
		, h AS (INSERT INTO risk_holds (message_id, project, test_mode, rule, reason, held_at, expires_at, decided_at, decision)
		        SELECT 'msg_' || d, 'p', false, 'r', 'why', at, at + interval '2 hours', at, 'approved' FROM days)
		, r AS (INSERT INTO risk_refusals (project, test_mode, message_id, at) SELECT 'p', false, 'msg_r' || d, at FROM days)
		, i AS (INSERT INTO inbound_days (project, test_mode, recipient, day)
		        SELECT 'p', false, '+1555', (at AT TIME ZONE 'UTC')::date FROM days)
		, f AS (INSERT INTO attachment_contents (id, content, created_at) SELECT 'atc_' || d, '\x00', at FROM days)
		, a AS (INSERT INTO message_attachments (id, message_id, position, filename, content_ref, created_at)
		        SELECT 'att_' || d, 'msg_' || d, 0, 'f.pdf', 'atc_' || d, at FROM days)
		INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, url, latency_ms)
		SELECT 'evt_' || d, 1, at, 'https://example.com', 1 FROM days`, today, broadcasts, statuses); err != nil {
		t.Fatal(err)
	}
	p := retention.Pruner{Pool: pool, Log: testr.New(t), Policy: retention.Policy{Messages: 30, WebhookDeliveries: 10, WebhookAttempts: 5, IdempotencyKeys: 3}}
	if err := p.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int{
		// A day's partition is dropped once it ends before now less the setting: the days kept are
		// today and the setting's days before it.
		"messages": 30, "message_idempotency_keys": 3, "webhook_deliveries": 10, "webhook_delivery_attempts": 5,
		"inbound_days": 30, "risk_holds": 30, "risk_refusals": 30, // kept as long as the messages
		"message_attachments": 30, "attachment_contents": 30,
	} {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want+1 {
			t.Errorf("%s: %d days left, want %d", table, n, want+1)
		}
	}
	// Broadcast recipients are kept as long as the messages, and from the day of a broadcast that
	// has not ended on: the 41 days from the draft's, which holds the draft's recipient too.
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM broadcast_contacts`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 42 {
		t.Errorf("broadcast_contacts: %d recipients left, want 42", left)
	}
	// Once the draft is cancelled its day goes, and those after it to the setting's.
	if _, err := pool.Exec(ctx, `UPDATE broadcasts SET status = 'cancelled' WHERE id = $1`, draft); err != nil {
		t.Fatal(err)
	}
	if err := p.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM broadcast_contacts`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 31 {
		t.Errorf("broadcast_contacts after the draft ended: %d days left, want 31", left)
	}
	// Pruning again drops nothing more.
	if err := p.Prune(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPruneDeletesEndedConsoleSessions: sessions and sign-in links past their end go; live ones
// and the audit stay.
func TestPruneDeletesEndedConsoleSessions(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO console_sessions (id_hash, csrf_token, operator, created_at, last_seen_at, expires_at)
		 VALUES ('\x01', 'a', 'ops', now() - interval '13 hours', now() - interval '13 hours', now() - interval '1 hour'),
		        ('\x02', 'b', 'ops', now(), now(), now() + interval '12 hours')`,
		`INSERT INTO console_logins (token_hash, operator, created_at, expires_at)
		 VALUES ('\x01', 'ops', now() - interval '1 hour', now() - interval '45 minutes'), ('\x02', 'ops', now(), now() + interval '15 minutes')`,
		`INSERT INTO console_audit (at, actor, project, action, target) VALUES (now() - interval '400 days', 'operator ops', 'acme', 'replay delivery', 'evt_1')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	p := retention.Pruner{Pool: pool, Log: testr.New(t), Policy: retention.Default}
	if err := p.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	var sessions, logins, audit int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM console_sessions WHERE id_hash = '\x02'), (SELECT count(*) FROM console_sessions),
		(SELECT count(*) FROM console_logins), (SELECT count(*) FROM console_audit)`).Scan(new(int), &sessions, &logins, &audit); err != nil {
		t.Fatal(err)
	}
	if sessions != 1 || logins != 1 || audit != 1 {
		t.Errorf("left %d sessions, %d links, %d audit rows; want 1, 1, 1", sessions, logins, audit)
	}
}
