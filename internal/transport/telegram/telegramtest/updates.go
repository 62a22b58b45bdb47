package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// The contact the update builders write as: in private chat N, user N with these names.
const (
	FirstName = "Ada"
	LastName  = "Lovelace"
	Username  = "ada"
)

// SecretHeader is the header Deliver sends the webhook's secret_token in.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// Update is an Update as Telegram posts it to a webhook. Deliver numbers it (update_id).
type Update map[string]any

// MessageID is the message_id of the update's message; 0 when it has none.
func (u Update) MessageID() int64 {
	m, _ := u["message"].(map[string]any)
	id, _ := m["message_id"].(int64)
	return id
}

// PhotoFileID is the file_id of the largest size of the update's photo; "" when it has none.
func (u Update) PhotoFileID() string {
	m, _ := u["message"].(map[string]any)
	sizes, _ := m["photo"].([]map[string]any)
	if len(sizes) == 0 {
		return ""
	}
	id, _ := sizes[len(sizes)-1]["file_id"].(string)
	return id
}

// contactUser is the user who writes in chat: the private chat's own user, or one member of a
// group.
func contactUser(chat int64) map[string]any {
	id := chat
	if id < 0 {
		id = 777000111
	}
	return map[string]any{"id": id, "is_bot": false, "first_name": FirstName, "last_name": LastName, "username": Username, "language_code": "en"}
}

// MessageWith is a message from the contact in chatID holding fields (text, photo, poll, …),
// numbered after the chat's last message.
func (s *Server) MessageWith(chatID int64, fields map[string]any) Update {
	s.mu.Lock()
	s.lastID[chatID]++
	id := s.lastID[chatID]
	s.mu.Unlock()
	m := map[string]any{"message_id": id, "date": time.Now().Unix(), "chat": chatObject(chatID), "from": contactUser(chatID)}
	for k, v := range fields {
		m[k] = v
	}
	return Update{"message": m}
}

// Message is a text message from the contact in chatID.
func (s *Server) Message(chatID int64, text string) Update {
	return s.MessageWith(chatID, map[string]any{"text": text})
}

// Reply is a text message from the contact in chatID quoting message replyTo of that chat (one
// the bot sent).
func (s *Server) Reply(chatID, replyTo int64, text string) Update {
	quoted := map[string]any{"message_id": replyTo, "date": time.Now().Add(-time.Minute).Unix(), "chat": chatObject(chatID),
		"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Acme", "username": BotUsername}, "text": "…"}
	return s.MessageWith(chatID, map[string]any{"text": text, "reply_to_message": quoted})
}

// Photo is a photo from the contact in chatID, in three sizes, with caption.
func (s *Server) Photo(chatID int64, caption string) Update {
	s.mu.Lock()
	n := s.lastID[chatID] + 1
	s.mu.Unlock()
	var sizes []map[string]any
	for _, wh := range [][2]int{{90, 67}, {320, 240}, {1280, 960}} {
		id := fmt.Sprintf("AgACAgQAAxkBAAI%d-%d-%d", chatID, n, wh[0])
		sizes = append(sizes, map[string]any{"file_id": id, "file_unique_id": "u" + id, "width": wh[0], "height": wh[1], "file_size": wh[0] * wh[1] / 4})
	}
	fields := map[string]any{"photo": sizes}
	if caption != "" {
		fields["caption"] = caption
	}
	return s.MessageWith(chatID, fields)
}

// Poll is a poll the contact in chatID sent: a message Switchboard cannot represent.
func (s *Server) Poll(chatID int64, question string) Update {
	return s.MessageWith(chatID, map[string]any{"poll": map[string]any{"id": "5368471234567890", "question": question,
		"options":           []map[string]any{{"text": "Yes", "voter_count": 0}, {"text": "No", "voter_count": 0}},
		"total_voter_count": 0, "is_closed": false, "is_anonymous": true, "type": "regular", "allows_multiple_answers": false}})
}

// CallbackQuery is the contact in chatID pressing the callback button with data under the bot's
// message messageID.
func (s *Server) CallbackQuery(chatID, messageID int64, data string) Update {
	s.mu.Lock()
	s.updateID++ // also numbers callback queries, which need ids of their own
	id := strconv.FormatInt(4382000000000000000+s.updateID, 10)
	s.mu.Unlock()
	return Update{"callback_query": map[string]any{"id": id, "from": contactUser(chatID), "chat_instance": "-8123456789012345678", "data": data,
		"message": map[string]any{"message_id": messageID, "date": time.Now().Add(-time.Minute).Unix(), "chat": chatObject(chatID),
			"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Acme", "username": BotUsername}, "text": "…"}}}
}

// Reaction is the contact in chatID setting emoji as their reaction to message messageID ("" takes
// the reaction back).
func (s *Server) Reaction(chatID, messageID int64, emoji string) Update {
	reactions := []map[string]any{}
	if emoji != "" {
		reactions = append(reactions, map[string]any{"type": "emoji", "emoji": emoji})
	}
	return Update{"message_reaction": map[string]any{"chat": chatObject(chatID), "message_id": messageID, "user": contactUser(chatID),
		"date": time.Now().Unix(), "old_reaction": []map[string]any{}, "new_reaction": reactions}}
}

// Deliver posts update to the webhook set on the server, as Telegram does: JSON, with the
// webhook's secret_token in SecretHeader. update is an Update (numbered when it has no
// update_id), raw JSON ([]byte, json.RawMessage), or anything else JSON encodes. It returns the
// webhook's HTTP status. It posts only to loopback: a webhook elsewhere is an error.
func (s *Server) Deliver(ctx context.Context, update any) (status int, err error) {
	hook := s.Webhook()
	if hook.URL == "" {
		return 0, errors.New("telegramtest: no webhook is set")
	}
	u, err := url.Parse(hook.URL)
	if err != nil {
		return 0, fmt.Errorf("telegramtest: webhook URL: %w", err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0, fmt.Errorf("telegramtest: the webhook %s is not on loopback", u.Host)
	}
	var body []byte
	switch v := update.(type) {
	case []byte:
		body = v
	case json.RawMessage:
		body = v
	case Update:
		if _, ok := v["update_id"]; !ok {
			s.mu.Lock()
			s.updateID++
			n := s.updateID
			s.mu.Unlock()
			numbered := Update{"update_id": 100000000 + n}
			for k, x := range v {
				numbered[k] = x
			}
			v = numbered
		}
		body, err = json.Marshal(v)
	default:
		body, err = json.Marshal(v)
	}
	if err != nil {
		return 0, fmt.Errorf("telegramtest: encode update: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("telegramtest: deliver: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if hook.SecretToken != "" {
		req.Header.Set(SecretHeader, hook.SecretToken)
	}
	resp, err := loopbackClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("telegramtest: deliver: %w", err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// loopbackClient connects only to loopback addresses, whatever a name resolves to, and follows
// no redirects.
var loopbackClient = &http.Client{
	Timeout: 10 * time.Second,
	Transport: &http.Transport{DialContext: (&net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("telegramtest: %s is not a loopback address", address)
		}
		return nil
	}}).DialContext},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}
