package message

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// bareDigits is a to of 8 to 15 digits without +: read as a chat id, never guessed to be a
// number (spec: v2 send details).
var bareDigits = regexp.MustCompile(`^[0-9]{8,15}$`)

// routeStrict picks among active connections only (Request.Strict).
func routeStrict(c checked, active []v1alpha1.Channel) (v1alpha1.Channel, string, error) {
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
	e := apperror.New(apperror.Conflict, "no_channel", fmt.Sprintf("Nothing active can reach %s; connect %s.", to, strings.Join(chanNames(channels), " or ")))
	e.Details = map[string]any{"connect": ConnectRequests(channels)}
	return e
}

// ConnectRequests are, for each channel, the request that connects it (409 no_channel's
// details.connect).
func ConnectRequests(channels []v1alpha1.Channel) []map[string]any {
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
	return connect
}

func chanNames(cs []v1alpha1.Channel) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}
