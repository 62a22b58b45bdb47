package message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// What a mirrored message is (Options.Mirrored).
const (
	MirroredHistory = "history" // the chats of the WhatsApp Business app before the number joined the Cloud API
	MirroredEcho    = "echo"    // a message the business sent from the app since
)

// Mirror is a message of a coexistence number's WhatsApp Business app: one of its history
// (either way) or an echo of one the business sent from the app.
type Mirror struct {
	Project, Sender string
	// Outbound: the business sent it (From is its number, To the contact).
	Outbound bool
	Kind     string // MirroredHistory or MirroredEcho
	transport.Inbound
}

// ReceiveMirrored stores mirrored messages in their conversations, once each (by provider id),
// with their contacts: never announced (no webhook), never answered by an agent, never counted
// toward the Free plan's allowance (spec: Limits), opening no WhatsApp window. Their time is
// the app's. It returns how many were new.
func (s *Service) ReceiveMirrored(ctx context.Context, ms []Mirror) (int, error) {
	n := 0
	for _, m := range ms {
		stored, err := s.mirror(ctx, m)
		if err != nil {
			return n, err
		}
		if stored {
			n++
		}
	}
	return n, nil
}

func (s *Service) mirror(ctx context.Context, in Mirror) (bool, error) {
	if in.ProviderMessageID == "" {
		return false, errors.New("a mirrored message has no provider id")
	}
	at := s.now().UTC()
	if in.ProviderTimestamp != nil {
		at = in.ProviderTimestamp.UTC()
	}
	at = at.Truncate(time.Microsecond)
	id, err := newMessageID(at)
	if err != nil {
		return false, err
	}
	contact, direction, status := in.From, "inbound", "received"
	if in.Outbound {
		contact, direction, status = in.To, "outbound", "sent"
	}
	conversation := conversationID(in.Project, false, in.Sender, contact)
	opts, err := json.Marshal(Options{Mirrored: in.Kind})
	if err != nil {
		return false, err
	}
	msg := db.Message{ID: id, Project: in.Project, Sender: in.Sender, Direction: direction, Channel: in.Channel,
		MessageType: in.MessageType, Status: status, Recipient: in.To, Originator: in.From, ConversationID: &conversation,
		ProviderMessageID: &in.ProviderMessageID, ProviderTimestamp: in.ProviderTimestamp, Options: opts, CreatedAt: at, UpdatedAt: at}
	if in.Text != "" {
		msg.Body = &in.Text
	}
	if in.Content != nil {
		if msg.Content, err = json.Marshal(in.Content); err != nil {
			return false, fmt.Errorf("encode content: %w", err)
		}
		if string(msg.Content) == "{}" {
			msg.Content = nil
		}
	}
	var profile *string
	if in.ProfileName != "" && !in.Outbound {
		profile = &in.ProfileName
	}
	stored := false
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := s.byProviderID(ctx, tx, s.now(), in.Project, false, in.Sender, in.ProviderMessageID)
		if err == nil {
			return nil // posted again, or synced twice: kept once
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("find message of provider id: %w", err)
		}
		contactID, err := newContact(ctx, tx, in.Project, false, contactChannel(in.Channel), addr.Key(contact), profile, at)
		if err != nil {
			return err
		}
		if _, err := record(ctx, tx, thread{msg: msg, contactID: &contactID, profileName: profile, mirrored: true}); err != nil {
			return err
		}
		stored = true
		return nil
	})
	return stored, err
}

// NamedContact is a contact of a WhatsApp Business app: its number and the name the business
// gave it.
type NamedContact struct {
	Phone, Name string
}

// NameContacts makes a WhatsApp contact of each number (one it does not have yet) and gives it
// the app's name when the project has not named it; it returns how many it named.
func (s *Service) NameContacts(ctx context.Context, project string, contacts []NamedContact) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now().UTC().Truncate(time.Microsecond)
		for _, c := range contacts {
			if !addr.IsE164(c.Phone) {
				continue
			}
			id, err := newContact(ctx, tx, project, false, "whatsapp", addr.Key(c.Phone), nil, now)
			if err != nil {
				return err
			}
			if c.Name == "" {
				continue
			}
			name := c.Name
			if err := db.Planned(tx).NameContactIfUnnamed(ctx, db.NameContactIfUnnamedParams{DisplayName: &name, Now: now, ID: id}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
