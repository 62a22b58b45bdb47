package telegram

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// ParseUpdate reads an Update Telegram posted to a webhook (https://core.telegram.org/bots/api#update).
// ok is false when the update carries nothing to store:
//   - edited_message, edited_channel_post: an edit of a message already stored; Switchboard keeps
//     no edits;
//   - channel_post: a post of a channel the bot administers, not a contact's message;
//   - my_chat_member, chat_member, chat_join_request: the bot was blocked, unblocked, added or
//     removed, or a group's members changed;
//   - message_reaction_count: a channel's anonymous reaction counts, from no contact;
//   - business_message and the other business_* updates: a business account's chats, answered
//     through its connection, which this transport does not hold;
//   - inline_query, chosen_inline_result, shipping_query, pre_checkout_query, poll, poll_answer,
//     purchased_paid_media, chat_boost, removed_chat_boost: nothing a contact wrote;
//   - a service message (members joined or left, a pinned message, a new chat title, …);
//   - a callback query without data (a game's button).
//
// A message of a kind Switchboard cannot represent (a poll, a dice, a game, an invoice, a
// story, …) is an Inbound with Unsupported naming the kind (its Bot API field) and no
// MessageType.
func ParseUpdate(body []byte) (transport.Inbound, bool, error) {
	var u map[string]json.RawMessage
	if err := json.Unmarshal(body, &u); err != nil {
		return transport.Inbound{}, false, fmt.Errorf("telegram: read update: %w", err)
	}
	var (
		in  transport.Inbound
		ok  bool
		err error
	)
	switch {
	case present(u["message"]):
		in, ok, err = parseMessage(u["message"])
	case present(u["callback_query"]):
		in, ok, err = parseCallback(u["callback_query"])
	case present(u["message_reaction"]):
		var updateID int64
		_ = json.Unmarshal(u["update_id"], &updateID)
		in, ok, err = parseReaction(u["message_reaction"], updateID)
	}
	if err != nil {
		return transport.Inbound{}, false, fmt.Errorf("telegram: read update: %w", err)
	}
	return in, ok, nil
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

type user struct {
	ID        int64  `json:"id"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

// chat is a Chat: a private chat has a user's names, a group or channel a title.
type chat struct {
	ID        int64  `json:"id"`
	Title     string `json:"title"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

type file struct {
	FileID   string `json:"file_id"`
	MimeType string `json:"mime_type"`
	FileName string `json:"file_name"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

type location struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

type message struct {
	MessageID  int64  `json:"message_id"`
	From       *user  `json:"from"`
	SenderChat *chat  `json:"sender_chat"`
	Chat       chat   `json:"chat"`
	Date       int64  `json:"date"`
	Text       string `json:"text"`
	Caption    string `json:"caption"`
	Photo      []file `json:"photo"`
	Animation  *file  `json:"animation"`
	Video      *file  `json:"video"`
	VideoNote  *file  `json:"video_note"`
	Audio      *file  `json:"audio"`
	Voice      *file  `json:"voice"`
	Document   *file  `json:"document"`
	Sticker    *struct {
		FileID     string `json:"file_id"`
		IsAnimated bool   `json:"is_animated"`
		IsVideo    bool   `json:"is_video"`
	} `json:"sticker"`
	Location *location `json:"location"`
	Venue    *struct {
		Location location `json:"location"`
		Title    string   `json:"title"`
		Address  string   `json:"address"`
	} `json:"venue"`
	Contact *struct {
		PhoneNumber string `json:"phone_number"`
		FirstName   string `json:"first_name"`
		LastName    string `json:"last_name"`
	} `json:"contact"`
	ReplyToMessage *struct {
		MessageID int64 `json:"message_id"`
		Chat      chat  `json:"chat"`
	} `json:"reply_to_message"`
}

// unsupported are the message fields of what a contact can send and Switchboard cannot
// represent, in the order they are looked for.
var unsupported = []string{"poll", "dice", "game", "invoice", "story", "paid_media", "checklist", "giveaway",
	"giveaway_winners", "web_app_data", "passport_data", "users_shared", "chat_shared", "gift", "unique_gift"}

func parseMessage(raw json.RawMessage) (transport.Inbound, bool, error) {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return transport.Inbound{}, false, fmt.Errorf("message: %w", err)
	}
	if m.Chat.ID == 0 || m.MessageID == 0 {
		return transport.Inbound{}, false, fmt.Errorf("message: no chat or message id")
	}
	in := transport.Inbound{Channel: Channel, From: strconv.FormatInt(m.Chat.ID, 10),
		ProviderMessageID: ProviderMessageID(m.Chat.ID, m.MessageID), ProviderTimestamp: unixTime(m.Date),
		ProfileName: senderName(m.From, m.SenderChat, m.Chat)}
	if r := m.ReplyToMessage; r != nil && r.MessageID != 0 {
		replyChat := r.Chat.ID
		if replyChat == 0 {
			replyChat = m.Chat.ID
		}
		in.ReplyToProviderMessageID = ProviderMessageID(replyChat, r.MessageID)
	}
	media := func(messageType string, f *file, mimeType string) (transport.Inbound, bool, error) {
		in.MessageType, in.Text = messageType, m.Caption
		in.Content = &transport.Content{MediaID: f.FileID, MimeType: orElse(f.MimeType, mimeType), Filename: f.FileName}
		return in, true, nil
	}

	switch {
	case m.Text != "":
		in.MessageType, in.Text = "text", m.Text
		return in, true, nil
	case len(m.Photo) > 0:
		// Telegram lists a photo's sizes from the smallest.
		largest := m.Photo[0]
		for _, p := range m.Photo[1:] {
			if p.Width*p.Height >= largest.Width*largest.Height {
				largest = p
			}
		}
		return media("image", &largest, "image/jpeg")
	case m.Animation != nil: // before document: an animation also fills document
		return media("video", m.Animation, "video/mp4")
	case m.Video != nil:
		return media("video", m.Video, "")
	case m.VideoNote != nil:
		return media("video", m.VideoNote, "video/mp4")
	case m.Audio != nil:
		return media("audio", m.Audio, "")
	case m.Voice != nil:
		return media("audio", m.Voice, "audio/ogg")
	case m.Document != nil:
		return media("document", m.Document, "")
	case m.Sticker != nil:
		mimeType := "image/webp"
		switch {
		case m.Sticker.IsAnimated:
			mimeType = "application/x-tgsticker"
		case m.Sticker.IsVideo:
			mimeType = "video/webm"
		}
		return media("sticker", &file{FileID: m.Sticker.FileID}, mimeType)
	case m.Venue != nil: // before location: a venue also fills location
		lat, lng := m.Venue.Location.Latitude, m.Venue.Location.Longitude
		in.MessageType = "location"
		in.Content = &transport.Content{Latitude: &lat, Longitude: &lng, LocationName: m.Venue.Title, LocationAddress: m.Venue.Address}
		return in, true, nil
	case m.Location != nil:
		lat, lng := m.Location.Latitude, m.Location.Longitude
		in.MessageType = "location"
		in.Content = &transport.Content{Latitude: &lat, Longitude: &lng}
		return in, true, nil
	case m.Contact != nil:
		in.MessageType = "contact"
		card := transport.ContactCard{Name: fullName(m.Contact.FirstName, m.Contact.LastName)}
		if m.Contact.PhoneNumber != "" {
			card.Phones = []string{m.Contact.PhoneNumber}
		}
		in.Content = &transport.Content{Contacts: []transport.ContactCard{card}}
		return in, true, nil
	}

	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields) // it decoded above
	for _, kind := range unsupported {
		if present(fields[kind]) {
			in.Unsupported, in.Text = kind, m.Caption
			return in, true, nil
		}
	}
	return transport.Inbound{}, false, nil
}

// parseCallback reads a press of an inline keyboard's callback button (the buttons and list
// messages): a text whose Text is the button's callback_data (the button or row id), in reply to
// the message that held the button. Its provider id is "callback:<callback query id>"
// (CallbackQueryID reads it back): the Telegram app shows the button loading until
// Client.AnswerCallbackQuery answers the query, or for a few seconds.
func parseCallback(raw json.RawMessage) (transport.Inbound, bool, error) {
	var q struct {
		ID      string `json:"id"`
		From    user   `json:"from"`
		Message *struct {
			MessageID int64 `json:"message_id"`
			Chat      chat  `json:"chat"`
		} `json:"message"`
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return transport.Inbound{}, false, fmt.Errorf("callback_query: %w", err)
	}
	if q.Data == "" {
		return transport.Inbound{}, false, nil
	}
	chatID := q.From.ID // a message sent through inline mode names no chat: the user's own
	in := transport.Inbound{Channel: Channel, MessageType: "text", Text: q.Data, ProfileName: senderName(&q.From, nil, chat{})}
	if q.ID != "" {
		in.ProviderMessageID = callbackPrefix + q.ID
	}
	if q.Message != nil && q.Message.Chat.ID != 0 {
		chatID = q.Message.Chat.ID
		in.ReplyToProviderMessageID = ProviderMessageID(chatID, q.Message.MessageID)
	}
	if chatID == 0 {
		return transport.Inbound{}, false, fmt.Errorf("callback_query: no chat")
	}
	in.From = strconv.FormatInt(chatID, 10)
	return in, true, nil
}

// parseReaction reads a contact's change of their reaction to a message: a reaction message
// with the new emoji, in reply to the message reacted to. An empty Emoji is a reaction taken
// back. A custom emoji or paid reaction is Unsupported ("custom_emoji_reaction"). A reaction is
// no message of Telegram's: its provider id "<chat id>:<message id>:reaction:<update id>" is the
// update's, so that a delivery Telegram repeats is stored once.
func parseReaction(raw json.RawMessage, updateID int64) (transport.Inbound, bool, error) {
	var r struct {
		Chat        chat  `json:"chat"`
		MessageID   int64 `json:"message_id"`
		User        *user `json:"user"`
		ActorChat   *chat `json:"actor_chat"`
		Date        int64 `json:"date"`
		NewReaction []struct {
			Type  string `json:"type"`
			Emoji string `json:"emoji"`
		} `json:"new_reaction"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return transport.Inbound{}, false, fmt.Errorf("message_reaction: %w", err)
	}
	if r.Chat.ID == 0 || r.MessageID == 0 {
		return transport.Inbound{}, false, fmt.Errorf("message_reaction: no chat or message id")
	}
	in := transport.Inbound{Channel: Channel, From: strconv.FormatInt(r.Chat.ID, 10), ProviderTimestamp: unixTime(r.Date),
		ProfileName: senderName(r.User, r.ActorChat, r.Chat), ReplyToProviderMessageID: ProviderMessageID(r.Chat.ID, r.MessageID)}
	if updateID != 0 {
		in.ProviderMessageID = reactionID(r.Chat.ID, r.MessageID) + ":" + strconv.FormatInt(updateID, 10)
	}
	for _, rt := range r.NewReaction {
		if rt.Type == "emoji" {
			in.MessageType, in.Content = "reaction", &transport.Content{Emoji: rt.Emoji}
			return in, true, nil
		}
	}
	if len(r.NewReaction) > 0 {
		in.Unsupported = r.NewReaction[0].Type + "_reaction"
		return in, true, nil
	}
	in.MessageType, in.Content = "reaction", &transport.Content{}
	return in, true, nil
}

// senderName is the name a message's sender shows: the user's first and last name, else their
// username; for a message sent on behalf of a chat (an anonymous group admin, a reaction of a
// channel), or with no user, the chat's.
func senderName(u *user, sender *chat, c chat) string {
	if sender != nil && sender.ID != 0 {
		c, u = *sender, nil
	}
	if u != nil {
		if n := fullName(u.FirstName, u.LastName); n != "" {
			return n
		}
		if u.Username != "" {
			return u.Username
		}
	}
	if c.Title != "" {
		return c.Title
	}
	return orElse(fullName(c.FirstName, c.LastName), c.Username)
}

func fullName(first, last string) string { return strings.TrimSpace(first + " " + last) }

func unixTime(seconds int64) *time.Time {
	if seconds == 0 {
		return nil
	}
	t := time.Unix(seconds, 0).UTC()
	return &t
}

// callbackPrefix starts the provider id of a callback query's inbound text.
const callbackPrefix = "callback:"

// CallbackQueryID is the callback query id in the provider id of an inbound text ParseUpdate
// read from a button press; ok is false for any other provider id.
func CallbackQueryID(providerMessageID string) (id string, ok bool) {
	id, ok = strings.CutPrefix(providerMessageID, callbackPrefix)
	return id, ok && id != ""
}
