package broadcast

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// contactStatus is the recipient status a message status puts its recipient in: queued until
// the provider takes the message, sending until a receipt says more, then delivered or failed.
func contactStatus(messageStatus string) string {
	switch messageStatus {
	case "sent":
		return "sending"
	case "delivered", "read":
		return "delivered"
	case "failed":
		return "failed"
	}
	return "queued"
}

// FollowMessages moves the recipients of broadcast messages that moved, and their broadcasts'
// counters and costs, inside the transaction that moved the messages (message.BulkFollower).
// A message refused and refunded (it never went) no longer counts in the broadcast's cost.
func (s *Service) FollowMessages(ctx context.Context, tx pgx.Tx, moved []db.Message) error {
	p := db.FollowBroadcastContactsParams{Now: s.now().UTC()}
	for _, m := range moved {
		cost := int64(-1)
		if m.CostMicros != nil {
			cost = *m.CostMicros
		}
		if m.Status == "failed" && m.ErrorCode != nil && message.Refunded(*m.ErrorCode) && cost > 0 {
			cost = 0
		}
		p.Ids, p.Statuses, p.Costs = append(p.Ids, *m.BroadcastContactID), append(p.Statuses, contactStatus(m.Status)), append(p.Costs, cost)
		p.ErrorCodes, p.ErrorMessages = append(p.ErrorCodes, deref(m.ErrorCode)), append(p.ErrorMessages, deref(m.ErrorMessage))
	}
	p.BroadcastFrom, p.BroadcastTo = partition.Bounds(p.Ids)
	rows, err := db.Planned(tx).FollowBroadcastContacts(ctx, p)
	if err != nil {
		return fmt.Errorf("move broadcast recipients: %w", err)
	}
	byBroadcast := map[string]*counts{}
	var ids []string
	for _, r := range rows {
		d := byBroadcast[r.BroadcastID]
		if d == nil {
			d = &counts{db.CountBroadcastParams{ID: r.BroadcastID, Now: p.Now}}
			byBroadcast[r.BroadcastID] = d
			ids = append(ids, r.BroadcastID)
		}
		d.add(r.OldStatus, -1)
		d.add(r.NewStatus, 1)
		d.Cost += r.NewCost - r.OldCost
	}
	cs := make([]counts, len(ids))
	for i, id := range ids {
		cs[i] = *byBroadcast[id]
	}
	return addCounts(ctx, tx, cs...)
}

// add counts n recipients into a status.
func (d *counts) add(status string, n int32) {
	switch status {
	case "pending":
		d.Pending += n
	case "queued":
		d.Queued += n
	case "sending":
		d.Sending += n
	case "delivered":
		d.Delivered += n
	case "failed":
		d.Failed += n
	case "skipped":
		d.Skipped += n
	}
}
