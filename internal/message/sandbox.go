package message

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Injection is a message as if a contact had sent it (POST /v1/sandbox/inbound).
type Injection struct {
	From        *string
	Channel     *string
	MessageType *string
	Text        *string
	Content     *transport.Content
	// To is the address written to; by default the sender's address on the channel. For
	// catch-all email it is the original recipient.
	To          *string
	ProfileName *string
	Referral    *transport.Referral
	// ReplyToMessageID is a message of the conversation the contact quotes.
	ReplyToMessageID *string
}

// Inject receives a simulated inbound message for a test key, through the sender named by
// senderID or the project's default, exactly as a provider's would be received.
func (s *Service) Inject(ctx context.Context, key apikey.Key, senderID string, in Injection) (db.Message, error) {
	if !key.TestMode() {
		return db.Message{}, apperror.New(apperror.Forbidden, "forbidden",
			"The sandbox takes simulated inbound messages from test keys (svc_test_) only.")
	}
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	kind := invalidRecipient
	if in.From == nil || *in.From == "" {
		bad("from", "is required: the contact's address")
	} else if kind = classify(*in.From); kind == invalidRecipient {
		bad("from", "must be an E.164 number, an email address, a business-scoped user id or a numeric chat id")
	}
	messageType := "text"
	if in.MessageType != nil {
		messageType = *in.MessageType
		if !contains(MessageTypes, messageType) {
			bad("messageType", fmt.Sprintf("must be one of %v", MessageTypes))
		}
	}
	text := ""
	if in.Text != nil {
		text = *in.Text
	}
	if messageType == "text" && text == "" {
		bad("text", "is required for a text message")
	}
	if len([]rune(text)) > maxTextLength {
		bad("text", fmt.Sprintf("must be up to %d characters", maxTextLength))
	}
	channel := ""
	if in.Channel != nil {
		channel = *in.Channel
		if channel == "auto" || !contains(Channels, channel) {
			bad("channel", "must be one of sms, sms_oneway, whatsapp, telegram, email, instagram, messenger, voice")
		}
	} else {
		// A contact's first guess: phones text by SMS, others by their only channel.
		channel = map[recipientKind]string{phoneRecipient: "sms", emailRecipient: "email", scopedUserRecipient: "whatsapp",
			chatIDRecipient: "telegram"}[kind]
	}
	if channel == string(v1alpha1.ChannelSMSOneway) {
		bad("channel", "one-way SMS cannot receive")
	}
	if len(errs) > 0 {
		return db.Message{}, apperror.InvalidFields(errs...)
	}
	if _, ferr := route(channel, kind, "text", v1alpha1.AllChannels); ferr != nil {
		return db.Message{}, apperror.InvalidFields(apperror.FieldError{Path: "from", Message: ferr.Message})
	}
	snd, err := s.pickSender(ctx, key.Project, senderID)
	if err != nil {
		return db.Message{}, err
	}
	ch := v1alpha1.Channel(channel)
	if !contains(snd.SendableChannels(), ch) {
		return db.Message{}, apperror.InvalidFields(apperror.FieldError{Path: "channel", Message: fmt.Sprintf(
			"sender %s does not receive on %s; its channels: %s", snd.Name, channel, joinChannels(snd.SendableChannels()))})
	}
	to := snd.Address(ch)
	if in.To != nil && *in.To != "" {
		to = *in.To
	}
	providerID, err := randid.Prefixed("sbx_in_", 24)
	if err != nil {
		return db.Message{}, err
	}
	msg := Inbound{Project: key.Project, TestMode: true, Sender: snd.Name, Inbound: transport.Inbound{Channel: channel,
		From: *in.From, To: to, MessageType: messageType, Text: text, Content: in.Content, ProviderMessageID: providerID,
		Referral: in.Referral}}
	if in.ProfileName != nil {
		msg.ProfileName = *in.ProfileName
	}
	// Providers stamp chat messages; SMS and email have no provider timestamp.
	if ch != v1alpha1.ChannelSMS && ch != v1alpha1.ChannelEmail {
		ts := s.now().UTC().Truncate(time.Millisecond)
		msg.ProviderTimestamp = &ts
	}
	if in.ReplyToMessageID != nil && *in.ReplyToMessageID != "" {
		quoted, err := s.Get(ctx, key, *in.ReplyToMessageID)
		if e := apperror.As(err); e != nil && e.Kind == apperror.NotFound {
			return db.Message{}, apperror.InvalidFields(apperror.FieldError{Path: "replyToMessageId", Message: "no such message in this project"})
		}
		if err != nil {
			return db.Message{}, err
		}
		if quoted.ProviderMessageID == nil {
			return db.Message{}, apperror.InvalidFields(apperror.FieldError{Path: "replyToMessageId", Message: "the message has not reached the contact yet"})
		}
		msg.ReplyToProviderMessageID = *quoted.ProviderMessageID
	}
	return s.Receive(ctx, msg)
}
