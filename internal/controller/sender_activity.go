package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// ActivitySource reads a sender's traffic from Postgres for its status.
type ActivitySource struct {
	Pool *pgxpool.Pool
	// Every is how often a sender's figures are refreshed.
	Every time.Duration
}

// activity reads the sender's figures, keeping the refresh time of unchanged ones so the status
// is not rewritten when nothing moved.
func (a *ActivitySource) activity(ctx context.Context, sender *v1alpha1.Sender, now time.Time) (*v1alpha1.SenderActivity, error) {
	q := db.Planned(a.Pool)
	counts, err := q.SenderActivity(ctx, db.SenderActivityParams{Project: sender.Namespace, Sender: sender.Name, Since: now.Add(-24 * time.Hour)})
	if err != nil {
		return nil, fmt.Errorf("read activity of sender %s: %w", sender.Name, err)
	}
	out := &v1alpha1.SenderActivity{Outbound24h: counts.Outbound, Inbound24h: counts.Inbound, RefreshedAt: metav1.NewTime(now.UTC().Truncate(time.Second))}
	// The last message within partition.Lookback; before that, what the status already says.
	last, err := q.SenderLastMessage(ctx, db.SenderLastMessageParams{Project: sender.Namespace, Sender: sender.Name,
		Since: now.Add(-partition.Lookback)})
	switch {
	case err == nil:
		at := metav1.NewTime(last.CreatedAt.UTC().Truncate(time.Second))
		out.LastMessageID, out.LastMessageAt = last.ID, &at
	case errors.Is(err, pgx.ErrNoRows) && sender.Status.Activity != nil:
		out.LastMessageID, out.LastMessageAt = sender.Status.Activity.LastMessageID, sender.Status.Activity.LastMessageAt
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("read last message of sender %s: %w", sender.Name, err)
	}
	if prev := sender.Status.Activity; prev != nil && prev.Outbound24h == out.Outbound24h && prev.Inbound24h == out.Inbound24h &&
		prev.LastMessageID == out.LastMessageID {
		out.RefreshedAt = prev.RefreshedAt
	}
	return out, nil
}
