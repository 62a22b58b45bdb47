// Package telegramtest runs a local Telegram Bot API server for tests, on loopback, for one known
// bot token. It answers the methods Switchboard calls as the Bot API documents them
// (https://core.telegram.org/bots/api): getMe; sendMessage, sendPhoto, sendVideo, sendAudio,
// sendDocument, sendSticker, sendLocation, sendVenue, sendContact (answering the Message sent,
// numbered per chat from 1); setMessageReaction; answerCallbackQuery; setWebhook, deleteWebhook,
// getWebhookInfo. Refusals are {ok:false, error_code, description} with the HTTP status of
// error_code. It records what it was asked (Sent, Calls), refuses some chats as Telegram would
// (UnknownChat, BlockedChat, DeactivatedChat), fails on demand (Storm), and delivers updates to
// the webhook set on it (Deliver), which the update builders (updates.go) make.
//
// Where it departs from Telegram: it accepts an http:// webhook URL (Telegram wants https on
// ports 443, 80, 88 or 8443), fetches no media URL (BadMediaURL stands for one Telegram cannot
// fetch), and the descriptions of its parameter checks are close to Telegram's, not always equal.
package telegramtest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Token is the token the server knows; any other is Unauthorized.
const Token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// Bot id and username the server reports for Token.
const (
	BotID       = 123456789
	BotUsername = "acme_bot"
)

// Chats the server refuses to write to, as Telegram does.
const (
	// UnknownChat is a chat the bot never saw: 400 "Bad Request: chat not found".
	UnknownChat int64 = 404404
	// BlockedChat is a user who blocked the bot: 403 "Forbidden: bot was blocked by the user".
	BlockedChat int64 = 403403
	// DeactivatedChat is a deleted account: 403 "Forbidden: user is deactivated".
	DeactivatedChat int64 = 403410
)

// BadMediaURL is a media URL Telegram cannot fetch: 400 "Bad Request: wrong file identifier/HTTP
// URL specified".
const BadMediaURL = "https://media.invalid/missing.jpg"

// StormRetryAfter is the parameters.retry_after, in seconds, of a 429 Storm.
const StormRetryAfter = 7

// Server is the Bot API. Its URL is the Bot API address.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	calls    []Call
	lastID   map[int64]int64 // the last message id of each chat
	storm    int
	stormSt  int
	webhook  Webhook
	updateID int64
}

// Call is one request the server answered.
type Call struct {
	// Method is the method as the request wrote it (Bot API methods are case-insensitive).
	Method string
	// Status is the HTTP status answered: 200, or the refusal's error_code.
	Status int
	// ChatID is the chat_id parameter, when numeric.
	ChatID int64
	// MessageID is the id of the message the call sent, or of the one it named (a reaction).
	MessageID int64
	// Text is the text of a sendMessage, or the caption of a media message.
	Text string
	// ReplyMarkup is the reply_markup parameter.
	ReplyMarkup *ReplyMarkup
	// Params are every parameter, as JSON (a form's values become JSON strings, or the JSON
	// they hold when they are objects or arrays).
	Params map[string]json.RawMessage
}

// Param is parameter name: a string's value, or any other JSON as written; "" when absent.
func (c Call) Param(name string) string {
	raw, ok := c.Params[name]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// ReplyMarkup is an InlineKeyboardMarkup or a ReplyKeyboardMarkup.
type ReplyMarkup struct {
	InlineKeyboard  [][]InlineButton   `json:"inline_keyboard,omitempty"`
	Keyboard        [][]KeyboardButton `json:"keyboard,omitempty"`
	OneTimeKeyboard bool               `json:"one_time_keyboard,omitempty"`
	ResizeKeyboard  bool               `json:"resize_keyboard,omitempty"`
}

// InlineButton is an InlineKeyboardButton: a callback button or a URL button.
type InlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
	URL          string `json:"url,omitempty"`
}

// KeyboardButton is a reply keyboard's button.
type KeyboardButton struct {
	Text            string `json:"text"`
	RequestContact  bool   `json:"request_contact,omitempty"`
	RequestLocation bool   `json:"request_location,omitempty"`
}

// Webhook is what setWebhook set.
type Webhook struct {
	URL                string
	SecretToken        string
	AllowedUpdates     []string
	DropPendingUpdates bool
}

// NewServer starts the server on loopback; it stops when t ends.
func NewServer(t testing.TB) *Server {
	s := &Server{lastID: map[int64]int64{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Sent are the calls the server accepted, in order, but for getMe and getWebhookInfo.
func (s *Server) Sent() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if m := strings.ToLower(c.Method); c.Status == http.StatusOK && m != "getme" && m != "getwebhookinfo" {
			out = append(out, c)
		}
	}
	return out
}

// Calls are every call the server answered, refused ones among them, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Storm makes the next n calls with the known token fail with status: 429 with
// parameters.retry_after StormRetryAfter, or any other status (500, 502) as Telegram's own
// trouble.
func (s *Server) Storm(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storm, s.stormSt = n, status
}

// Webhook is the webhook set, zero when none is.
func (s *Server) Webhook() Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.webhook
	w.AllowedUpdates = append([]string(nil), w.AllowedUpdates...)
	return w
}

// refusal is a Bot API error answer.
type refusal struct {
	code        int
	description string
	retryAfter  int
}

func refuse(code int, description string) *refusal {
	return &refusal{code: code, description: description}
}

func badRequest(description string) *refusal {
	return refuse(http.StatusBadRequest, "Bad Request: "+description)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	token, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
	call := Call{Method: method}
	var result any
	var fail *refusal
	switch {
	case !strings.HasPrefix(r.URL.Path, "/bot") || !ok:
		fail = refuse(http.StatusNotFound, "Not Found")
	case token != Token:
		fail = refuse(http.StatusUnauthorized, "Unauthorized")
	default:
		params, err := readParams(r)
		call.Params = params
		if err != nil {
			fail = badRequest(err.Error())
			break
		}
		s.mu.Lock()
		if s.storm > 0 {
			s.storm--
			fail = refuse(s.stormSt, http.StatusText(s.stormSt))
			if s.stormSt == http.StatusTooManyRequests {
				fail = &refusal{code: http.StatusTooManyRequests, description: fmt.Sprintf("Too Many Requests: retry after %d", StormRetryAfter), retryAfter: StormRetryAfter}
			}
		} else {
			result, fail = s.answer(&call)
		}
		s.mu.Unlock()
	}

	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"ok": true, "result": result}
	call.Status = http.StatusOK
	if fail != nil {
		call.Status = fail.code
		body = map[string]any{"ok": false, "error_code": fail.code, "description": fail.description}
		if fail.retryAfter > 0 {
			body["parameters"] = map[string]any{"retry_after": fail.retryAfter}
		}
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	w.WriteHeader(call.Status)
	_ = json.NewEncoder(w).Encode(body)
}

// readParams reads a request's parameters the ways the Bot API takes them: the query string,
// application/json, x-www-form-urlencoded, multipart/form-data.
func readParams(r *http.Request) (map[string]json.RawMessage, error) {
	params := map[string]json.RawMessage{}
	formValue := func(k, v string) {
		t := strings.TrimSpace(v)
		if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
			params[k] = json.RawMessage(t)
			return
		}
		params[k], _ = json.Marshal(v)
	}
	for k, vs := range r.URL.Query() {
		formValue(k, vs[0])
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return params, err
		}
		if len(strings.TrimSpace(string(raw))) == 0 {
			return params, nil
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(raw, &body); err != nil {
			return params, fmt.Errorf("can't parse JSON object")
		}
		for k, v := range body {
			params[k] = v
		}
	case "application/x-www-form-urlencoded", "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil && err != http.ErrNotMultipart {
			return params, fmt.Errorf("can't parse form")
		}
		for k, vs := range r.PostForm {
			formValue(k, vs[0])
		}
	}
	return params, nil
}

// answer runs call's method; s.mu is held.
func (s *Server) answer(c *Call) (any, *refusal) {
	p := c.Params
	str := func(name string) string {
		var v string
		if err := json.Unmarshal(p[name], &v); err != nil {
			return strings.Trim(string(p[name]), `"`)
		}
		return v
	}
	num := func(name string) (float64, bool) {
		var v float64
		if json.Unmarshal(p[name], &v) == nil {
			return v, true
		}
		v, err := strconv.ParseFloat(str(name), 64)
		return v, err == nil
	}
	if id, err := strconv.ParseInt(str("chat_id"), 10, 64); err == nil {
		c.ChatID = id
	}
	method := strings.ToLower(c.Method)
	if !methods[method] {
		return nil, refuse(http.StatusNotFound, "Not Found")
	}
	if fail := s.checkChat(method, c.ChatID, str("chat_id")); fail != nil {
		return nil, fail
	}
	if raw, ok := p["reply_markup"]; ok && method != "setmessagereaction" {
		markup, fail := replyMarkup(raw)
		if fail != nil {
			return nil, fail
		}
		c.ReplyMarkup = markup
	}

	switch method {
	case "getme":
		return map[string]any{"id": BotID, "is_bot": true, "first_name": "Acme", "username": BotUsername}, nil

	case "sendmessage":
		c.Text = str("text")
		switch n := utf8.RuneCountInString(strings.TrimSpace(c.Text)); {
		case n == 0:
			return nil, badRequest("message text is empty")
		case n > 4096:
			return nil, badRequest("message is too long")
		}
		return s.message(c, map[string]any{"text": c.Text}), nil

	case "sendphoto", "sendvideo", "sendaudio", "senddocument", "sendsticker":
		field := strings.TrimPrefix(method, "send")
		media := str(field)
		switch {
		case media == "":
			return nil, badRequest("there is no " + field + " in the request")
		case media == BadMediaURL:
			return nil, badRequest("wrong file identifier/HTTP URL specified")
		}
		c.Text = str("caption")
		if utf8.RuneCountInString(c.Text) > 1024 {
			return nil, badRequest("message caption is too long")
		}
		fileID := fmt.Sprintf("%s-%d-%d", field, c.ChatID, s.lastID[c.ChatID]+1)
		fields := map[string]any{}
		if field == "photo" {
			fields["photo"] = []map[string]any{
				{"file_id": fileID + "-s", "file_unique_id": fileID + "-s", "width": 90, "height": 60},
				{"file_id": fileID, "file_unique_id": fileID, "width": 1280, "height": 853}}
		} else {
			fields[field] = map[string]any{"file_id": fileID, "file_unique_id": fileID}
		}
		if c.Text != "" {
			fields["caption"] = c.Text
		}
		return s.message(c, fields), nil

	case "sendlocation", "sendvenue":
		lat, okLat := num("latitude")
		lng, okLng := num("longitude")
		if !okLat || !okLng || lat < -90 || lat > 90 || lng < -180 || lng > 180 {
			return nil, badRequest("wrong latitude or longitude specified")
		}
		loc := map[string]any{"latitude": lat, "longitude": lng}
		if method == "sendlocation" {
			return s.message(c, map[string]any{"location": loc}), nil
		}
		if str("title") == "" || str("address") == "" {
			return nil, badRequest("venue title and address must be non-empty")
		}
		return s.message(c, map[string]any{"location": loc,
			"venue": map[string]any{"location": loc, "title": str("title"), "address": str("address")}}), nil

	case "sendcontact":
		if str("phone_number") == "" {
			return nil, badRequest("phone number must be non-empty")
		}
		if str("first_name") == "" {
			return nil, badRequest("first name must be non-empty")
		}
		contact := map[string]any{"phone_number": str("phone_number"), "first_name": str("first_name")}
		if v := str("vcard"); v != "" {
			if len(v) > 2048 {
				return nil, badRequest("vcard is too long")
			}
			contact["vcard"] = v
		}
		return s.message(c, map[string]any{"contact": contact}), nil

	case "setmessagereaction":
		id, _ := num("message_id")
		c.MessageID = int64(id)
		if c.MessageID <= 0 || c.MessageID > s.lastID[c.ChatID] {
			return nil, badRequest("message to react not found")
		}
		var reactions []struct {
			Type  string `json:"type"`
			Emoji string `json:"emoji"`
		}
		if raw, ok := p["reaction"]; ok && json.Unmarshal(raw, &reactions) != nil {
			return nil, badRequest("can't parse reaction types JSON object")
		}
		if len(reactions) > 1 {
			return nil, badRequest("REACTIONS_TOO_MANY")
		}
		for _, r := range reactions {
			if r.Type != "emoji" || !reactionEmoji[r.Emoji] {
				return nil, badRequest("REACTION_INVALID")
			}
		}
		return true, nil

	case "answercallbackquery":
		if str("callback_query_id") == "" {
			return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
		}
		return true, nil

	case "setwebhook":
		u, secret := str("url"), str("secret_token")
		if u == "" {
			s.webhook = Webhook{}
			return true, nil
		}
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			return nil, badRequest("bad webhook: An HTTPS URL must be provided for webhook")
		}
		if _, ok := p["secret_token"]; ok && !secretShape.MatchString(secret) {
			return nil, badRequest("secret token contains unallowed characters")
		}
		w := Webhook{URL: u, SecretToken: secret}
		if raw, ok := p["allowed_updates"]; ok && json.Unmarshal(raw, &w.AllowedUpdates) != nil {
			return nil, badRequest("can't parse allowed updates")
		}
		w.DropPendingUpdates = str("drop_pending_updates") == "true"
		s.webhook = w
		return true, nil

	case "deletewebhook":
		s.webhook = Webhook{}
		return true, nil

	case "getwebhookinfo":
		info := map[string]any{"url": s.webhook.URL, "has_custom_certificate": false, "pending_update_count": 0}
		if s.webhook.AllowedUpdates != nil {
			info["allowed_updates"] = s.webhook.AllowedUpdates
		}
		return info, nil
	}
	return nil, refuse(http.StatusNotFound, "Not Found") // methods and this switch differ
}

// methods are the methods the server answers, in lower case.
var methods = map[string]bool{"getme": true, "sendmessage": true, "sendphoto": true, "sendvideo": true, "sendaudio": true,
	"senddocument": true, "sendsticker": true, "sendlocation": true, "sendvenue": true, "sendcontact": true,
	"setmessagereaction": true, "answercallbackquery": true, "setwebhook": true, "deletewebhook": true, "getwebhookinfo": true}

// secretShape is what setWebhook allows as secret_token.
var secretShape = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// checkChat refuses a method that writes to chat when Telegram would; s.mu is held.
func (s *Server) checkChat(method string, chat int64, raw string) *refusal {
	switch method {
	case "getme", "answercallbackquery", "setwebhook", "deletewebhook", "getwebhookinfo":
		return nil
	}
	switch {
	case raw == "":
		return badRequest("chat_id is empty")
	case chat == 0 || chat == UnknownChat:
		return badRequest("chat not found")
	case chat == BlockedChat:
		return refuse(http.StatusForbidden, "Forbidden: bot was blocked by the user")
	case chat == DeactivatedChat:
		return refuse(http.StatusForbidden, "Forbidden: user is deactivated")
	}
	return nil
}

// replyMarkup reads and checks a reply_markup as Telegram does.
func replyMarkup(raw json.RawMessage) (*ReplyMarkup, *refusal) {
	var m ReplyMarkup
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			switch {
			case b.Text == "":
				return nil, badRequest("text buttons are unallowed in the inline keyboard")
			case (b.CallbackData == "") == (b.URL == ""):
				return nil, badRequest("can't parse inline keyboard button: exactly one of the optional fields must be used")
			case b.CallbackData != "" && len(b.CallbackData) > 64:
				return nil, badRequest("BUTTON_DATA_INVALID")
			case b.URL != "" && !strings.HasPrefix(b.URL, "https://") && !strings.HasPrefix(b.URL, "http://") && !strings.HasPrefix(b.URL, "tg://"):
				return nil, badRequest(fmt.Sprintf("inline keyboard button URL '%s' is invalid: Unsupported URL protocol", b.URL))
			}
		}
	}
	for _, row := range m.Keyboard {
		for _, b := range row {
			if b.Text == "" {
				return nil, badRequest("keyboard button text must be non-empty")
			}
		}
	}
	return &m, nil
}

// message numbers a message the bot sent in c's chat and answers it as a Message; s.mu is held.
func (s *Server) message(c *Call, fields map[string]any) map[string]any {
	s.lastID[c.ChatID]++
	c.MessageID = s.lastID[c.ChatID]
	m := map[string]any{"message_id": c.MessageID, "date": time.Now().Unix(), "chat": chatObject(c.ChatID),
		"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Acme", "username": BotUsername}}
	for k, v := range fields {
		m[k] = v
	}
	if c.ReplyMarkup != nil && c.ReplyMarkup.InlineKeyboard != nil {
		m["reply_markup"] = map[string]any{"inline_keyboard": c.ReplyMarkup.InlineKeyboard}
	}
	return m
}

// chatObject is a Chat: a private chat with a contact (a group when the id is negative).
func chatObject(id int64) map[string]any {
	if id < 0 {
		return map[string]any{"id": id, "type": "supergroup", "title": "Acme customers"}
	}
	return map[string]any{"id": id, "type": "private", "first_name": FirstName, "last_name": LastName, "username": Username}
}

// reactionEmoji are the emoji a bot may react with (ReactionTypeEmoji).
var reactionEmoji = map[string]bool{}

func init() {
	for _, e := range strings.Fields("👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤‍🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨‍💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷‍♂ 🤷 🤷‍♀ 😡") {
		reactionEmoji[e] = true
	}
}
