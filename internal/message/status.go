package message

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/quota"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// statusFrom says from which statuses a message may move to each status: a late or repeated
// step is ignored, so statuses only move forward.
var statusFrom = map[string][]string{
	transport.StatusSent:      {"queued", "sending"},
	transport.StatusDelivered: {"sent"},
	transport.StatusRead:      {"sent", "delivered"},
	transport.StatusFailed:    {"queued", "sending", "sent"},
}

// StatusChange is a status a message moves to.
type StatusChange struct {
	// MessageID names the message; when it is empty, ProviderMessageID does (a provider's
	// callback, for live messages sent through Via).
	MessageID         string
	ProviderMessageID string
	// Status is one of transport's Status constants.
	Status string
	// Failure is the errorCode and message of a failed message.
	Failure *transport.Failure
	// Via is the Provider a callback came through: it may move only the messages sent through
	// it. Required when ProviderMessageID names the message, and by ApplyProviderStatus.
	Via Via
}

// Via is the Provider a provider's callback came through.
type Via struct {
	// Provider is the Provider's "namespace/name".
	Provider string
	// Project is the one project it serves (a Provider in a project's namespace); "" for an
	// installation Provider, which serves every project.
	Project string
}

// carried says whether message m was sent through v: the Provider its dispatch recorded, or,
// for a message sent before Providers were recorded, one that serves m's project.
func (v Via) carried(m db.Message) bool {
	if m.Provider != nil {
		return *m.Provider == v.Provider
	}
	return v.Project == "" || v.Project == m.Project
}

// ApplyStatus moves a message to a status and writes its event, in one transaction. The
// dispatcher, the sandbox and providers' callbacks all move messages through it. It reports
// whether the message moved: a late, repeated or unknown change moves nothing and is no error.
func (s *Service) ApplyStatus(ctx context.Context, ch StatusChange) (bool, error) {
	if _, ok := statusFrom[ch.Status]; !ok {
		return false, fmt.Errorf("apply status: unknown status %q", ch.Status)
	}
	moved := false
	err := partition.Retry(ctx, s.pool, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
			var f followed
			if moved, err = s.applyIn(ctx, tx, ch, &f); err != nil {
				return err
			}
			return s.follow(ctx, tx, f)
		})
	})
	return moved, err
}

// BulkFollower moves the broadcast recipients of messages that moved, inside the transaction
// that moved them, so that a broadcast's counters always match its messages.
type BulkFollower interface {
	FollowMessages(ctx context.Context, tx pgx.Tx, moved []db.Message) error
}

// SetBroadcastFollower makes f follow the moves of broadcast messages.
func (s *Service) SetBroadcastFollower(f BulkFollower) { s.follower = f }

// followed are the broadcast messages a transaction moved, for its follower.
type followed []db.Message

// follow hands f to the follower, last in the transaction: the broadcasts' rows it changes are
// the ones every move of a broadcast's messages waits on.
func (s *Service) follow(ctx context.Context, tx pgx.Tx, f followed) error {
	if len(f) == 0 || s.follower == nil {
		return nil
	}
	return s.follower.FollowMessages(ctx, tx, f)
}

// applyIn is ApplyStatus inside tx; a broadcast message it moves is added to f.
func (s *Service) applyIn(ctx context.Context, tx pgx.Tx, ch StatusChange, f *followed) (bool, error) {
	q := db.Planned(tx)
	id := ch.MessageID
	if id == "" {
		m, found, err := liveMessageThrough(ctx, q, ch.Via, ch.ProviderMessageID)
		if err != nil || !found {
			return false, err
		}
		id = m.ID
	}
	p := db.SetMessageStatusParams{ID: id, Status: ch.Status, UpdatedAt: s.now().UTC(), FromStatuses: statusFrom[ch.Status]}
	if ch.MessageID != "" && ch.ProviderMessageID != "" {
		p.ProviderMessageID = &ch.ProviderMessageID
	}
	if f := ch.Failure; f != nil {
		p.ErrorCode, p.ErrorMessage = &f.Code, &f.Message
		if f.ProviderCode != "" {
			p.ErrorProviderCode = &f.ProviderCode
		}
	}
	row, err := s.messagesOf(tx, id).SetMessageStatus(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // not from a status this one follows: stale or repeated
	}
	if err != nil {
		return false, fmt.Errorf("move message %s to %s: %w", id, ch.Status, err)
	}
	moved := db.Message(row) // the same columns: the statement returns the moved row
	if moved.Status == "failed" && moved.ErrorCode != nil && refunded[*moved.ErrorCode] {
		// The message never went: what it was charged returns to the balance.
		if _, err := billing.Refund(ctx, tx, moved.Project, moved.ID, s.now().UTC()); err != nil {
			return false, err
		}
		if moved.ChargedMicros != nil {
			zero := int64(0)
			moved.ChargedMicros = &zero
		}
	}
	if moved.Status == "failed" && moved.Direction == "outbound" {
		// A failed send does not count against the monthly allowance.
		if meter, ok := quota.MeterOf(moved.Channel); ok && meter == quota.Conversational {
			counted, err := s.countedOn(ctx, moved.Project)
			if err != nil {
				return false, err
			}
			for _, p := range counted {
				if err := quota.GiveBack(ctx, tx, p, moved.TestMode, meter, 1, moved.CreatedAt); err != nil {
					return false, err
				}
			}
		}
	}
	if moved.BroadcastContactID != nil {
		*f = append(*f, moved)
	}
	return true, s.event(ctx, tx, moved)
}

// ApplyProviderStatus is ApplyStatus for a provider's report on a live message. A report
// implies that the provider took the message: one that arrives while the dispatcher has not yet
// recorded sent (MessageID set, the provider's id not stored yet) first moves the message to
// sent with the provider's id, so message.sent still comes before the report's own event, and
// the dispatcher's late sent is then a step already made. A message of test traffic is never
// moved by a provider, nor one that was not sent through ch.Via: such a report moves nothing,
// as for an unknown message.
func (s *Service) ApplyProviderStatus(ctx context.Context, ch StatusChange) (bool, error) {
	if ch.Via.Provider == "" {
		return false, errors.New("apply provider status: no Provider it came through")
	}
	if ch.MessageID != "" {
		m, err := s.messagesOf(s.pool, ch.MessageID).GetMessageByID(ctx, ch.MessageID)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read message %s: %w", ch.MessageID, err)
		}
		if m.TestMode || m.Direction != "outbound" || !ch.Via.carried(m) {
			return false, nil
		}
		if ch.Status != transport.StatusSent {
			sent := StatusChange{MessageID: ch.MessageID, ProviderMessageID: ch.ProviderMessageID, Status: transport.StatusSent}
			if _, err := s.ApplyStatus(ctx, sent); err != nil {
				return false, err
			}
			// The id is recorded by the sent step or was already: a report on a second send of
			// the message (the duplicate window) must not replace it.
			ch.ProviderMessageID = ""
		}
	}
	return s.ApplyStatus(ctx, ch)
}

// AwaitingReceipt returns the provider ids of the live messages sender sent recipient on channel
// up to upTo that have not reached status yet (a read covers sent and delivered ones, a delivery
// sent ones): what a receipt by time, such as Messenger's watermark, reports on. At most 1,000,
// oldest first.
func (s *Service) AwaitingReceipt(ctx context.Context, project, sender, channel, recipient, status string, upTo time.Time) ([]string, error) {
	if status != transport.StatusRead && status != transport.StatusDelivered {
		return nil, nil
	}
	ids, err := db.Planned(s.pool).AwaitingReceipt(ctx, db.AwaitingReceiptParams{Project: project, Sender: sender, Channel: channel,
		Recipient: recipient, Statuses: statusFrom[status], UpTo: upTo, Since: upTo.Add(-partition.Lookback)})
	if err != nil {
		return nil, fmt.Errorf("find messages a receipt covers: %w", err)
	}
	return ids, nil
}

// KnowsProviderID says whether a live message sent through via carries the provider's id.
func (s *Service) KnowsProviderID(ctx context.Context, via Via, providerMessageID string) (bool, error) {
	_, found, err := liveMessageThrough(ctx, db.Planned(s.pool), via, providerMessageID)
	return found, err
}

// liveMessageThrough finds the live message sent through via that carries the provider's id.
func liveMessageThrough(ctx context.Context, q *db.Queries, via Via, providerMessageID string) (db.Message, bool, error) {
	if via.Provider == "" {
		return db.Message{}, false, errors.New("find message of provider id: no Provider it came through")
	}
	m, err := partition.RecentFirst(time.Now(), func(since, until time.Time) (db.Message, error) {
		return q.GetLiveMessageThrough(ctx, db.GetLiveMessageThroughParams{ProviderMessageID: &providerMessageID,
			Provider: &via.Provider, Project: via.Project, Since: since, Until: until})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Message{}, false, nil
	}
	if err != nil {
		return db.Message{}, false, fmt.Errorf("find message of provider id: %w", err)
	}
	return m, true, nil
}
