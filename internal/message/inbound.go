package message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/quota"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Inbound is a contact's message as a transport received it, and the sender it came to.
type Inbound struct {
	Project  string
	TestMode bool
	// Sender is the sender whose address the contact wrote to.
	Sender string
	transport.Inbound
}

// Receive stores an inbound message in one transaction: the contact (created on its first
// message), the conversation (created, or brought up to date; a WhatsApp message opens the
// 24-hour window), the message with its reply context, and the message.inbound event, with
// conversation.new when the message starts a conversation.
func (s *Service) Receive(ctx context.Context, in Inbound) (db.Message, error) {
	return s.receive(ctx, s.pool, in, nil)
}

// receive is Receive in a transaction of its own begun on b: the pool, or the transaction of
// ReceiveAll (a savepoint). files, when not nil, keeps the attachments' content once for all
// the messages ReceiveAll stores.
func (s *Service) receive(ctx context.Context, b beginner, in Inbound, files *sharedFiles) (db.Message, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	id, err := newMessageID(now)
	if err != nil {
		return db.Message{}, err
	}
	conversation := conversationID(in.Project, in.TestMode, in.Sender, in.From)
	content := transport.Content{}
	if in.Content != nil {
		content = *in.Content
	}
	content.Referral = in.Referral
	if len(in.Attachments) > 0 && (content.MediaID != "" || content.MediaURL != "") && s.mediaBase != "" {
		// The provider's link expires: the kept copy is the one to fetch.
		content.MediaURL = s.mediaBase + "/v1/messages/" + id + "/media"
	}
	var profile *string
	if in.ProfileName != "" {
		profile = &in.ProfileName
	}
	msg := db.Message{ID: id, Project: in.Project, TestMode: in.TestMode, Sender: in.Sender, Direction: "inbound",
		Channel: in.Channel, MessageType: in.MessageType, Status: "received", Recipient: in.To, Originator: in.From,
		ConversationID: &conversation, ProviderTimestamp: in.ProviderTimestamp, CreatedAt: now, UpdatedAt: now}
	if in.Text != "" {
		msg.Body = &in.Text
	}
	if in.ProviderMessageID != "" {
		msg.ProviderMessageID = &in.ProviderMessageID
	}
	if in.Subject != "" {
		msg.Subject = &in.Subject
	}
	if in.HTMLBody != "" || in.EmailAuth != nil {
		opts, err := json.Marshal(Options{HTMLBody: in.HTMLBody, EmailAuth: in.EmailAuth})
		if err != nil {
			return db.Message{}, fmt.Errorf("encode options: %w", err)
		}
		msg.Options = opts
	}
	attachments := make([]attachment, len(in.Attachments))
	for i, a := range in.Attachments {
		attachments[i] = attachment{filename: a.Filename, contentType: a.ContentType, content: a.Content}
		if a.Content == nil {
			attachments[i].content = []byte{} // received content, never a URL to fetch
		}
		if a.ContentID != "" {
			attachments[i].contentID = &a.ContentID
		}
	}

	var again *db.Message
	write := func() error {
		again = nil
		return pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error {
			q := db.Planned(tx)
			if in.ProviderMessageID != "" {
				// A provider posts a message again when our answer did not reach it: store it once.
				prev, err := s.byProviderID(ctx, tx, s.now(), in.Project, in.TestMode, in.Sender, in.ProviderMessageID)
				if err == nil && prev.Direction == "inbound" {
					again = &prev
					return nil
				}
				if err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return fmt.Errorf("find message of provider id: %w", err)
				}
			}
			contactID, err := newContact(ctx, tx, in.Project, in.TestMode, contactChannel(in.Channel), addr.Key(in.From), profile, now)
			if err != nil {
				return err
			}
			if err := q.NoteInbound(ctx, db.NoteInboundParams{At: now, Project: in.Project, TestMode: in.TestMode,
				Channel: contactChannel(in.Channel), Identifier: addr.Key(in.From), ProfileName: profile}); err != nil {
				return fmt.Errorf("note inbound message: %w", err)
			}
			if in.ReplyToProviderMessageID != "" {
				if err := s.replyContext(ctx, tx, in, &content); err != nil {
					return err
				}
			}
			if msg.Content, err = json.Marshal(content); err != nil {
				return fmt.Errorf("encode content: %w", err)
			}
			if string(msg.Content) == "{}" {
				msg.Content = nil // a plain text message carries no content
			}
			var referral []byte
			if in.Referral != nil {
				referral, _ = json.Marshal(in.Referral)
			}
			conv, err := record(ctx, tx, thread{msg: msg, contactID: &contactID, profileName: profile, referral: referral})
			if err != nil {
				return err
			}
			if err := files.store(ctx, tx, msg.ID, attachments, now); err != nil {
				return err
			}
			if conv.InboundCount == 1 {
				if err := s.conversationNew(ctx, tx, msg, contactID, in.ProfileName); err != nil {
					return err
				}
			}
			if err := s.inboundEvent(ctx, tx, msg, in); err != nil {
				return err
			}
			if s.inboundHook != nil {
				if err := s.inboundHook.Inbound(ctx, tx, msg); err != nil {
					return err
				}
			}
			// The Free plan's monthly allowance counts what contacts send on the conversational
			// channels too; past it the message is refused whole (the transaction rolls back).
			if meter, ok := quota.MeterOf(msg.Channel); ok && meter == quota.Conversational {
				counted, err := s.countedOn(ctx, in.Project)
				if err != nil {
					return err
				}
				var takes []quota.Take
				for _, p := range counted {
					takes = append(takes, quota.Take{Project: p, TestMode: in.TestMode, Meter: meter, Inbound: true, N: 1})
				}
				return quota.TakeAll(ctx, tx, now, takes, s.limitsOf(ctx))
			}
			return nil
		})
	}
	// A message alone is written again if its day had no partition; ReceiveAll's batch shares
	// attachment contents that a rollback would leave recorded, and is written once.
	if files == nil {
		err = partition.Retry(ctx, s.pool, write)
	} else {
		err = write()
	}
	if e := apperror.As(err); e != nil && e.Code == "a2p_limit_exceeded" {
		return db.Message{}, errors.Join(ErrInboundRefused, err)
	}
	if err != nil {
		return db.Message{}, err
	}
	if again != nil {
		return *again, nil
	}
	return msg, nil
}

// ErrInboundRefused: the project's Free plan allowance of conversational messages is used up,
// and the contact's message was not stored, announced or kept for later (spec: Limits). A
// provider's callback answers it as taken, so the provider does not post it again.
var ErrInboundRefused = errors.New("inbound message refused: the monthly allowance is used up")

// ReceiveUnsupported announces a contact's message of a kind Switchboard cannot represent (a
// poll, a game) as message.unsupported: nothing is stored, the webhook says what arrived.
func (s *Service) ReceiveUnsupported(ctx context.Context, in Inbound) error {
	data := map[string]any{"from": in.From, "to": in.To, "channel": in.Channel, "kind": in.Unsupported,
		"providerMessageId": in.ProviderMessageID, "timestamp": s.now().UTC().UnixMilli()}
	if in.ProviderTimestamp != nil {
		data["providerTimestamp"] = in.ProviderTimestamp.UnixMilli()
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := s.deliveries.Enqueue(ctx, tx, delivery.Event{Project: in.Project, Name: string(v1alpha1.EventMessageUnsupported), Sender: in.Sender,
			From: in.From, To: in.To, Transport: in.Channel, Data: data, Mode: delivery.ModeOf(in.TestMode)})
		return err
	})
}

// byProviderID is the newest message of a sender with a provider's id, read in the recent
// partitions first.
func (s *Service) byProviderID(ctx context.Context, conn db.DBTX, now time.Time, project string, testMode bool, sender, providerID string) (db.Message, error) {
	return partition.RecentFirst(now, func(since, until time.Time) (db.Message, error) {
		row, err := s.messagesIn(conn, since, until).GetMessageByProviderID(ctx, db.GetMessageByProviderIDParams{Project: project, TestMode: testMode, Sender: sender,
			ProviderMessageID: &providerID, Since: since, Until: until})
		return db.Message(row), err
	})
}

// replyContext fills the quoted message's id, sender, text and type when the contact replied to
// a message Switchboard knows.
func (s *Service) replyContext(ctx context.Context, conn db.DBTX, in Inbound, c *transport.Content) error {
	c.ReplyToProviderMessageID = in.ReplyToProviderMessageID
	quoted, err := s.byProviderID(ctx, conn, time.Now(), in.Project, in.TestMode, in.Sender, in.ReplyToProviderMessageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // a message from before Switchboard, or from another tool: the provider id is all there is
	}
	if err != nil {
		return fmt.Errorf("read quoted message: %w", err)
	}
	c.ReplyToMessageID, c.ReplyToFrom, c.ReplyToText, c.ReplyToMessageType = quoted.ID, quoted.Originator, deref(quoted.Body), quoted.MessageType
	return nil
}

// inboundEvent enqueues message.inbound: the message as the contact sent it, its conversation,
// the provider's receive time in Unix milliseconds (null for SMS and email), and the referral.
func (s *Service) inboundEvent(ctx context.Context, tx pgx.Tx, msg db.Message, in Inbound) error {
	var providerTS any
	if in.ProviderTimestamp != nil {
		providerTS = in.ProviderTimestamp.UnixMilli()
	}
	data := map[string]any{"messageId": msg.ID, "conversationId": *msg.ConversationID, "from": msg.Originator, "to": msg.Recipient,
		"channel": msg.Channel, "messageType": msg.MessageType, "status": msg.Status, "text": msg.Body, "content": json.RawMessage(msg.Content),
		"providerTimestamp": providerTS, "providerMessageId": msg.ProviderMessageID, "timestamp": msg.CreatedAt.UnixMilli()}
	if in.ProfileName != "" {
		data["profileName"] = in.ProfileName
	}
	if in.Referral != nil {
		data["referral"] = in.Referral
	}
	if msg.Channel == string(v1alpha1.ChannelEmail) {
		data["subject"] = msg.Subject
	}
	_, err := s.deliveries.Enqueue(ctx, tx, delivery.Event{Project: msg.Project, Name: string(v1alpha1.EventMessageInbound), Sender: msg.Sender,
		From: msg.Originator, To: msg.Recipient, Transport: msg.Channel, Data: data, Mode: delivery.ModeOf(msg.TestMode)})
	return err
}

// conversationNew enqueues conversation.new for the contact's first message in a conversation:
// the inbox has a new conversation to answer. A thread the business started (a send, a
// broadcast) announces nothing until the contact writes, so a campaign does not raise one event
// per recipient.
func (s *Service) conversationNew(ctx context.Context, tx pgx.Tx, msg db.Message, contactID, profileName string) error {
	data := map[string]any{"conversationId": *msg.ConversationID, "channel": msg.Channel, "firstMessageId": msg.ID,
		"firstMessageText": msg.Body, "contactIdentifier": msg.Originator, "contactId": contactID, "profileName": nil}
	switch classify(msg.Originator) {
	case phoneRecipient:
		data["phoneNumber"] = msg.Originator
	case emailRecipient:
		data["email"] = msg.Originator
	}
	if profileName != "" {
		data["profileName"] = profileName
	}
	_, err := s.deliveries.Enqueue(ctx, tx, delivery.Event{Project: msg.Project, Name: string(v1alpha1.EventConversationNew), Sender: msg.Sender,
		From: msg.Originator, To: msg.Recipient, Transport: msg.Channel, Data: data, Mode: delivery.ModeOf(msg.TestMode)})
	return err
}
