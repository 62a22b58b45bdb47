package telegram

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// Channel is the channel the transport carries.
const Channel = "telegram"

// Transport sends messages through the Bot API as the bot whose token each message carries
// (Outbound.AccountToken) to the chat Outbound.To names.
type Transport struct {
	Client Client
}

// Channels implements transport.Transport.
func (Transport) Channels() []string { return []string{Channel} }

// methods are the Bot API methods of the media message types, with the parameter naming the file.
var methods = map[string]struct{ method, param string }{
	"image":    {"sendPhoto", "photo"},
	"video":    {"sendVideo", "video"},
	"audio":    {"sendAudio", "audio"},
	"document": {"sendDocument", "document"},
	"sticker":  {"sendSticker", "sticker"},
}

// Supports says whether Telegram can carry messages of messageType. It carries every message
// type but template: Telegram has no message templates.
func Supports(messageType string) bool {
	switch messageType {
	case "text", "location", "contact", "buttons", "list", "cta_url", "request_contact_info", "location_request", "reaction":
		return true
	}
	_, media := methods[messageType]
	return media
}

// Labels of the one reply-keyboard button of request_contact_info and location_request: the
// content has no field for them.
const (
	shareContactLabel  = "Share my contact"
	shareLocationLabel = "Share my location"
)

// maxCallbackData is the Bot API's bound on an inline button's callback_data, in bytes.
const maxCallbackData = 64

// laterCardWait bounds how long Send waits for flood control between the cards of one contact
// message before it gives up and lets the message be tried again.
const laterCardWait = 5 * time.Second

// chatIDShape is a chat id: a user's (positive), a group's or a channel's (negative).
var chatIDShape = regexp.MustCompile(`^-?[1-9][0-9]{0,18}$`)

// request is one Bot API call.
type request struct {
	method string
	params map[string]any
}

// Send implements transport.Transport. The provider id is "<chat id>:<message id>"
// (ProviderMessageID); a contact message with several cards sends one message a card and is
// known by the first; a reaction is known by "<chat id>:<message id>:reaction".
func (t Transport) Send(ctx context.Context, m transport.Outbound) (transport.Result, error) {
	if !tokenShape.MatchString(m.AccountToken) {
		return transport.Result{}, &transport.Failure{Code: CodeAuthFailed, Message: "the sender has no well-formed Telegram bot token"}
	}
	chatID, err := strconv.ParseInt(m.To, 10, 64)
	if err != nil || !chatIDShape.MatchString(m.To) {
		return transport.Result{}, &transport.Failure{Code: CodeInvalidRecipient, Message: "a Telegram recipient is a numeric chat id"}
	}
	reqs, err := requests(m, chatID)
	if err != nil {
		return transport.Result{}, err
	}
	if m.MessageType == "reaction" {
		if err := t.Client.call(ctx, m.AccountToken, reqs[0].method, reqs[0].params, nil); err != nil {
			return transport.Result{}, err
		}
		return transport.Result{ProviderMessageID: reactionID(chatID, reqs[0].params["message_id"].(int64))}, nil
	}
	var first string
	for i, r := range reqs {
		var sent struct {
			MessageID int64 `json:"message_id"`
			Chat      struct {
				ID int64 `json:"id"`
			} `json:"chat"`
		}
		err := t.Client.call(ctx, m.AccountToken, r.method, r.params, &sent)
		if tmp := asTemporary(err); i > 0 && tmp != nil && tmp.RetryAfter > 0 && tmp.RetryAfter <= laterCardWait {
			// A later card met flood control: trying the whole message again would repeat the
			// cards already sent, so wait here once.
			select {
			case <-ctx.Done():
				return transport.Result{}, err
			case <-time.After(tmp.RetryAfter):
			}
			err = t.Client.call(ctx, m.AccountToken, r.method, r.params, &sent)
		}
		if err != nil {
			return transport.Result{}, err
		}
		if sent.MessageID <= 0 {
			return transport.Result{}, fmt.Errorf("telegram: %s: the answer names no message", r.method)
		}
		if i == 0 {
			first = ProviderMessageID(orZero(sent.Chat.ID, chatID), sent.MessageID)
		}
	}
	return transport.Result{ProviderMessageID: first}, nil
}

// requests are the Bot API calls that send m to chatID, or the *transport.Failure of a message
// Telegram cannot carry.
func requests(m transport.Outbound, chatID int64) ([]request, error) {
	c := transport.Content{}
	if m.Content != nil {
		c = *m.Content
	}
	params := func(kv ...any) map[string]any {
		p := map[string]any{"chat_id": chatID}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i].(string)] = kv[i+1]
		}
		return p
	}
	one := func(method string, p map[string]any) ([]request, error) { return []request{{method, p}}, nil }
	withFooter := func(text string) string {
		if c.FooterText == "" {
			return text
		}
		return text + "\n\n" + c.FooterText
	}

	switch mt := m.MessageType; mt {
	case "text", "":
		return one("sendMessage", params("text", m.Text))

	case "image", "video", "audio", "document", "sticker":
		media := c.MediaURL
		if media == "" {
			media = c.MediaID // a Telegram file_id
		}
		if media == "" {
			return nil, rejected("a %s needs content.mediaUrl or content.mediaId", mt)
		}
		p := params(methods[mt].param, media)
		if m.Text != "" && mt != "sticker" { // a sticker has no caption
			p["caption"] = m.Text
		}
		return one(methods[mt].method, p)

	case "location":
		if c.Latitude == nil || c.Longitude == nil {
			return nil, rejected("a location needs content.latitude and content.longitude")
		}
		if c.LocationName == "" && c.LocationAddress == "" {
			return one("sendLocation", params("latitude", *c.Latitude, "longitude", *c.Longitude))
		}
		// A venue needs both a title and an address.
		title, address := orElse(c.LocationName, c.LocationAddress), orElse(c.LocationAddress, c.LocationName)
		return one("sendVenue", params("latitude", *c.Latitude, "longitude", *c.Longitude, "title", title, "address", address))

	case "contact":
		if len(c.Contacts) == 0 {
			return nil, rejected("a contact message needs content.contacts")
		}
		var out []request
		for i, card := range c.Contacts {
			if len(card.Phones) == 0 {
				return nil, rejected("Telegram needs a phone number for each contact card; card %d has none", i)
			}
			p := params("phone_number", card.Phones[0], "first_name", orElse(card.Name, card.Phones[0]))
			if len(card.Phones) > 1 {
				p["vcard"] = vcard(card)
			}
			out = append(out, request{"sendContact", p})
		}
		return out, nil

	case "buttons":
		var rows [][]map[string]string
		for _, b := range c.Buttons {
			if len(b.ID) > maxCallbackData {
				return nil, rejected("Telegram carries a button id of up to %d bytes; %q is longer", maxCallbackData, b.Title)
			}
			rows = append(rows, []map[string]string{{"text": b.Title, "callback_data": b.ID}})
		}
		return one("sendMessage", params("text", withFooter(m.Text), "reply_markup", map[string]any{"inline_keyboard": rows}))

	case "list":
		var rows [][]map[string]string
		for _, s := range c.Sections {
			for _, r := range s.Rows {
				if len(r.ID) > maxCallbackData {
					return nil, rejected("Telegram carries a row id of up to %d bytes; %q is longer", maxCallbackData, r.Title)
				}
				rows = append(rows, []map[string]string{{"text": r.Title, "callback_data": r.ID}})
			}
		}
		if len(rows) == 0 {
			return nil, rejected("a list needs at least one row")
		}
		return one("sendMessage", params("text", withFooter(m.Text), "reply_markup", map[string]any{"inline_keyboard": rows}))

	case "cta_url":
		if c.CTADisplayText == "" || c.CTAURL == "" {
			return nil, rejected("a cta_url message needs content.ctaDisplayText and content.ctaUrl")
		}
		markup := map[string]any{"inline_keyboard": [][]map[string]string{{{"text": c.CTADisplayText, "url": c.CTAURL}}}}
		body := withFooter(m.Text)
		switch c.CTAHeaderType {
		case "image", "video", "document":
			if c.CTAHeaderMedia != "" {
				media := methods[c.CTAHeaderType]
				return one(media.method, params(media.param, c.CTAHeaderMedia, "caption", body, "reply_markup", markup))
			}
		case "text":
			if c.CTAHeaderText != "" {
				body = c.CTAHeaderText + "\n\n" + body
			}
		}
		return one("sendMessage", params("text", body, "reply_markup", markup))

	case "request_contact_info", "location_request":
		button := map[string]any{"text": shareContactLabel, "request_contact": true}
		if mt == "location_request" {
			button = map[string]any{"text": shareLocationLabel, "request_location": true}
		}
		markup := map[string]any{"keyboard": [][]map[string]any{{button}}, "one_time_keyboard": true, "resize_keyboard": true}
		return one("sendMessage", params("text", m.Text, "reply_markup", markup))

	case "reaction":
		target, messageID, ok := ParseProviderMessageID(m.ReactToProviderMessageID)
		if !ok {
			return nil, rejected("the message reacted to has no Telegram message id")
		}
		if target != chatID {
			return nil, rejected("the message reacted to is in another chat")
		}
		if c.Emoji == "" {
			return nil, rejected("a reaction needs content.emoji")
		}
		return one("setMessageReaction", params("message_id", messageID,
			"reaction", []map[string]string{{"type": "emoji", "emoji": reactionEmoji(c.Emoji)}}))
	}
	return nil, &transport.Failure{Code: CodeMessageTypeUnsupported, Message: fmt.Sprintf("Telegram cannot carry a %s message", m.MessageType)}
}

// reactionEmoji is emoji as the Bot API lists its reactions: without the variation selector
// U+FE0F that keyboards add ("❤️" is "❤" there).
func reactionEmoji(emoji string) string { return strings.ReplaceAll(emoji, "\uFE0F", "") }

// vcard carries every phone of a card; phone_number holds only the first.
func vcard(card transport.ContactCard) string {
	var b strings.Builder
	b.WriteString("BEGIN:VCARD\r\nVERSION:3.0\r\n")
	b.WriteString("FN:" + vcardEscape(orElse(card.Name, card.Phones[0])) + "\r\n")
	for _, p := range card.Phones {
		b.WriteString("TEL:" + vcardEscape(p) + "\r\n")
	}
	b.WriteString("END:VCARD")
	return b.String()
}

func vcardEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, ",", `\,`, ";", `\;`, "\r", "", "\n", `\n`).Replace(s)
}

// orZero is a, or b when a is 0.
func orZero(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// orElse is the first of a and b that is not empty.
func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func rejected(format string, args ...any) *transport.Failure {
	return &transport.Failure{Code: CodeRejected, Message: fmt.Sprintf(format, args...)}
}
