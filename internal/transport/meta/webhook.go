package meta

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// WebhookSignatureHeader is the header Meta signs a webhook's body in: "sha256=" and the hex
// HMAC-SHA256 of the raw body under the app secret.
const WebhookSignatureHeader = "X-Hub-Signature-256"

// WebhookMaxBody is the largest webhook body a caller reads (4 MiB). Meta batches up to a
// thousand changes in one post; even then a body stays far below this.
const WebhookMaxBody = 4 << 20

// Why a webhook is refused. A caller answers ErrWebhookUnsigned with 401 and
// ErrWebhookSignature with 403, as for the other providers (docs/transports.md).
var (
	ErrWebhookUnsigned  = errors.New("meta: webhook without an " + WebhookSignatureHeader + " header")
	ErrWebhookSignature = errors.New("meta: webhook signature does not match")
)

// Why a subscription handshake is refused (the caller answers 403).
var (
	ErrWebhookHandshakeMode      = errors.New("meta: webhook handshake: hub.mode is not subscribe")
	ErrWebhookHandshakeToken     = errors.New("meta: webhook handshake: hub.verify_token does not match")
	ErrWebhookHandshakeChallenge = errors.New("meta: webhook handshake: no usable hub.challenge")
)

const hookSignaturePrefix = "sha256="

// VerifySignature checks header, the WebhookSignatureHeader of a webhook post, against body as
// it arrived (before any decoding) and the app's secret, in time that does not depend on where
// they differ. A missing header is ErrWebhookUnsigned; anything else that is not the body's
// signature (another algorithm, no hex, another secret, an empty secret) is ErrWebhookSignature.
func VerifySignature(appSecret []byte, body []byte, header string) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrWebhookUnsigned
	}
	if len(appSecret) == 0 {
		return ErrWebhookSignature
	}
	// The prefix is compared without regard to case ("SHA256=" is seen in the wild); the hex
	// decodes in either case.
	if len(header) < len(hookSignaturePrefix) || !strings.EqualFold(header[:len(hookSignaturePrefix)], hookSignaturePrefix) {
		return ErrWebhookSignature
	}
	got, err := hex.DecodeString(header[len(hookSignaturePrefix):])
	if err != nil || len(got) != sha256.Size {
		return ErrWebhookSignature
	}
	mac := hmac.New(sha256.New, appSecret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return ErrWebhookSignature
	}
	return nil
}

// hookMaxChallenge bounds the challenge echoed back: Meta sends a number of a few digits.
const hookMaxChallenge = 256

// VerifyHandshake answers the GET Meta sends when a webhook is subscribed
// (hub.mode=subscribe&hub.verify_token=…&hub.challenge=…): the challenge to write back as the
// body of a 200 when the mode is subscribe and the token is verifyToken (compared in constant
// time; an empty verifyToken matches nothing). The challenge is refused when it is empty,
// longer than 256 bytes or holds anything but letters, digits, '-', '_' and '.': Meta sends a
// number, and nothing else is echoed back.
func VerifyHandshake(query url.Values, verifyToken string) (challenge string, err error) {
	if query.Get("hub.mode") != "subscribe" {
		return "", ErrWebhookHandshakeMode
	}
	h, w := sha256.Sum256([]byte(query.Get("hub.verify_token"))), sha256.Sum256([]byte(verifyToken))
	if verifyToken == "" || subtle.ConstantTimeCompare(h[:], w[:]) != 1 {
		return "", ErrWebhookHandshakeToken
	}
	challenge = query.Get("hub.challenge")
	if challenge == "" || len(challenge) > hookMaxChallenge {
		return "", ErrWebhookHandshakeChallenge
	}
	for i := 0; i < len(challenge); i++ {
		if c := challenge[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			return "", ErrWebhookHandshakeChallenge
		}
	}
	return challenge, nil
}

// ---- WhatsApp coexistence: the WhatsApp Business app's contacts, history and echoes ----
//
// A number onboarded from the WhatsApp Business app ("coexistence") stays in use in the app.
// Its WABA's subscription then carries three more fields, as Meta's webhook references
// describe them (developers.facebook.com/docs/whatsapp/cloud-api/webhooks/reference/
// smb_app_state_sync, /history and /smb_message_echoes):
//
//	smb_app_state_sync  value.state_sync[]: {type: "contact", contact: {full_name, first_name,
//	                    phone_number}, action: "add"|"remove", metadata: {timestamp}}: the app's
//	                    address book once StartSync(SyncContacts), then each change made in it.
//	history             value.history[]: {metadata: {phase, chunk_order, progress}, threads:
//	                    [{id: <the contact's wa_id>, messages: [<a message object as in the
//	                    messages field, "to" on the business's own messages, history_context:
//	                    {status}>]}]}, in chunks, after StartSync(SyncHistory); or
//	                    value.history[]: {errors: [{code: 2593109, title, message, error_data:
//	                    {details}}]} when the business declined to share its history.
//	smb_message_echoes  value.message_echoes[]: {from: <the business's number>, to: <the
//	                    contact>, id, timestamp, type, <type>: {…}}: what the business sent from
//	                    the app (or a linked device) from then on.
//
// The shape of the declined history (history[].errors, code 2593109) and of the media
// follow-ups (a history change with value.messages or value.message_echoes, naming the media of
// messages a chunk carried as media_placeholder) is not in the part of Meta's references found
// here: it is taken from integrations that handle them, and read leniently.

// HistoryDeclinedCode is the error code of a history webhook whose business declined (or turned
// off) sharing its WhatsApp Business app chat history.
const HistoryDeclinedCode = 2593109

// Coexistence is what the coexistence fields of a webhook post carry, each list in the order
// Meta wrote it.
type Coexistence struct {
	// ContactSyncs are contacts of the WhatsApp Business app's address book (field
	// smb_app_state_sync).
	ContactSyncs []ContactSync
	// HistorySyncs are chunks of the app's chat history (field history).
	HistorySyncs []HistorySync
	// Echoes are messages the business sent from the app (field smb_message_echoes): From is the
	// business's number, To the contact (UserID the contact's BSUID when Meta gives one).
	Echoes []HookMessage
}

// ContactSync is one smb_app_state_sync change: contacts of the app's address book.
type ContactSync struct {
	PhoneNumberID, WABAID string
	Contacts              []SyncedContact
}

// SyncedContact is a contact added, edited or removed in the app's address book.
type SyncedContact struct {
	// FullName and FirstName are as the address book has them; Meta leaves them out of a
	// removal.
	FullName, FirstName string
	// PhoneNumber is the contact's WhatsApp number in E.164 (Meta writes digits); UserID the
	// contact's business-scoped user id when Meta gives one.
	PhoneNumber, UserID string
	// Action is add (added or edited) or remove.
	Action    string
	Timestamp time.Time
}

// HistorySync is one element of a history change: a chunk of the app's chat history, its
// refusal, or media named by an earlier chunk.
type HistorySync struct {
	PhoneNumberID, WABAID string
	// Phase is the period the chunk covers, counted back from the onboarding: 0 (day 0 to 1),
	// 1 (day 1 to 90), 2 (day 90 to 180). ChunkOrder orders the chunks, which may arrive out
	// of order; Progress is the whole sync's, 100 once complete.
	Phase, ChunkOrder, Progress int
	// Declined: the business declined to share its history (HistoryDeclinedCode); no chunk
	// follows. ErrorCode and ErrorMessage are Meta's error, whatever its code.
	Declined     bool
	ErrorCode    int
	ErrorMessage string
	Threads      []HistoryThread
	// Media are the media of messages a chunk gave as media_placeholder (Unsupported
	// "media_placeholder"): the same ProviderMessageID, now with its media id. Meta sends them
	// apart, for media of the last 14 days only.
	Media []HookMessage
}

// HistoryThread is the history of one chat: the contact's wa_id as Meta writes it and the
// messages of both sides. A message of the contact has From the contact and To the business's
// number; one the business sent, From the business's number and To the contact.
type HistoryThread struct {
	WaID     string
	Messages []HookMessage
	// Statuses are the messages' history_context.status (DELIVERED, READ, PLAYED, ERROR, …) by
	// ProviderMessageID; nil when Meta gives none.
	Statuses map[string]string
}

// ParseCoexistence reads the coexistence changes (smb_app_state_sync, history,
// smb_message_echoes) of a WhatsApp business account's webhook post, after VerifySignature:
// ParseWebhook reads the rest of the post and leaves these out. Another object, or a post
// without these fields, gives an empty Coexistence.
//
// An entry that cannot be read (a member of the wrong type, a message without an id or sender, a
// contact without a number) fails the whole post with an error naming the entry's index.
func ParseCoexistence(body []byte) (*Coexistence, error) {
	var env struct {
		Object string            `json:"object"`
		Entry  []json.RawMessage `json:"entry"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("meta: read webhook: %w", err)
	}
	c := &Coexistence{}
	if env.Object != "whatsapp_business_account" {
		return c, nil
	}
	for i, raw := range env.Entry {
		var entry hookWAEntry
		if err := json.Unmarshal(raw, &entry); err != nil {
			return nil, fmt.Errorf("meta: read webhook: entry %d: %w", i, err)
		}
		for j, ch := range entry.Changes {
			if !IsCoexistenceField(ch.Field) || len(ch.Value) == 0 || string(ch.Value) == "null" {
				continue
			}
			if err := c.hookCoexistence(string(entry.ID), ch.Field, entry.Time.seconds(), ch.Value); err != nil {
				return nil, fmt.Errorf("meta: read webhook: entry %d: change %d (%s): %w", i, j, ch.Field, err)
			}
		}
	}
	return c, nil
}

// IsCoexistenceField says whether a WhatsApp webhook field is one ParseCoexistence reads.
func IsCoexistenceField(field string) bool {
	return field == "smb_app_state_sync" || field == "history" || field == "smb_message_echoes"
}

// hookCoexValue is the value of the three coexistence fields.
type hookCoexValue struct {
	Metadata struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      hookID `json:"phone_number_id"`
	} `json:"metadata"`
	StateSync []struct {
		Type    string `json:"type"`
		Contact struct {
			FullName    string `json:"full_name"`
			FirstName   string `json:"first_name"`
			PhoneNumber string `json:"phone_number"`
			UserID      string `json:"user_id"`
		} `json:"contact"`
		Action   string `json:"action"`
		Metadata struct {
			Timestamp hookUnix `json:"timestamp"`
		} `json:"metadata"`
	} `json:"state_sync"`
	History []struct {
		Metadata struct {
			Phase      int `json:"phase"`
			ChunkOrder int `json:"chunk_order"`
			Progress   int `json:"progress"`
		} `json:"metadata"`
		Threads []struct {
			ID       string            `json:"id"`
			Messages []hookCoexMessage `json:"messages"`
		} `json:"threads"`
		Errors []hookCoexError `json:"errors"`
	} `json:"history"`
	MessageEchoes []hookCoexMessage `json:"message_echoes"`
	Errors        []hookCoexError   `json:"errors"`
}

// hookCoexValueMessages is a history change's media follow-up: the contact's media messages
// (messages) and the business's (message_echoes). It is read apart so that the messages member
// of the other fields is never read.
type hookCoexValueMessages struct {
	Messages []hookCoexMessage `json:"messages"`
}

// hookCoexMessage is a message object of a history thread or an echo: the messages field's,
// with the recipient of the business's own messages and the history status.
type hookCoexMessage struct {
	hookWAMessage
	To             string `json:"to"`
	ToUserID       string `json:"to_user_id"`
	HistoryContext *struct {
		Status string `json:"status"`
	} `json:"history_context"`
}

type hookCoexError struct {
	Code      int    `json:"code"`
	Title     string `json:"title"`
	Message   string `json:"message"`
	ErrorData struct {
		Details string `json:"details"`
	} `json:"error_data"`
}

func (e hookCoexError) text() string {
	switch {
	case e.ErrorData.Details != "":
		return e.ErrorData.Details
	case e.Message != "":
		return e.Message
	}
	return e.Title
}

func (c *Coexistence) hookCoexistence(waba, field string, at time.Time, raw json.RawMessage) error {
	var v hookCoexValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	account := string(v.Metadata.PhoneNumberID)
	business := hookDisplayNumber(v.Metadata.DisplayPhoneNumber)
	switch field {
	case "smb_app_state_sync":
		sync := ContactSync{PhoneNumberID: account, WABAID: waba}
		for k, s := range v.StateSync {
			if s.Type != "" && s.Type != "contact" {
				continue // a kind of app state Meta adds
			}
			ct := SyncedContact{FullName: s.Contact.FullName, FirstName: s.Contact.FirstName,
				PhoneNumber: hookPhone(s.Contact.PhoneNumber), UserID: s.Contact.UserID, Action: s.Action,
				Timestamp: s.Metadata.Timestamp.seconds()}
			if ct.PhoneNumber == "" && ct.UserID == "" {
				return fmt.Errorf("state_sync %d: a contact without a phone number or user id", k)
			}
			if ct.Timestamp.IsZero() {
				ct.Timestamp = at
			}
			sync.Contacts = append(sync.Contacts, ct)
		}
		if len(sync.Contacts) > 0 {
			c.ContactSyncs = append(c.ContactSyncs, sync)
		}
	case "smb_message_echoes":
		for k, m := range v.MessageEchoes {
			msg, err := hookCoexOutbound(account, business, "", m)
			if err != nil {
				return fmt.Errorf("message_echoes %d: %w", k, err)
			}
			c.Echoes = append(c.Echoes, msg)
		}
	case "history":
		return c.hookHistory(waba, account, business, v, raw)
	}
	return nil
}

func (c *Coexistence) hookHistory(waba, account, business string, v hookCoexValue, raw json.RawMessage) error {
	declined := func(h *HistorySync, errs []hookCoexError) {
		if len(errs) == 0 {
			return
		}
		h.ErrorCode, h.ErrorMessage = errs[0].Code, errs[0].text()
		for _, e := range errs {
			h.Declined = h.Declined || e.Code == HistoryDeclinedCode
		}
	}
	if len(v.History) == 0 && len(v.Errors) > 0 {
		h := HistorySync{PhoneNumberID: account, WABAID: waba}
		declined(&h, v.Errors)
		c.HistorySyncs = append(c.HistorySyncs, h)
	}
	for k, part := range v.History {
		h := HistorySync{PhoneNumberID: account, WABAID: waba, Phase: part.Metadata.Phase,
			ChunkOrder: part.Metadata.ChunkOrder, Progress: part.Metadata.Progress}
		declined(&h, part.Errors)
		for n, th := range part.Threads {
			thread := HistoryThread{WaID: th.ID}
			for x, m := range th.Messages {
				msg, err := hookCoexHistoryMessage(account, business, th.ID, m)
				if err != nil {
					return fmt.Errorf("history %d: thread %d: message %d: %w", k, n, x, err)
				}
				thread.Messages = append(thread.Messages, msg)
				if m.HistoryContext != nil && m.HistoryContext.Status != "" {
					if thread.Statuses == nil {
						thread.Statuses = map[string]string{}
					}
					thread.Statuses[msg.ProviderMessageID] = m.HistoryContext.Status
				}
			}
			h.Threads = append(h.Threads, thread)
		}
		c.HistorySyncs = append(c.HistorySyncs, h)
	}
	// The media follow-up of a chunk's placeholders: the contact's media as messages, the
	// business's as message_echoes.
	var media hookCoexValueMessages
	if err := json.Unmarshal(raw, &media); err != nil {
		return err
	}
	if len(media.Messages) == 0 && len(v.MessageEchoes) == 0 {
		return nil
	}
	h := HistorySync{PhoneNumberID: account, WABAID: waba}
	for k, m := range media.Messages {
		msg, err := hookCoexHistoryMessage(account, business, "", m)
		if err != nil {
			return fmt.Errorf("messages %d: %w", k, err)
		}
		h.Media = append(h.Media, msg)
	}
	for k, m := range v.MessageEchoes {
		msg, err := hookCoexOutbound(account, business, "", m)
		if err != nil {
			return fmt.Errorf("message_echoes %d: %w", k, err)
		}
		h.Media = append(h.Media, msg)
	}
	c.HistorySyncs = append(c.HistorySyncs, h)
	return nil
}

// hookCoexHistoryMessage reads a message of the thread with the contact waID (empty when the
// thread is not known): the business's own when it names a recipient or comes from the
// business's number, else the contact's.
func hookCoexHistoryMessage(account, business, waID string, m hookCoexMessage) (HookMessage, error) {
	fromBusiness := m.To != "" || m.ToUserID != "" ||
		(business != "" && m.From != "" && hookDisplayNumber(m.From) == business)
	if fromBusiness {
		return hookCoexOutbound(account, business, waID, m)
	}
	return hookWhatsAppMessage(account, business, nil, m.hookWAMessage)
}

// hookCoexOutbound reads a message the business sent from the app: From is the business's
// number (the message's from, else the metadata's), To the contact (to, else to_user_id, else
// the thread's contact).
func hookCoexOutbound(account, business, waID string, m hookCoexMessage) (HookMessage, error) {
	to := hookE164(m.To)
	if to == "" {
		to = m.ToUserID
	}
	if to == "" {
		to = hookE164(waID)
	}
	if to == "" {
		return HookMessage{}, errors.New("a message of the business without a recipient (to or to_user_id)")
	}
	w := m.hookWAMessage
	w.FromUserID = ""
	if w.From == "" {
		w.From = strings.TrimPrefix(business, "+")
	}
	msg, err := hookWhatsAppMessage(account, to, nil, w)
	if err != nil {
		return HookMessage{}, err
	}
	msg.UserID = m.ToUserID
	return msg, nil
}

// hookPhone is a contact's number in E.164: Meta writes digits, integrations have seen it
// formatted ("+1 650-555-1234"). What is not shaped like a number is kept as it is.
func hookPhone(number string) string {
	number = strings.TrimSpace(number)
	digits := 0
	for _, c := range number {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '+' || c == ' ' || c == '-' || c == '(' || c == ')':
		default:
			return number
		}
	}
	if digits == 0 {
		return number
	}
	return hookDisplayNumber(number)
}
