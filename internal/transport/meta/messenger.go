package meta

import (
	"fmt"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// Meta's documented limits of a Send API message.
const (
	pageMaxText         = 2000 // Messenger; Instagram counts 1000 bytes
	igMaxTextBytes      = 1000
	pageMaxQuickReplies = 13
	pageMaxReplyTitle   = 20
	pageMaxReplyPayload = 1000
)

// pageTypes are the message types the Send API carries per channel. Neither has locations,
// contacts, lists, call-to-action buttons or templates here; Instagram has no file attachment.
// Reply buttons become quick replies; a reaction is the react sender action.
var pageTypes = map[string]map[string]bool{
	ChannelMessenger: {"text": true, "image": true, "video": true, "audio": true, "document": true, "buttons": true, "reaction": true},
	ChannelInstagram: {"text": true, "image": true, "video": true, "audio": true, "buttons": true, "reaction": true},
}

// pageAttachment is the Send API's attachment type of a media message type.
var pageAttachment = map[string]string{"image": "image", "video": "video", "audio": "audio", "document": "file"}

// MessengerCarries reports whether the messenger channel carries messageType ("" is text), so a
// caller can refuse the others when a message is accepted.
func MessengerCarries(messageType string) bool {
	return pageCarries(ChannelMessenger, messageType)
}

// InstagramCarries reports whether the instagram channel carries messageType ("" is text).
func InstagramCarries(messageType string) bool {
	return pageCarries(ChannelInstagram, messageType)
}

func pageCarries(channel, messageType string) bool {
	if messageType == "" {
		messageType = "text"
	}
	return pageTypes[channel][messageType]
}

// HumanAgentWindow is how long after the 24-hour window a person's message opened a reply may
// still go, tagged HUMAN_AGENT (Meta's allowance for a person answering, on Messenger and
// Instagram; the app needs the Human Agent permission).
const HumanAgentWindow = 7 * 24 * time.Hour

// pageMessage is the body of POST /{page-id}/messages for m at now: a message or, for a
// reaction, the react or unreact sender action. Inside the 24-hour window the contact's last
// message opened (or when it is not known) it is messaging_type RESPONSE; within seven days of
// that message, MESSAGE_TAG with tag HUMAN_AGENT; later, nothing can go, and it fails as Meta
// would refuse it, without a call.
func pageMessage(m transport.Outbound, now time.Time) (obj, error) {
	typ, c := messageType(m), content(m)
	if !pageCarries(m.Channel, typ) {
		return nil, unsupported(m.Channel, typ)
	}
	body := obj{"recipient": obj{"id": m.To}}
	if typ == "reaction" {
		return pageReaction(body, m.Channel, m.ReactToProviderMessageID, c.Emoji)
	}
	var msg obj
	switch typ {
	case "text", "buttons":
		if m.Text == "" {
			return nil, invalid("A %s message on %s needs text.", typ, m.Channel)
		}
		if err := pageTextLimits(m.Channel, m.Text); err != nil {
			return nil, err
		}
		msg = obj{"text": m.Text}
		if typ == "buttons" {
			replies, err := quickReplies(c.Buttons)
			if err != nil {
				return nil, err
			}
			msg["quick_replies"] = replies
		}
	default: // media
		if m.Text != "" {
			return nil, invalid("A %s attachment on %s has no caption; send the text as a message of its own.", typ, m.Channel)
		}
		payload, err := mediaRef(typ, c, "attachment_id", "url")
		if err != nil {
			return nil, err
		}
		msg = obj{"attachment": obj{"type": pageAttachment[typ], "payload": payload}}
	}
	body["messaging_type"] = "RESPONSE"
	if w := m.WindowUntil; w != nil && !now.Before(*w) {
		if !now.Before(w.Add(HumanAgentWindow - 24*time.Hour)) {
			return nil, &transport.Failure{Code: CodeMessengerWindowClosed, Message: fmt.Sprintf(
				"The person last wrote more than 7 days ago; %s allows no message until they write again.", m.Channel)}
		}
		body["messaging_type"], body["tag"] = "MESSAGE_TAG", "HUMAN_AGENT"
	}
	body["message"] = msg
	return body, nil
}

func pageTextLimits(channel, text string) error {
	if channel == ChannelInstagram && len(text) > igMaxTextBytes {
		return invalid("The text has %d bytes; Instagram allows %d.", len(text), igMaxTextBytes)
	}
	return checkLimits(limit{"The text", text, pageMaxText})
}

// quickReplies are the reply buttons as quick replies: the title shown, the id as payload.
func quickReplies(buttons []transport.Button) ([]obj, error) {
	if n := len(buttons); n == 0 || n > pageMaxQuickReplies {
		return nil, invalid("A buttons message has 1 to %d quick replies; this one has %d.", pageMaxQuickReplies, n)
	}
	seen := map[string]bool{}
	replies := make([]obj, len(buttons))
	for i, b := range buttons {
		if err := needIDTitle("Button", i, b.ID, b.Title, seen); err != nil {
			return nil, err
		}
		if err := checkLimits(limit{fmt.Sprintf("Button %d's title", i+1), b.Title, pageMaxReplyTitle},
			limit{fmt.Sprintf("Button %d's id", i+1), b.ID, pageMaxReplyPayload}); err != nil {
			return nil, err
		}
		replies[i] = obj{"content_type": "text", "title": b.Title, "payload": b.ID}
	}
	return replies, nil
}

// pageReaction is the react sender action (unreact when emoji is empty). Messenger takes any
// emoji; Instagram documents the reaction by name, so a heart is sent as "love" there.
func pageReaction(body obj, channel, messageID, emoji string) (obj, error) {
	if messageID == "" {
		return nil, invalid("A reaction needs the %s id of the message reacted to.", channel)
	}
	if emoji == "" {
		body["sender_action"] = "unreact"
		body["payload"] = obj{"message_id": messageID}
		return body, nil
	}
	if channel == ChannelInstagram && hearts[emoji] {
		emoji = "love"
	}
	body["sender_action"] = "react"
	body["payload"] = obj{"message_id": messageID, "reaction": emoji}
	return body, nil
}

// hearts are the emoji Instagram's "love" reaction stands for.
var hearts = map[string]bool{"❤": true, "❤️": true, "♥": true, "♥️": true}
