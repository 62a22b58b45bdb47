package message

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// WhatsAppWindow is how long a contact's message lets the business answer with free-form
// WhatsApp messages (spec: What the service does 3).
const WhatsAppWindow = 24 * time.Hour

// conversationID is the id of the thread between a sender and a contact address. It is derived,
// not drawn, so a send knows its conversation without reading or locking anything first.
func conversationID(project string, testMode bool, sender, address string) string {
	mode := "live"
	if testMode {
		mode = "test"
	}
	sum := sha256.Sum256([]byte(project + "\x00" + mode + "\x00" + sender + "\x00" + addr.Key(address)))
	digits := new(big.Int).SetBytes(sum[:18]).Text(62)
	// big.Int's base-62 digits are 0-9a-zA-Z; pad to a fixed width like the other ids.
	for len(digits) < 24 {
		digits = "0" + digits
	}
	return "conv_" + digits
}

// contactChannels are the contact-channel types that hold the address a message on channel
// goes to: one person's number is the same on SMS, WhatsApp and voice.
func contactChannels(channel string) []string {
	switch v1alpha1.Channel(channel) {
	case v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway, v1alpha1.ChannelWhatsApp, v1alpha1.ChannelVoice:
		return []string{"sms", "whatsapp", "voice"}
	}
	return []string{channel}
}

// contactChannel is the contact-channel type of a message's channel.
func contactChannel(channel string) string {
	if channel == string(v1alpha1.ChannelSMSOneway) {
		return string(v1alpha1.ChannelSMS)
	}
	return channel
}

// thread is a message and what it adds to its conversation.
type thread struct {
	msg         db.Message
	contactID   *string
	profileName *string
	referral    []byte
	// mirrored: a message of a coexistence number's app (history, echo): it opens no window and
	// is not unread.
	mirrored bool
}

// record stores msg and records it in its conversation inside tx, in one statement.
func record(ctx context.Context, tx pgx.Tx, t thread) (db.RecordMessageRow, error) {
	rows, err := recordAll(ctx, tx, []thread{t})
	if err != nil {
		return db.RecordMessageRow{}, err
	}
	return rows[0], nil
}

// recordAll is record for many messages, their statements sent together in one round trip (a
// broadcast's chunk of hundreds).
func recordAll(ctx context.Context, tx pgx.Tx, threads []thread) ([]db.RecordMessageRow, error) {
	params := make([]db.RecordMessageParams, len(threads))
	for i, t := range threads {
		m := t.msg
		address, ours, unread := m.Recipient, m.Originator, int64(0)
		var window *time.Time
		if m.Direction == "inbound" {
			address, ours, unread = m.Originator, m.Recipient, 1
			if t.mirrored {
				unread = 0
			}
			// WhatsApp, Messenger and Instagram let the business answer freely for 24 hours
			// after the contact writes (a Messenger or Instagram contact is an id of that
			// channel alone, so the conversation's window is that channel's).
			switch v1alpha1.Channel(m.Channel) {
			case v1alpha1.ChannelWhatsApp, v1alpha1.ChannelMessenger, v1alpha1.ChannelInstagram:
				if !t.mirrored {
					w := m.CreatedAt.Add(WhatsAppWindow)
					window = &w
				}
			}
		}
		params[i] = db.RecordMessageParams{
			ID: m.ID, Project: m.Project, TestMode: m.TestMode, Sender: m.Sender, Direction: m.Direction, Channel: m.Channel,
			MessageType: m.MessageType, Status: m.Status, Recipient: m.Recipient, Originator: m.Originator, Body: m.Body,
			Content: m.Content, Subject: m.Subject, Metadata: m.Metadata, Options: m.Options,
			ProviderMessageID: m.ProviderMessageID, ProviderTimestamp: m.ProviderTimestamp, CreatedAt: m.CreatedAt,
			ConversationID: *m.ConversationID, ContactIdentifier: addr.Key(address), RecipientKey: addr.Key(m.Recipient), Address: ours, ContactID: t.contactID,
			ContactChannels: contactChannels(m.Channel), Unread: unread, ProfileName: t.profileName, Referral: t.referral,
			WhatsappWindowUntil: window, BroadcastContactID: m.BroadcastContactID, RiskReviewed: m.RiskReviewed,
			CostMicros: m.CostMicros, CostProviderMicros: m.CostProviderMicros, ChargedMicros: m.ChargedMicros,
		}
	}
	rows := make([]db.RecordMessageRow, len(threads))
	var failed error
	results := db.Planned(tx).RecordMessage(ctx, params)
	results.QueryRow(func(i int, row db.RecordMessageRow, err error) {
		if err != nil && failed == nil {
			failed = fmt.Errorf("store message %s in conversation %s: %w", params[i].ID, params[i].ConversationID, err)
		}
		rows[i] = row
	})
	if err := results.Close(); err != nil && failed == nil {
		failed = fmt.Errorf("store messages: %w", err)
	}
	return rows, failed
}

// newContact makes the contact an inbound message comes from, with the address it wrote from,
// and returns its id; when a concurrent message created it first, that contact's id.
func newContact(ctx context.Context, tx pgx.Tx, project string, testMode bool, channel, address string, profileName *string, at time.Time) (string, error) {
	q := db.Planned(tx)
	id, err := q.FindContactChannel(ctx, db.FindContactChannelParams{Project: project, TestMode: testMode, Channel: channel, Identifier: address})
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("find contact: %w", err)
	}
	id, err = randid.Prefixed("ct_", 24)
	if err != nil {
		return "", err
	}
	chID, err := randid.Prefixed("cch_", 24)
	if err != nil {
		return "", err
	}
	if err := q.InsertInboundContact(ctx, db.InsertInboundContactParams{ID: id, Project: project, TestMode: testMode, ProfileName: profileName, At: at}); err != nil {
		return "", fmt.Errorf("create contact: %w", err)
	}
	owner, err := q.InsertInboundContactChannel(ctx, db.InsertInboundContactChannelParams{ID: chID, ContactID: id, Project: project,
		TestMode: testMode, Channel: channel, Identifier: address, At: at})
	if err == nil {
		return owner, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("create contact channel: %w", err)
	}
	// Another message from this address created its contact meanwhile: keep that one.
	if err := q.DeleteContactRow(ctx, id); err != nil {
		return "", fmt.Errorf("drop duplicate contact: %w", err)
	}
	id, err = q.FindContactChannel(ctx, db.FindContactChannelParams{Project: project, TestMode: testMode, Channel: channel, Identifier: address})
	if err != nil {
		return "", fmt.Errorf("find contact: %w", err)
	}
	return id, nil
}
