package metrics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const horizon = 7 * 24 * time.Hour

// gather collects b through a registry, as a scrape does, into "name{label=value,…}" → value.
func gather(t *testing.T, b *Backlog) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(b); err != nil {
		t.Fatal(err)
	}
	return gatherFrom(t, reg)
}

// gatherFrom collects what g holds into "name{label=value,…}" → value (a gauge's or a counter's).
func gatherFrom(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// delivery adds a pending webhook delivery made at made and due at due.
func delivery(t *testing.T, pool *pgxpool.Pool, made, due time.Time, status string) {
	t.Helper()
	id, err := randid.Timed("evt_", made)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, pool, `INSERT INTO webhook_deliveries (id, project, event, endpoint_kind, endpoint_name, data, status, created_at, next_attempt_at)
		VALUES ($1, 'p', 'message.sent', 'sender', 's', '{}', $2, $3, $4)`, id, status, made, due)
}

func TestBacklogReportsQueuesWebhooksAndBroadcasts(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC()

	// River: two jobs available in default (the older due 30 s ago), one scheduled, one
	// retryable, one done (not counted); one available in a queue not configured.
	for _, j := range []struct {
		queue, state string
		at           time.Time
	}{
		{"default", "available", now.Add(-30 * time.Second)},
		{"default", "available", now.Add(-time.Second)},
		{"default", "scheduled", now.Add(time.Hour)},
		{"default", "retryable", now.Add(time.Minute)},
		{"default", "completed", now.Add(-time.Hour)},
		{"bulk", "available", now.Add(-5 * time.Second)},
	} {
		exec(t, pool, `INSERT INTO river_job (kind, max_attempts, queue, state, scheduled_at, args, finalized_at)
			VALUES ('test', 5, $1, $2::river_job_state, $3, '{}', CASE WHEN $2 = 'completed' THEN now() END)`, j.queue, j.state, j.at)
	}
	// Webhooks: two due (the older for 90 s), one retry later, one delivered, and one due
	// but made before the claim's horizon (the claim does not look there either).
	delivery(t, pool, now.Add(-2*time.Minute), now.Add(-90*time.Second), "pending")
	delivery(t, pool, now.Add(-time.Minute), now.Add(-time.Second), "pending")
	delivery(t, pool, now.Add(-time.Minute), now.Add(5*time.Minute), "pending")
	delivery(t, pool, now.Add(-time.Minute), now.Add(-time.Minute), "delivered")
	delivery(t, pool, now.Add(-horizon-time.Hour), now.Add(-horizon), "pending")
	// Agent executions: one new for 20 s, one whose run died 3 s ago (its lease ended), one to
	// retry in a minute; one running, one finished and a call turn's whose process died (the
	// call sweeper's) are not waiting.
	for i, e := range []struct {
		status string
		made   time.Duration
		lease  *time.Duration
		call   bool
	}{
		{"pending", -20 * time.Second, nil, false},
		{"running", -time.Minute, ptr(-3 * time.Second), false},
		{"pending", -time.Minute, ptr(time.Minute), false},
		{"running", -time.Second, ptr(30 * time.Second), false},
		{"success", -time.Hour, nil, false},
		{"running", -time.Minute, ptr(-time.Minute), true},
	} {
		var lease *time.Time
		if e.lease != nil {
			lease = ptr(now.Add(*e.lease))
		}
		var call *string
		if e.call {
			call = ptr("call_1")
		}
		exec(t, pool, `INSERT INTO agent_executions (id, project, test_mode, agent, sender, conversation_id, inbound_message_id,
			status, created_at, lease_until, call_id) VALUES ($1, 'p', false, 'a', 's', 'c', $1, $2, $3, $4, $5)`,
			fmt.Sprintf("aex_%d", i), e.status, now.Add(e.made), lease, call)
	}
	// Broadcasts: two sending with 40 and 2 recipients to hand over, one paused (its pending
	// recipients are not counted), and one completed, one draft and one in review (not the
	// fan-out's).
	for i, b := range []struct {
		status  string
		pending int
	}{{"sending", 40}, {"sending", 2}, {"paused", 7}, {"completed", 0}, {"draft", 0}, {"pending_review", 0}} {
		exec(t, pool, `INSERT INTO broadcasts (id, project, test_mode, name, channel, message_type, status, created_at, updated_at, pending_count)
			VALUES ($1, 'p', false, 'b', 'sms', 'text', $2, now(), now(), $3)`, fmt.Sprintf("bc_%d", i), b.status, b.pending)
	}

	b := &Backlog{Pool: pool, Queues: []string{"default", "empty"}, Horizon: horizon}
	got := gather(t, b)
	want := map[string]float64{
		"switchboard_queue_depth{queue=default,state=available}":  2,
		"switchboard_queue_depth{queue=default,state=scheduled}":  1,
		"switchboard_queue_depth{queue=default,state=retryable}":  1,
		"switchboard_queue_depth{queue=bulk,state=available}":     1,
		"switchboard_queue_depth{queue=bulk,state=scheduled}":     0,
		"switchboard_queue_depth{queue=empty,state=available}":    0,
		"switchboard_queue_depth{queue=empty,state=retryable}":    0,
		"switchboard_queue_depth{queue=webhooks,state=available}": 2,
		"switchboard_queue_depth{queue=webhooks,state=scheduled}": 1,
		"switchboard_queue_depth{queue=agents,state=available}":   2,
		"switchboard_queue_depth{queue=agents,state=retryable}":   1,
		"switchboard_queue_oldest_age_seconds{queue=empty}":       0,
		"switchboard_broadcasts{status=sending}":                  2,
		"switchboard_broadcasts{status=paused}":                   1,
		"switchboard_broadcasts{status=approved}":                 0,
		"switchboard_broadcast_recipients_pending{}":              42,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (reported: %t), want %v", k, g, ok, v)
		}
	}
	for _, k := range []string{"switchboard_broadcasts{status=completed}", "switchboard_broadcasts{status=draft}",
		"switchboard_broadcasts{status=pending_review}"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s reported; only the fan-out's broadcasts are", k)
		}
	}
	// Ages by two clocks (River's by the database's): within a few seconds of the truth.
	for k, v := range map[string]float64{
		"switchboard_queue_oldest_age_seconds{queue=default}":  30,
		"switchboard_queue_oldest_age_seconds{queue=bulk}":     5,
		"switchboard_queue_oldest_age_seconds{queue=webhooks}": 90,
		"switchboard_queue_oldest_age_seconds{queue=agents}":   20,
	} {
		if g := got[k]; g < v || g > v+5 {
			t.Errorf("%s = %v, want about %v", k, g, v)
		}
	}
}

func TestBacklogIsReadOnceForScrapesWithinMaxAge(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC()
	b := &Backlog{Pool: pool, Queues: []string{"default"}, Horizon: horizon, now: func() time.Time { return now }}
	key := "switchboard_queue_depth{queue=webhooks,state=available}"
	if got := gather(t, b)[key]; got != 0 {
		t.Fatalf("%s = %v on an empty database", key, got)
	}
	delivery(t, pool, now.Add(-time.Minute), now.Add(-time.Minute), "pending")
	now = now.Add(DefaultMaxAge - time.Millisecond)
	if got := gather(t, b)[key]; got != 0 {
		t.Errorf("%s = %v within %s of the last read; want the read shared", key, got, DefaultMaxAge)
	}
	now = now.Add(time.Millisecond)
	if got := gather(t, b)[key]; got != 1 {
		t.Errorf("%s = %v once the read is %s old; want it read again", key, got, DefaultMaxAge)
	}
}

func TestBacklogReportsNothingWhenTheDatabaseFails(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	exec(t, pool, `DROP TABLE river_job CASCADE`)
	if got := gather(t, &Backlog{Pool: pool, Queues: []string{"default"}, Horizon: horizon}); len(got) != 0 {
		t.Errorf("a read that failed reported %v; want nothing (absent series)", got)
	}
}

// The webhook read touches the partitions of the claim's horizon only, as the claim does: a
// statement over a year of daily partitions would lock every one of them at each scrape.
func TestBacklogReadsOnlyTheClaimsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC()
	pgtest.SixtyDays(t, pool, now, "webhook_deliveries")
	parts, err := partition.List(ctx, pool, partition.Table{Name: "webhook_deliveries"})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, p := range parts {
		if p.To.After(now.Add(-horizon)) {
			want++
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for range 8 { // past the sixth run, when a prepared statement would get its generic plan
		if _, err := db.Planned(tx).WebhookBacklog(ctx, db.WebhookBacklogParams{Now: now, MadeSince: now.Add(-horizon)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := pgtest.LockedPartitions(t, tx, "webhook_deliveries"); len(got) != want {
		t.Errorf("the read locked %d partitions of %d, want the %d of the last %s", len(got), len(parts), want, horizon)
	}
}

// Start registers the backlog while it runs, and removes it after: an app that stops leaves
// the registry to the next.
func TestBacklogIsRegisteredWhileItRuns(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := &Backlog{Pool: pgtest.NewPool(t), Registry: reg, Queues: []string{"default"}, Horizon: horizon}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.Start(ctx) }()
	registered := func() bool {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		return len(families) > 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for !registered() {
		if time.Now().After(deadline) {
			t.Fatal("the backlog was not registered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if registered() {
		t.Error("the backlog is still registered after Start returned")
	}
}

func ptr[T any](v T) *T { return &v }
