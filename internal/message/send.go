package message

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Routing says how a send was routed.
type Routing struct {
	Channel string
	// From is the sender's address the message goes from.
	From string
	// Reason is why this channel: requested, conversation, email_recipient, scoped_user,
	// chat_id, phone (empty under the lenient rules, which report none).
	Reason string
}

// Send accepts one message from the key's project. Every send takes the same ordered steps,
// whichever generation of the API asked: (1) the thread it replies in, if any; (2) its fields;
// (3) its sender; (4) its channel; (5) the accept policies; (6) one transaction (Accept). A
// retry with an idempotency key already used returns *ErrDuplicate with the original.
func (s *Service) Send(ctx context.Context, key apikey.Key, req Request) (db.Message, Routing, error) {
	if req.Strict && req.To != nil {
		n := addr.Normalize(*req.To)
		req.To = &n
	}
	thread, errs, err := s.replyThread(ctx, key, &req)
	if err != nil {
		return db.Message{}, Routing{}, err
	}
	c, fieldErrs := check(req)
	errs = append(errs, fieldErrs...)
	if req.Strict {
		errs = append(errs, contradictions(c)...)
	}
	if len(errs) > 0 {
		return db.Message{}, Routing{}, apperror.InvalidFields(errs...)
	}
	snd, err := s.senderOf(ctx, key, req, thread)
	if err != nil {
		return db.Message{}, Routing{}, err
	}
	channel, reason, err := routeSend(req, c, snd, thread)
	if err != nil {
		return db.Message{}, Routing{}, err
	}
	opts, _ := options(req) // validated by check
	o := Outbound{Project: key.Project, TestMode: key.TestMode(), Sender: snd.Name, Channel: string(channel),
		MessageType: c.messageType, To: c.to, From: snd.Address(channel), Text: c.text, Subject: req.Subject,
		Content: req.Content, Metadata: req.Metadata, Options: opts, IdempotencyKey: req.IdempotencyKey,
		attachments: c.attachments, sender: snd, strict: req.Strict}
	for _, p := range s.acceptPolicies {
		if err := p.CheckAccept(ctx, &o); err != nil {
			return db.Message{}, Routing{}, err
		}
	}
	msg, err := s.acceptGrouped(ctx, o)
	if err != nil {
		return db.Message{}, Routing{}, err
	}
	return msg, Routing{Channel: msg.Channel, From: msg.Originator, Reason: reason}, nil
}

// replyThread reads the conversation a send replies in: the message goes to the thread's
// contact, and a to that names someone else is a field error.
func (s *Service) replyThread(ctx context.Context, key apikey.Key, req *Request) (*db.Conversation, []apperror.FieldError, error) {
	if req.ConversationID == nil {
		return nil, nil, nil
	}
	conv, err := s.Conversation(ctx, key, *req.ConversationID)
	if err != nil {
		return nil, nil, err
	}
	var errs []apperror.FieldError
	if req.To != nil && addr.Key(*req.To) != conv.ContactIdentifier {
		errs = append(errs, apperror.FieldError{Path: "to", Message: "is not the contact of conversation " + conv.ID + "; leave it out to reply in the thread"})
	}
	req.To = &conv.ContactIdentifier
	return &conv, errs, nil
}

// contradictions are refusals whatever the senders have, between fields that are each valid
// (an unknown channel or type is reported once, as itself).
func contradictions(c checked) []apperror.FieldError {
	if c.requested == "" || c.requested == "auto" || c.kind == invalidRecipient || !contains(Channels, c.requested) ||
		!contains(MessageTypes, c.messageType) {
		return nil
	}
	if _, ferr := route(c.requested, c.kind, c.messageType, v1alpha1.AllChannels); ferr != nil {
		return []apperror.FieldError{*ferr}
	}
	return nil
}

// senderOf picks the sender: the thread's, the one at the from address, the one named, or the
// project's default.
func (s *Service) senderOf(ctx context.Context, key apikey.Key, req Request, thread *db.Conversation) (*v1alpha1.Sender, error) {
	from := deref(req.From)
	switch {
	case thread != nil:
		snd, err := s.pickSender(ctx, key.Project, thread.Sender)
		if err != nil {
			return nil, err
		}
		if from != "" && !hasAddress(snd, from) {
			return nil, apperror.InvalidFields(apperror.FieldError{Path: "from",
				Message: "is not an address of conversation " + thread.ID + "'s channel; leave it out to reply in the thread"})
		}
		return snd, nil
	case from != "":
		snd, err := s.senderAt(ctx, key.Project, from)
		if err != nil {
			return nil, err
		}
		if snd == nil {
			return nil, apperror.InvalidFields(apperror.FieldError{Path: "from", Message: "no channel of this project has this address"})
		}
		return snd, nil
	}
	return s.pickSender(ctx, key.Project, req.SenderID)
}

// senderAt returns the oldest sender with a channel at address, or nil.
func (s *Service) senderAt(ctx context.Context, project, address string) (*v1alpha1.Sender, error) {
	var list v1alpha1.SenderList
	if err := s.reader.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list senders: %w", err)
	}
	var found *v1alpha1.Sender
	for i := range list.Items {
		snd := &list.Items[i]
		if !snd.DeletionTimestamp.IsZero() || !hasAddress(snd, address) {
			continue
		}
		if found == nil || snd.CreationTimestamp.Before(&found.CreationTimestamp) ||
			(snd.CreationTimestamp.Equal(&found.CreationTimestamp) && snd.Name < found.Name) {
			found = snd
		}
	}
	return found, nil
}

// routeSend picks the channel among those the sender can send on now; a from address narrows
// them to the channels at that address, so only its transports carry the message.
func routeSend(req Request, c checked, snd *v1alpha1.Sender, thread *db.Conversation) (v1alpha1.Channel, string, error) {
	active := snd.SendableChannels()
	if from := deref(req.From); from != "" {
		var at []v1alpha1.Channel
		for _, ch := range active {
			if snd.Address(ch) == from {
				at = append(at, ch)
			}
		}
		active = at
	}
	if !req.Strict {
		channel, ferr := route(c.requested, c.kind, c.messageType, active)
		if ferr != nil {
			return "", "", apperror.InvalidFields(*ferr)
		}
		if !contains(active, channel) {
			return "", "", apperror.InvalidFields(apperror.FieldError{Path: "channel", Message: fmt.Sprintf(
				"sender %s cannot send on %s; its channels: %s", snd.Name, channel, joinChannels(active))})
		}
		return channel, "", nil
	}
	channel, reason, err := routeStrict(c, active)
	if thread != nil && (c.requested == "" || c.requested == "auto") {
		// The thread's last channel, while it is on and carries this message type.
		last := v1alpha1.Channel(thread.LastMessageChannel)
		if contains(active, last) && (c.messageType == "text" || last == v1alpha1.ChannelWhatsApp) && last != v1alpha1.ChannelVoice {
			return last, "conversation", nil
		}
	}
	return channel, reason, err
}

// hasAddress says whether address is the sender's address on one of its channels.
func hasAddress(snd *v1alpha1.Sender, address string) bool {
	for _, ch := range v1alpha1.AllChannels {
		if a := snd.Address(ch); a != "" && a == address {
			return true
		}
	}
	return false
}

// Reply sends text in a conversation for the project itself (an agent's answer): every step a
// send by a key of the project in that mode takes, from the conversation's sender to its
// contact. A second reply with the same idempotency key returns the first.
func (s *Service) Reply(ctx context.Context, project string, testMode bool, conversationID, text, idempotencyKey string,
	metadata map[string]string) (db.Message, error) {
	key := apikey.Key{Project: project, Environment: apikey.Live}
	if testMode {
		key.Environment = apikey.Test
	}
	msg, _, err := s.Send(ctx, key, Request{ConversationID: &conversationID, Text: &text, IdempotencyKey: &idempotencyKey,
		Metadata: metadata})
	var dup *ErrDuplicate
	if errors.As(err, &dup) {
		return s.Get(ctx, key, dup.Original.ID)
	}
	return msg, err
}

// InboundHook is told of each inbound message in the transaction that stores it (agents
// enqueue their executions there, so a stored message is never left unanswered).
type InboundHook interface {
	Inbound(ctx context.Context, tx pgx.Tx, m db.Message) error
}

// SetInboundHook sets the hook of inbound messages.
func (s *Service) SetInboundHook(h InboundHook) { s.inboundHook = h }
