// Package retention says how long the data that grows with traffic is kept, and drops what is
// older: whole days of the time-partitioned tables (internal/partition), never row by row.
// docs/data-lifecycle.md has the policy, its bounds, and what each API shows of expired data.
package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/periodic"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Policy is the installation's retention, in days.
type Policy struct {
	// Messages: a message's row, body, files and metadata (365 days).
	Messages int
	// WebhookDeliveries: a webhook delivery and its attempts' log (30 days).
	WebhookDeliveries int
	// WebhookAttempts: the log of a delivery's attempts (the URL, status, latency and answer of
	// each), when kept for less time than the deliveries; 0 keeps it as long as they are.
	WebhookAttempts int
	// IdempotencyKeys: how long a send's idempotency key answers a repeat with the first
	// message (7 days).
	IdempotencyKeys int
}

// Default is the policy of an installation that sets none.
var Default = Policy{Messages: 365, WebhookDeliveries: 30, IdempotencyKeys: 7}

// Bounds of each setting, in days: a day is the partitions' span, so no retention is shorter;
// a key is kept at least a day, since clients retry a lost answer within hours.
const (
	MinDays                = 1
	MaxMessageDays         = 3650
	MaxWebhookDeliveryDays = 365
	MaxIdempotencyKeyDays  = 30
)

// Validate says which setting is out of its bounds.
func (p Policy) Validate() error {
	for _, s := range []struct {
		name      string
		days, max int
	}{
		{"messages", p.Messages, MaxMessageDays},
		{"webhook deliveries", p.WebhookDeliveries, MaxWebhookDeliveryDays},
		{"idempotency keys", p.IdempotencyKeys, MaxIdempotencyKeyDays},
	} {
		if s.days < MinDays || s.days > s.max {
			return fmt.Errorf("retention of %s: %d days is out of bounds (%d to %d)", s.name, s.days, MinDays, s.max)
		}
	}
	if p.WebhookAttempts != 0 && (p.WebhookAttempts < MinDays || p.WebhookAttempts > p.WebhookDeliveries) {
		return fmt.Errorf("retention of webhook attempts: %d days is out of bounds (%d to the deliveries' %d, or 0 for as long as the deliveries)",
			p.WebhookAttempts, MinDays, p.WebhookDeliveries)
	}
	return nil
}

// days is how long the table's rows are kept.
func (p Policy) days(table string) int {
	switch table {
	case "messages":
		return p.Messages
	case "message_idempotency_keys":
		return p.IdempotencyKeys
	case "webhook_deliveries":
		return p.WebhookDeliveries
	case "webhook_delivery_attempts":
		if p.WebhookAttempts != 0 {
			return p.WebhookAttempts
		}
		return p.WebhookDeliveries
	case "broadcast_contacts": // a broadcast's recipients, as long as the messages sent to them
		return p.Messages
	case "risk_holds", "risk_refusals": // the review of a message, as long as the message
		return p.Messages
	case "message_attachments", "attachment_contents": // a message's files, with the message
		return p.Messages
	}
	return 0 // a table no retention names is never pruned
}

// Since is the oldest instant of table's rows that the policy keeps at now: older rows are
// expired (reads do not show them) until their partition is dropped.
func (p Policy) Since(table string, now time.Time) time.Time {
	return now.UTC().Add(-time.Duration(p.days(table)) * partition.Day)
}

// IdempotencyKeysSince is Since for idempotency keys.
func (p Policy) IdempotencyKeysSince(now time.Time) time.Time {
	return p.Since("message_idempotency_keys", now)
}

// Pruner drops the partitions whose every row is past the policy, once at start and then every
// Every (an hour). Any number of processes may run one: a table's drops take turns on its lock.
type Pruner struct {
	Pool   *pgxpool.Pool
	Policy Policy
	Log    logr.Logger
	Every  time.Duration
	Now    func() time.Time
}

// NeedLeaderElection is false: every worker prunes, one at a time per table.
func (p *Pruner) NeedLeaderElection() bool { return false }

// Start runs the pruner until ctx ends.
func (p *Pruner) Start(ctx context.Context) error {
	periodic.Run(ctx, p.Every, time.Hour, func(ctx context.Context) {
		if err := p.Prune(ctx); err != nil && ctx.Err() == nil {
			p.Log.Error(err, "drop expired partitions")
		}
	})
	return nil
}

// unfinishedBroadcasts moves horizon back to the partition of the oldest broadcast that has not
// ended (a draft, one in review, scheduled, sending or paused): its recipients are still to be
// sent to, or to be read while it runs, however old it is. A day is dropped whole, so the
// broadcasts made after it on that day keep theirs too until it ends.
func (p *Pruner) unfinishedBroadcasts(ctx context.Context, horizon time.Time) (time.Time, error) {
	var oldest *time.Time
	err := p.Pool.QueryRow(ctx, `SELECT min(switchboard_id_at(id)) FROM broadcasts
		WHERE status NOT IN ('completed', 'cancelled', 'failed', 'rejected_final')`).Scan(&oldest)
	if err != nil {
		return horizon, fmt.Errorf("find the oldest unfinished broadcast: %w", err)
	}
	if oldest == nil || !oldest.Before(horizon) {
		return horizon, nil
	}
	held := oldest.UTC().Truncate(partition.Day)
	p.Log.Info("keeping broadcast recipients past their retention: a broadcast of that day has not ended",
		"since", held.Format(time.DateOnly))
	return held, nil
}

// Prune drops every table's partitions past the policy.
func (p *Pruner) Prune(ctx context.Context) error {
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	for _, t := range partition.Tables {
		done, err := partition.IsPartitioned(ctx, p.Pool, t)
		if err != nil {
			return err
		}
		if !done || p.Policy.days(t.Name) == 0 {
			continue // not converted yet (a migration under way), or kept by no setting
		}
		horizon := p.Policy.Since(t.Name, now)
		if t.Name == "broadcast_contacts" {
			if horizon, err = p.unfinishedBroadcasts(ctx, horizon); err != nil {
				return err
			}
		}
		began := time.Now()
		dropped, err := partition.DropBefore(ctx, p.Pool, t, horizon)
		if len(dropped) > 0 {
			p.Log.Info("dropped expired partitions", "table", t.Name, "partitions", dropped, "took", time.Since(began).Round(time.Millisecond))
		}
		if err != nil {
			return err
		}
	}
	if p.Policy.days("messages") > 0 {
		// The days inbound messages came to an address: a row a day, past the messages' own.
		if _, err := p.Pool.Exec(ctx, "DELETE FROM inbound_days WHERE day < ($1::timestamptz AT TIME ZONE 'UTC')::date", p.Policy.Since("messages", now)); err != nil {
			return fmt.Errorf("delete expired inbound days: %w", err)
		}
	}
	// Console sessions and sign-in links past their end (the audit is kept).
	if err := db.Planned(p.Pool).PruneConsoleSessions(ctx, now.UTC()); err != nil {
		return fmt.Errorf("delete ended console sessions: %w", err)
	}
	if p.Policy.days("webhook_deliveries") > 0 {
		// The endpoints' health sums their attempts: it goes with the deliveries.
		if err := db.Planned(p.Pool).PruneWebhookEndpointHealth(ctx, p.Policy.Since("webhook_deliveries", now)); err != nil {
			return fmt.Errorf("delete expired webhook endpoint health: %w", err)
		}
	}
	return nil
}
