package message

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// TypingLifetime is how long a typing indicator shows unless a reply ends it (spec: Limits).
const TypingLifetime = 25 * time.Second

// Conversation returns the key's conversation id.
func (s *Service) Conversation(ctx context.Context, key apikey.Key, id string) (db.Conversation, error) {
	c, err := db.Planned(s.pool).GetConversation(ctx, db.GetConversationParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Conversation{}, apperror.NotFoundf("No conversation %s.", id)
	}
	if err != nil {
		return db.Conversation{}, fmt.Errorf("read conversation %s: %w", id, err)
	}
	return c, nil
}

// ConversationFilter narrows a conversation list.
type ConversationFilter struct {
	Channel, Sender, Search *string
	// Address is the sender's address in the thread (v2 from).
	Address *string
	// BeforeTime and BeforeID continue after the last conversation of the previous page.
	BeforeTime *time.Time
	BeforeID   *string
	Limit      int
}

// Conversations returns the key's conversations, the most recently active first.
func (s *Service) Conversations(ctx context.Context, key apikey.Key, f ConversationFilter) ([]db.Conversation, error) {
	if f.Channel != nil && (*f.Channel == "auto" || !contains(Channels, *f.Channel)) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "channel", Message: "must be a channel other than auto"})
	}
	rows, err := db.Planned(s.pool).ListConversations(ctx, db.ListConversationsParams{Project: key.Project, TestMode: key.TestMode(),
		Channel: f.Channel, Sender: f.Sender, Address: f.Address, Search: f.Search, BeforeTime: f.BeforeTime, BeforeID: f.BeforeID, PageSize: int32(f.Limit)})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return rows, nil
}

// ConversationMessages returns a conversation's messages, newest first.
func (s *Service) ConversationMessages(ctx context.Context, key apikey.Key, id string, f ListFilter) ([]db.Message, error) {
	c, err := s.Conversation(ctx, key, id)
	if err != nil {
		return nil, err
	}
	since, _, err := s.messagesSince(ctx, key.Project)
	if err != nil {
		return nil, err
	}
	q := db.Planned(s.pool)
	read := func(spans []partition.Span, limit int) ([]db.Message, error) {
		froms, tos := partition.SpanBounds(spans)
		return q.ListConversationMessages(ctx, db.ListConversationMessagesParams{ConversationID: &id, Froms: froms, Tos: tos,
			Project: key.Project, TestMode: key.TestMode(), BeforeTime: f.BeforeTime, BeforeID: f.BeforeID, PageSize: int32(limit)})
	}
	var rows []db.Message
	if c.MessageDaysFrom != nil { // the days holding its messages are known: only their partitions are read
		if !c.MessageDaysFrom.After(c.CreatedAt) && c.CreatedAt.After(since) {
			// Kept since its first message: nothing lies before, and nothing is read there.
			since = c.CreatedAt.UTC().Truncate(partition.Day)
		}
		rows, err = partition.OnDays(pageTop(s.now(), f), since, c.MessageDays, *c.MessageDaysFrom, f.Limit, read)
	} else {
		rows, err = partition.NewestFirst(pageTop(s.now(), f), since, f.Limit, func(from, to time.Time, limit int) ([]db.Message, error) {
			return read([]partition.Span{{From: from, To: to}}, limit)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("list messages of conversation %s: %w", id, err)
	}
	return rows, nil
}

// ReadConversation marks the conversation read: its unread count goes back to 0.
func (s *Service) ReadConversation(ctx context.Context, key apikey.Key, id string) (db.Conversation, error) {
	c, err := db.Planned(s.pool).ReadConversation(ctx, db.ReadConversationParams{ID: id, Project: key.Project, TestMode: key.TestMode(),
		UpdatedAt: s.now().UTC()})
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Conversation{}, apperror.NotFoundf("No conversation %s.", id)
	}
	if err != nil {
		return db.Conversation{}, fmt.Errorf("read conversation %s: %w", id, err)
	}
	return c, nil
}

// Receipts tells a provider that a contact's message was read, with a typing indicator
// (the transport registry: WhatsApp's Cloud API; nothing for the sandbox).
type Receipts interface {
	Typing(ctx context.Context, m db.Message) error
}

// SetReceipts makes Typing tell the provider too.
func (s *Service) SetReceipts(r Receipts) { s.receipts = r }

// Typing marks an inbound WhatsApp message read and shows the contact a typing indicator, which
// ends when a reply is sent or after TypingLifetime.
func (s *Service) Typing(ctx context.Context, key apikey.Key, senderID, id string) error {
	m, err := s.Get(ctx, key, id)
	if err != nil {
		return err
	}
	if m.Direction != "inbound" || m.Channel != string(v1alpha1.ChannelWhatsApp) {
		return apperror.InvalidFields(apperror.FieldError{Path: "messageId",
			Message: "a typing indicator answers an inbound whatsapp message; this one is " + m.Direction + " on " + m.Channel})
	}
	if senderID != "" && senderID != m.Sender {
		return apperror.InvalidFields(apperror.FieldError{Path: "Service-Sender", Message: "the message was received by sender " + m.Sender})
	}
	if s.receipts != nil {
		// The contact sees it first: the provider is told before anything is recorded.
		if err := s.receipts.Typing(ctx, m); err != nil {
			e := apperror.New(apperror.Unavailable, "provider_unavailable", "The provider did not take the typing indicator; try again.")
			return errors.Join(e, err)
		}
	}
	now := s.now().UTC()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if _, err := q.MarkInboundRead(ctx, db.MarkInboundReadParams{ID: m.ID, UpdatedAt: now}); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("mark message %s read: %w", m.ID, err)
		}
		if m.ConversationID == nil {
			return nil // received before conversations existed: nothing shows the indicator
		}
		if err := q.StartTyping(ctx, db.StartTypingParams{ID: *m.ConversationID, Until: ptrTime(now.Add(TypingLifetime))}); err != nil {
			return fmt.Errorf("start typing in conversation %s: %w", *m.ConversationID, err)
		}
		return nil
	})
}

// React sends a reaction to message id: a reaction message to the same contact on the same
// channel, through the same sender unless senderID names another.
func (s *Service) React(ctx context.Context, key apikey.Key, senderID, id string, emoji *string) (db.Message, error) {
	if emoji == nil || *emoji == "" {
		return db.Message{}, apperror.InvalidFields(apperror.FieldError{Path: "emoji", Message: "is required"})
	}
	m, err := s.Get(ctx, key, id)
	if err != nil {
		return db.Message{}, err
	}
	to := m.Recipient
	if m.Direction == "inbound" {
		to = m.Originator
	}
	if senderID == "" {
		senderID = m.Sender
	}
	channel, messageType := m.Channel, "reaction"
	msg, _, err := s.Send(ctx, key, Request{To: &to, Channel: &channel, MessageType: &messageType,
		Content: &transport.Content{Emoji: *emoji, ReactTo: m.ID}, SenderID: senderID})
	return msg, err
}

func ptrTime(t time.Time) *time.Time { return &t }
