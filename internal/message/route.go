package message

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
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

var (
	e164Re       = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	emailRe      = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
	scopedUserRe = regexp.MustCompile(`^[A-Z]{2}\.[0-9A-Za-z]{6,}$`)
	// A chat id is bare digits, no leading zero: a user id of up to 15 digits, or a Telegram
	// group or channel, negative, up to 16 digits (-100 and the channel's id). A positive number
	// of 16 digits or more is not a chat id (and not E.164, at most 15 digits): most likely a
	// phone number missing its +, so it is refused rather than sent nowhere.
	chatIDRe = regexp.MustCompile(`^(-[1-9][0-9]{0,15}|[1-9][0-9]{0,14})$`)
	// pageScopedIDRe is an Instagram or Messenger page-scoped user id, 16 or 17 digits today: a
	// chat id only on a send that names one of those channels.
	pageScopedIDRe = regexp.MustCompile(`^[1-9][0-9]{15,19}$`)
)

func classify(to string) recipientKind {
	switch {
	case e164Re.MatchString(to):
		return phoneRecipient
	case emailRe.MatchString(to):
		return emailRecipient
	case scopedUserRe.MatchString(to):
		return scopedUserRecipient
	case chatIDRe.MatchString(to):
		return chatIDRecipient
	}
	return invalidRecipient
}

// classifyFor is classify for a send on channel: a long page-scoped id is a chat id there.
func classifyFor(to, channel string) recipientKind {
	k := classify(to)
	if k == invalidRecipient && (channel == string(v1alpha1.ChannelInstagram) || channel == string(v1alpha1.ChannelMessenger)) &&
		pageScopedIDRe.MatchString(to) {
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
	if messageType != "text" && messageType != "template" && ch != v1alpha1.ChannelWhatsApp {
		return "", &apperror.FieldError{Path: "messageType", Message: fmt.Sprintf("%s messages are sent on whatsapp, not %s", messageType, ch)}
	}
	return ch, nil
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

// IsScopedUserID says whether address is a WhatsApp business-scoped user id.
func IsScopedUserID(address string) bool { return scopedUserRe.MatchString(address) }
