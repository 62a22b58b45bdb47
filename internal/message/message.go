// Package message sends messages: a send is validated, routed to a channel of its sender and
// accepted in one Postgres transaction (the message, its idempotency key, its message.queued
// event and its dispatch job), so an accepted message is never lost. Workers then hand it to the
// sender's transport and move it through its states, each change with its event in the same
// transaction.
package message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Limits of a send's fields.
const (
	maxTextLength    = 4096
	maxSubjectLength = 998
	maxKeyLength     = 255
)

// SendInput is the body of POST /v1/messages (the fields this version handles).
type SendInput struct {
	To             *string            `json:"to"`
	Channel        *string            `json:"channel"`
	MessageType    *string            `json:"messageType"`
	Text           *string            `json:"text"`
	Content        *transport.Content `json:"content"`
	Subject        *string            `json:"subject"`
	HTMLBody       *string            `json:"htmlBody"`
	ReplyTo        *string            `json:"replyTo"`
	Fallback       *bool              `json:"fallbackEnabled"`
	VoiceLanguage  *string            `json:"voiceLanguage"`
	Metadata       map[string]string  `json:"metadata"`
	IdempotencyKey *string            `json:"idempotencyKey"`
	Attachments    []Attachment       `json:"attachments"`
}

// Options are a send's settings that are not content, stored with the message.
type Options struct {
	HTMLBody        string `json:"htmlBody,omitempty"`
	ReplyTo         string `json:"replyTo,omitempty"`
	FallbackEnabled bool   `json:"fallbackEnabled"`
	VoiceLanguage   string `json:"voiceLanguage,omitempty"`
}

var languageTag = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)

// options validates and collects a send's options; fallback to SMS is on unless turned off.
func options(in SendInput) (Options, []apperror.FieldError) {
	var errs []apperror.FieldError
	o := Options{FallbackEnabled: in.Fallback == nil || *in.Fallback}
	if in.HTMLBody != nil {
		o.HTMLBody = *in.HTMLBody
	}
	if in.ReplyTo != nil {
		if !addr.IsEmail(*in.ReplyTo) {
			errs = append(errs, apperror.FieldError{Path: "replyTo", Message: "must be an email address"})
		}
		o.ReplyTo = *in.ReplyTo
	}
	if in.VoiceLanguage != nil {
		if !languageTag.MatchString(*in.VoiceLanguage) {
			errs = append(errs, apperror.FieldError{Path: "voiceLanguage", Message: "must be a language tag such as en-US"})
		}
		o.VoiceLanguage = *in.VoiceLanguage
	}
	return o, errs
}

// Service sends and reads messages.
type Service struct {
	pool       *pgxpool.Pool
	reader     client.Reader
	deliveries *delivery.Service
	queue      *river.Client[pgx.Tx]
	now        func() time.Time
}

// NewService returns a Service.
func NewService(pool *pgxpool.Pool, reader client.Reader, deliveries *delivery.Service, queue *river.Client[pgx.Tx]) *Service {
	return &Service{pool: pool, reader: reader, deliveries: deliveries, queue: queue, now: time.Now}
}

// ErrDuplicate wraps the original message of an idempotent retry.
type ErrDuplicate struct{ Original db.Message }

func (e *ErrDuplicate) Error() string { return "duplicate send of message " + e.Original.ID }

// checked is a send whose fields are valid, before its sender and channel are chosen.
type checked struct {
	to          string
	kind        recipientKind
	messageType string
	requested   string
	text        string
	attachments []attachment
}

// check validates the fields every generation shares and lists every invalid one.
func check(in SendInput) (checked, []apperror.FieldError) {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	c := checked{messageType: "text"}
	if in.To == nil || *in.To == "" {
		bad("to", "is required")
	} else if c.to = *in.To; classifyFor(c.to, deref(in.Channel)) == invalidRecipient {
		bad("to", "must be an E.164 number (+ and up to 15 digits), an email address, a business-scoped user id or a numeric chat id")
	} else {
		c.kind = classifyFor(c.to, deref(in.Channel))
	}
	if in.MessageType != nil {
		c.messageType = *in.MessageType
		if !contains(MessageTypes, c.messageType) {
			bad("messageType", fmt.Sprintf("must be one of %v", MessageTypes))
		}
	}
	if in.Channel != nil {
		c.requested = *in.Channel
		if !contains(Channels, c.requested) {
			bad("channel", fmt.Sprintf("must be one of %v", Channels))
		}
	}
	if in.Text != nil {
		c.text = *in.Text
	}
	if contains(MessageTypes, c.messageType) {
		errs = append(errs, checkContent(c.messageType, c.text, in.Content)...)
	}
	if len([]rune(c.text)) > maxTextLength {
		bad("text", fmt.Sprintf("must be up to %d characters", maxTextLength))
	}
	email := c.kind == emailRecipient || c.requested == string(v1alpha1.ChannelEmail)
	if email && (in.Subject == nil || *in.Subject == "") {
		bad("subject", "is required for email")
	}
	if in.Subject != nil && len([]rune(*in.Subject)) > maxSubjectLength {
		bad("subject", fmt.Sprintf("must be up to %d characters", maxSubjectLength))
	}
	if in.IdempotencyKey != nil && (len(*in.IdempotencyKey) == 0 || len(*in.IdempotencyKey) > maxKeyLength) {
		bad("idempotencyKey", fmt.Sprintf("must be 1 to %d characters", maxKeyLength))
	}
	if in.HTMLBody != nil && !email {
		bad("htmlBody", "is for email")
	}
	if in.ReplyTo != nil && !email {
		bad("replyTo", "is for email")
	}
	atts, attErrs := checkAttachments(in.Attachments, email)
	c.attachments, errs = atts, append(errs, attErrs...)
	_, optErrs := options(in)
	errs = append(errs, optErrs...)
	return c, errs
}

// activeChannels is what the sender can send on, computed from its spec as the controller and
// GET /v1/senders compute it, so a sender changed a moment ago sends as its answer said.
func activeChannels(snd *v1alpha1.Sender) []v1alpha1.Channel {
	var active []v1alpha1.Channel
	for _, c := range snd.Spec.ActiveChannels() {
		if snd.Spec.Transport.Supports(c) {
			active = append(active, c)
		}
	}
	return active
}

// Send accepts a message from the key's project, through senderID or the project's default
// sender. A retry with an idempotency key already used returns *ErrDuplicate with the original.
func (s *Service) Send(ctx context.Context, key apikey.Key, senderID string, in SendInput) (db.Message, error) {
	c, errs := check(in)
	if len(errs) > 0 {
		return db.Message{}, apperror.InvalidFields(errs...)
	}
	snd, err := s.pickSender(ctx, key.Project, senderID)
	if err != nil {
		return db.Message{}, err
	}
	active := activeChannels(snd)
	channel, ferr := route(c.requested, c.kind, c.messageType, active)
	if ferr != nil {
		return db.Message{}, apperror.InvalidFields(*ferr)
	}
	if !contains(active, channel) {
		return db.Message{}, apperror.InvalidFields(apperror.FieldError{Path: "channel", Message: fmt.Sprintf(
			"sender %s cannot send on %s; its channels: %s", snd.Name, channel, joinChannels(active))})
	}
	return s.accept(ctx, key, snd, channel, c, in, "v1")
}

// accept stores the message with its idempotency key, its conversation, its message.queued
// event and its dispatch job in one transaction.
// version is the API generation that accepted it ("v1" or "v2"). A free-form WhatsApp message
// needs the contact's 24-hour window open.
func (s *Service) accept(ctx context.Context, key apikey.Key, snd *v1alpha1.Sender, channel v1alpha1.Channel, c checked, in SendInput, version string) (db.Message, error) {
	conversation := conversationID(key.Project, key.TestMode(), snd.Name, c.to)
	if channel == v1alpha1.ChannelWhatsApp {
		if err := s.checkWindow(ctx, conversation, c.messageType); err != nil {
			return db.Message{}, err
		}
	}
	id, err := newID("msg_")
	if err != nil {
		return db.Message{}, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	var metadata, content []byte
	if len(in.Metadata) > 0 {
		metadata, _ = json.Marshal(in.Metadata)
	}
	if in.Content != nil {
		content, _ = json.Marshal(in.Content.Outbound())
	}
	opts, _ := options(in) // validated by check
	optionsJSON, _ := json.Marshal(opts)
	var body *string
	if c.text != "" {
		body = &c.text
	}
	msg := db.Message{ID: id, Project: key.Project, TestMode: key.TestMode(), Sender: snd.Name, Direction: "outbound",
		Channel: string(channel), MessageType: c.messageType, Status: "queued", Recipient: c.to, Originator: originator(snd, channel),
		Body: body, Content: content, Subject: in.Subject, Metadata: metadata, Options: optionsJSON, ConversationID: &conversation,
		APIVersion: version, CreatedAt: now, UpdatedAt: now}

	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The key first: a retry racing the original waits here, and then does nothing else.
		if in.IdempotencyKey != nil {
			owner, err := claim(ctx, tx, msg, *in.IdempotencyKey)
			if err != nil {
				return err
			}
			if owner != msg.ID {
				return &ErrDuplicate{Original: db.Message{ID: owner}}
			}
		}
		if err := s.event(ctx, tx, msg); err != nil {
			return err
		}
		if _, err := s.queue.InsertTx(ctx, tx, DispatchArgs{MessageID: msg.ID}, nil); err != nil {
			return fmt.Errorf("enqueue dispatch: %w", err)
		}
		// The message and its conversation last, so that the conversation's row is locked only
		// until the commit: sends to one contact queue behind each other for that long only.
		if _, err := record(ctx, tx, thread{msg: msg}); err != nil {
			return err
		}
		return storeAttachments(ctx, tx, msg.ID, c.attachments, now)
	})
	var dup *ErrDuplicate
	if errors.As(err, &dup) {
		original, gerr := db.New(s.pool).GetMessageByID(ctx, dup.Original.ID)
		if gerr != nil {
			return db.Message{}, fmt.Errorf("read original message %s: %w", dup.Original.ID, gerr)
		}
		return db.Message{}, &ErrDuplicate{Original: original}
	}
	if err != nil {
		return db.Message{}, err
	}
	return msg, nil
}

// claim records the idempotency key for msg and returns the id of the message that owns it.
// A concurrent claim that is still uncommitted is waited for; a statement whose snapshot
// predates the winner's commit sees no row, and is asked again.
func claim(ctx context.Context, tx pgx.Tx, msg db.Message, key string) (string, error) {
	q := db.New(tx)
	for attempt := 0; attempt < 3; attempt++ {
		owner, err := q.ClaimIdempotencyKey(ctx, db.ClaimIdempotencyKeyParams{
			Project: msg.Project, TestMode: msg.TestMode, Key: key, MessageID: msg.ID, CreatedAt: msg.CreatedAt})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("claim idempotency key: %w", err)
		}
		return owner, nil
	}
	return "", errors.New("claim idempotency key: the key's owner could not be read")
}

// event enqueues message.<status> for msg in tx, and message.status for the webhooks that ask
// for every change under one name.
func (s *Service) event(ctx context.Context, tx pgx.Tx, msg db.Message) error {
	data := map[string]any{"messageId": msg.ID, "status": msg.Status, "channel": msg.Channel, "to": msg.Recipient}
	if msg.ErrorCode != nil {
		data["errorCode"], data["errorMessage"] = *msg.ErrorCode, deref(msg.ErrorMessage)
	}
	for _, name := range []string{"message." + msg.Status, delivery.StatusEvent} {
		if _, err := s.deliveries.Enqueue(ctx, tx, delivery.Event{Project: msg.Project, Name: name,
			Sender: msg.Sender, From: msg.Originator, To: msg.Recipient, Transport: msg.Channel, Data: data}); err != nil {
			return err
		}
	}
	return nil
}

// Get returns the key's message id; another project's, or another mode's, is not found.
func (s *Service) Get(ctx context.Context, key apikey.Key, id string) (db.Message, error) {
	m, err := db.New(s.pool).GetMessage(ctx, db.GetMessageParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Message{}, apperror.NotFoundf("No message %s.", id)
	}
	if err != nil {
		return db.Message{}, fmt.Errorf("read message %s: %w", id, err)
	}
	return m, nil
}

// ListFilter narrows a message list.
type ListFilter struct {
	Channel, Status, To *string
	// BeforeTime and BeforeID continue after the last message of the previous page.
	BeforeTime *time.Time
	BeforeID   *string
	Limit      int
}

// List returns the key's messages, newest first.
func (s *Service) List(ctx context.Context, key apikey.Key, f ListFilter) ([]db.Message, error) {
	rows, err := db.New(s.pool).ListMessages(ctx, db.ListMessagesParams{Project: key.Project, TestMode: key.TestMode(),
		Channel: f.Channel, Status: f.Status, Recipient: f.To, BeforeTime: f.BeforeTime, BeforeID: f.BeforeID, PageSize: int32(f.Limit)})
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	return rows, nil
}

// pickSender returns the sender named by Service-Sender, or the project's default.
func (s *Service) pickSender(ctx context.Context, project, id string) (*v1alpha1.Sender, error) {
	if id != "" {
		var snd v1alpha1.Sender
		err := s.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: id}, &snd)
		if apierrors.IsNotFound(err) {
			return nil, apperror.InvalidFields(apperror.FieldError{Path: "Service-Sender", Message: fmt.Sprintf("no sender %s in this project", id)})
		}
		if err != nil {
			return nil, fmt.Errorf("read sender %s: %w", id, err)
		}
		return &snd, nil
	}
	// Only the senders asking to be the default: a send must not copy every sender of the project.
	var list v1alpha1.SenderList
	if err := s.reader.List(ctx, &list, client.InNamespace(project), client.MatchingFields{index.SenderDefault: "true"}); err != nil {
		return nil, fmt.Errorf("list senders: %w", err)
	}
	if d := v1alpha1.DefaultSender(list.Items); d != nil {
		return d, nil
	}
	return nil, apperror.InvalidFields(apperror.FieldError{Path: "Service-Sender",
		Message: "the project has no default sender: name one in the Service-Sender header, or set one as default"})
}

// originator is the sender's address on channel, as the message's from.
func originator(snd *v1alpha1.Sender, ch v1alpha1.Channel) string {
	switch ch {
	case v1alpha1.ChannelEmail:
		if snd.Spec.Email != nil {
			return snd.Spec.Email.Address
		}
	case v1alpha1.ChannelWhatsApp:
		if snd.Spec.WhatsApp != nil && snd.Spec.WhatsApp.DisplayPhoneNumber != "" {
			// The number as an address: "+1 500-555-0006" is +15005550006.
			return addr.Normalize(snd.Spec.WhatsApp.DisplayPhoneNumber)
		}
	case v1alpha1.ChannelTelegram, v1alpha1.ChannelInstagram, v1alpha1.ChannelMessenger:
		return ""
	}
	return snd.Spec.PhoneNumber
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// newID returns prefix and 24 random base62 characters.
func newID(prefix string) (string, error) { return randid.Prefixed(prefix, 24) }
