package message

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Recipient kinds (spec: What the service does 4).
type recipientKind int

const (
	invalidRecipient recipientKind = iota
	phoneRecipient                 // E.164
	emailRecipient
	scopedUserRecipient // a business-scoped user id: WhatsApp contacts whose number is hidden
	chatIDRecipient     // a numeric chat id: telegram, instagram, messenger
)

func classify(to string) recipientKind {
	switch {
	case addr.IsE164(to):
		return phoneRecipient
	case addr.IsEmail(to):
		return emailRecipient
	case addr.IsScopedUserID(to):
		return scopedUserRecipient
	case addr.IsChatID(to):
		return chatIDRecipient
	}
	return invalidRecipient
}

// classifyFor is classify for a send on channel: a long page-scoped id is a chat id there.
func classifyFor(to, channel string) recipientKind {
	k := classify(to)
	if k == invalidRecipient && (channel == string(v1alpha1.ChannelInstagram) || channel == string(v1alpha1.ChannelMessenger)) &&
		addr.IsPageScopedID(to) {
		return chatIDRecipient
	}
	return k
}

// MessageTypes are the message types of a send.
var MessageTypes = []string{"text", "image", "video", "audio", "document", "sticker", "location", "contact", "buttons",
	"list", "cta_url", "request_contact_info", "location_request", "reaction", "template"}

// Channels are the channel values of a send.
var Channels = []string{"auto", "sms", "sms_oneway", "whatsapp", "telegram", "email", "instagram", "messenger", "voice"}

// route picks the channel of a send when it names none, and checks that the channel can reach
// the recipient (spec: What the service does 2 and 4).
func route(requested string, kind recipientKind, messageType string, active []v1alpha1.Channel) (v1alpha1.Channel, *apperror.FieldError) {
	if requested == "" || requested == "auto" {
		switch {
		case kind == emailRecipient:
			return v1alpha1.ChannelEmail, nil
		case kind == scopedUserRecipient || messageType != "text":
			return v1alpha1.ChannelWhatsApp, nil
		case kind == chatIDRecipient:
			for _, c := range []v1alpha1.Channel{v1alpha1.ChannelTelegram, v1alpha1.ChannelInstagram, v1alpha1.ChannelMessenger} {
				if slices.Contains(active, c) {
					return c, nil
				}
			}
			return "", &apperror.FieldError{Path: "to", Message: "a chat id needs a telegram, instagram or messenger channel on the sender"}
		default:
			// Text to a phone number is SMS; a sender with only one-way SMS sends that.
			if !slices.Contains(active, v1alpha1.ChannelSMS) && slices.Contains(active, v1alpha1.ChannelSMSOneway) {
				return v1alpha1.ChannelSMSOneway, nil
			}
			return v1alpha1.ChannelSMS, nil
		}
	}
	ch := v1alpha1.Channel(requested)
	ok := false
	switch ch {
	case v1alpha1.ChannelEmail:
		ok = kind == emailRecipient
	case v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway, v1alpha1.ChannelVoice:
		ok = kind == phoneRecipient
	case v1alpha1.ChannelWhatsApp:
		ok = kind == phoneRecipient || kind == scopedUserRecipient
	case v1alpha1.ChannelTelegram, v1alpha1.ChannelInstagram, v1alpha1.ChannelMessenger:
		ok = kind == chatIDRecipient
	}
	if !ok {
		return "", &apperror.FieldError{Path: "to", Message: fmt.Sprintf("%s cannot reach %s", ch, describe(kind))}
	}
	if !carriesType(ch, messageType) {
		return "", &apperror.FieldError{Path: "messageType", Message: fmt.Sprintf("%s messages are sent on whatsapp, not %s", messageType, ch)}
	}
	return ch, nil
}

// carriesType says whether a channel named by the send can carry messageType at all: WhatsApp
// every type, Telegram its rich types, SMS media as MMS (where the destination takes it: the
// accept policy checks), the others text (and templates). Without a channel, a type other than
// text goes to WhatsApp (spec: What the service does 2).
func carriesType(ch v1alpha1.Channel, messageType string) bool {
	switch {
	case messageType == "text" || messageType == "template" || ch == v1alpha1.ChannelWhatsApp || ch == v1alpha1.ChannelTelegram:
		return true
	case ch == v1alpha1.ChannelSMS || ch == v1alpha1.ChannelSMSOneway:
		return mediaTypes[messageType] && messageType != "sticker"
	}
	return false
}

func describe(k recipientKind) string {
	return map[recipientKind]string{
		phoneRecipient: "a phone number", emailRecipient: "an email address",
		scopedUserRecipient: "a business-scoped user id", chatIDRecipient: "a chat id",
	}[k]
}

func joinChannels(cs []v1alpha1.Channel) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
