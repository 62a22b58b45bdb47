package message

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// SendV2Input is the body of POST /v2/messages: the v1 fields, from an address, or into a thread.
type SendV2Input struct {
	SendInput
	From           *string `json:"from"`
	ConversationID *string `json:"conversationId"`
}

// Routing says how a v2 send was routed.
type Routing struct {
	Channel string
	From    string
	// Reason is why this channel: requested, conversation, email_recipient, scoped_user, chat_id,
	// phone.
	Reason string
}

// AddressBook finds the senders behind an address (the sender service).
type AddressBook interface {
	SendersAt(ctx context.Context, project, address string) ([]*v1alpha1.Sender, error)
}

// bareDigits is a to of 8 to 15 digits without +: read as a chat id, never guessed to be a
// number (spec: v2 send details).
var bareDigits = regexp.MustCompile(`^[0-9]{8,15}$`)

// SendV2 accepts a v2 send: only active connections are picked, a missing connection is 409
// no_channel with what to connect, contradictions are 400, bare digits are a chat id.
func (s *Service) SendV2(ctx context.Context, key apikey.Key, book AddressBook, in SendV2Input) (db.Message, Routing, error) {
	if in.To != nil {
		n := addr.Normalize(*in.To)
		in.To = &n
	}
	// A reply in a thread goes from the thread's sender to the thread's contact.
	var thread *db.Conversation
	var threadErrs []apperror.FieldError
	if in.ConversationID != nil {
		conv, err := s.Conversation(ctx, key, *in.ConversationID)
		if err != nil {
			return db.Message{}, Routing{}, err
		}
		thread = &conv
		if in.To != nil && addr.Key(*in.To) != conv.ContactIdentifier {
			threadErrs = append(threadErrs, apperror.FieldError{Path: "to", Message: "is not the contact of conversation " + conv.ID + "; leave it out to reply in the thread"})
		}
		in.To = &conv.ContactIdentifier
	}
	c, errs := check(in.SendInput)
	errs = append(threadErrs, errs...)
	// Contradictions are refused whatever the senders have (between fields that are each valid:
	// an unknown channel or type is reported once, as itself).
	if c.requested != "" && c.requested != "auto" && c.kind != invalidRecipient && contains(Channels, c.requested) &&
		contains(MessageTypes, c.messageType) {
		if _, ferr := route(c.requested, c.kind, c.messageType, v1alpha1.AllChannels); ferr != nil {
			errs = append(errs, *ferr)
		}
	}
	if len(errs) > 0 {
		return db.Message{}, Routing{}, apperror.InvalidFields(errs...)
	}

	var snd *v1alpha1.Sender
	if thread != nil {
		var err error
		if snd, err = s.pickSender(ctx, key.Project, thread.Sender); err != nil {
			return db.Message{}, Routing{}, err
		}
		if in.From != nil && *in.From != "" && !hasAddress(snd, *in.From) {
			return db.Message{}, Routing{}, apperror.InvalidFields(apperror.FieldError{Path: "from",
				Message: "is not an address of conversation " + thread.ID + "'s channel; leave it out to reply in the thread"})
		}
	} else if in.From != nil && *in.From != "" {
		senders, err := book.SendersAt(ctx, key.Project, *in.From)
		if err != nil {
			return db.Message{}, Routing{}, err
		}
		if len(senders) == 0 {
			return db.Message{}, Routing{}, apperror.InvalidFields(apperror.FieldError{Path: "from", Message: "no channel of this project has this address"})
		}
		snd = senders[0]
	} else {
		var err error
		if snd, err = s.pickSender(ctx, key.Project, ""); err != nil {
			return db.Message{}, Routing{}, err
		}
	}
	active := activeChannels(snd)
	channel, reason, err := routeV2(c, active)
	if thread != nil && (c.requested == "" || c.requested == "auto") {
		// The thread's last channel, while it is on and carries this message type.
		last := v1alpha1.Channel(thread.LastMessageChannel)
		if contains(active, last) && (c.messageType == "text" || last == v1alpha1.ChannelWhatsApp) && last != v1alpha1.ChannelVoice {
			channel, reason, err = last, "conversation", nil
		}
	}
	if err != nil {
		return db.Message{}, Routing{}, err
	}
	msg, err := s.accept(ctx, key, snd, channel, c, in.SendInput, "v2")
	if err != nil {
		return db.Message{}, Routing{}, err
	}
	return msg, Routing{Channel: string(channel), From: msg.Originator, Reason: reason}, nil
}

// routeV2 picks among active connections only.
func routeV2(c checked, active []v1alpha1.Channel) (v1alpha1.Channel, string, error) {
	if c.requested != "" && c.requested != "auto" {
		ch := v1alpha1.Channel(c.requested)
		if !contains(active, ch) {
			return "", "", noChannel(c.to, []v1alpha1.Channel{ch})
		}
		return ch, "requested", nil
	}
	var candidates []v1alpha1.Channel
	reason := ""
	switch c.kind {
	case emailRecipient:
		candidates, reason = []v1alpha1.Channel{v1alpha1.ChannelEmail}, "email_recipient"
	case scopedUserRecipient:
		candidates, reason = []v1alpha1.Channel{v1alpha1.ChannelWhatsApp}, "scoped_user"
	case chatIDRecipient:
		candidates, reason = []v1alpha1.Channel{v1alpha1.ChannelTelegram, v1alpha1.ChannelInstagram, v1alpha1.ChannelMessenger}, "chat_id"
	default:
		candidates, reason = []v1alpha1.Channel{v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway, v1alpha1.ChannelWhatsApp}, "phone"
	}
	for _, ch := range candidates {
		if contains(active, ch) {
			return ch, reason, nil
		}
	}
	if c.kind == chatIDRecipient && bareDigits.MatchString(c.to) {
		// Bare digits are not guessed to be a number; say what was probably meant.
		e := apperror.InvalidFields(apperror.FieldError{Path: "to",
			Message: "a bare number is read as a chat id, and nothing here reaches chat ids; write a phone number with its +"})
		e.Details["suggestion"] = "+" + c.to
		return "", "", e
	}
	return "", "", noChannel(c.to, candidates)
}

// noChannel is 409 no_channel with, for each channel that would reach the recipient, the
// request that connects it.
func noChannel(to string, channels []v1alpha1.Channel) error {
	connect := make([]map[string]any, 0, len(channels))
	for _, ch := range channels {
		entry := map[string]any{"type": string(ch)}
		switch ch {
		case v1alpha1.ChannelWhatsApp:
			entry["request"] = map[string]any{"method": "POST", "path": "/v1/invitations", "body": map[string]any{"connectionType": "whatsapp_waba"}}
		case v1alpha1.ChannelMessenger:
			entry["request"] = map[string]any{"method": "POST", "path": "/v1/invitations", "body": map[string]any{"connectionType": "messenger"}}
		case v1alpha1.ChannelInstagram:
			entry["description"] = "connect an Instagram account to a sender (spec.instagram of its Sender resource)"
		case v1alpha1.ChannelTelegram:
			entry["request"] = map[string]any{"method": "POST", "path": "/v2/channels", "body": map[string]any{"type": "telegram", "botToken": "<token from BotFather>"}}
		default:
			entry["request"] = map[string]any{"method": "POST", "path": "/v2/channels", "body": map[string]any{"type": string(ch)}}
		}
		connect = append(connect, entry)
	}
	e := apperror.New(apperror.Conflict, "no_channel", fmt.Sprintf("Nothing active can reach %s; connect %s.", to, strings.Join(chanNames(channels), " or ")))
	e.Details = map[string]any{"connect": connect}
	return e
}

func chanNames(cs []v1alpha1.Channel) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// hasAddress says whether address is one of the sender's addresses (its number, its email
// address, its WhatsApp number).
func hasAddress(snd *v1alpha1.Sender, address string) bool {
	for _, ch := range v1alpha1.AllChannels {
		if a := originator(snd, ch); a != "" && a == address {
			return true
		}
	}
	return false
}
