package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// conversationJSON is a Conversation (WIRE.md §7) with what Switchboard adds: the contact's
// profile name, the ad referral of the thread's first message, and the ends of the WhatsApp
// window and of a typing indicator.
type conversationJSON struct {
	ID                string          `json:"id"`
	Channels          []string        `json:"channels"`
	ContactIdentifier string          `json:"contactIdentifier"`
	ContactID         *string         `json:"contactId,omitempty"`
	Email             string          `json:"email,omitempty"`
	SenderID          string          `json:"senderId,omitempty"`
	From              string          `json:"from,omitempty"`
	WhatsApp          *whatsAppJSON   `json:"whatsapp,omitempty"`
	MessageCount      int64           `json:"messageCount"`
	UnreadCount       int64           `json:"unreadCount"`
	LastMessage       lastMessageJSON `json:"lastMessage"`
	ProfileName       *string         `json:"profileName"`
	Referral          json.RawMessage `json:"referral,omitempty"`
	WindowExpiresAt   *time.Time      `json:"whatsappWindowExpiresAt"`
	TypingUntil       *time.Time      `json:"typingUntil"`
	CreatedAt         time.Time       `json:"createdAt"`
	UpdatedAt         time.Time       `json:"updatedAt"`
}

type whatsAppJSON struct {
	BSUID string `json:"bsuid,omitempty"`
}

type lastMessageJSON struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Channel   string    `json:"channel"`
	Direction string    `json:"direction"`
	Text      *string   `json:"text"`
}

// conversationView renders c; v2 names the sender by its address (from), v1 by its id.
func (s *Server) conversationView(c db.Conversation, v2 bool) conversationJSON {
	out := conversationJSON{ID: c.ID, Channels: c.Channels, ContactIdentifier: c.ContactIdentifier, ContactID: c.ContactID,
		MessageCount: c.MessageCount, UnreadCount: c.UnreadCount, ProfileName: c.ProfileName, Referral: c.Referral,
		LastMessage: lastMessageJSON{ID: c.LastMessageID, At: c.LastMessageAt.UTC(), Channel: c.LastMessageChannel,
			Direction: c.LastMessageDirection, Text: c.LastMessageText},
		CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
	if v2 {
		out.From = c.Address
	} else {
		out.SenderID = c.Sender
	}
	if strings.Contains(c.ContactIdentifier, "@") {
		out.Email = c.ContactIdentifier
	}
	if addr.IsScopedUserID(c.ContactIdentifier) {
		out.WhatsApp = &whatsAppJSON{BSUID: c.ContactIdentifier}
	}
	now := s.now()
	if c.WhatsappWindowUntil != nil && c.WhatsappWindowUntil.After(now) {
		t := c.WhatsappWindowUntil.UTC()
		out.WindowExpiresAt = &t
	}
	if c.TypingUntil != nil && c.TypingUntil.After(now) {
		t := c.TypingUntil.UTC()
		out.TypingUntil = &t
	}
	return out
}

func (s *Server) getConversation(v2 bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.messages.Conversation(r.Context(), keyFrom(r.Context()), r.PathValue("conversationId"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"conversation": s.conversationView(c, v2)})
	}
}

func (s *Server) readConversation(w http.ResponseWriter, r *http.Request) {
	c, err := s.messages.ReadConversation(r.Context(), keyFrom(r.Context()), r.PathValue("conversationId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversation": s.conversationView(c, false)})
}

// listConversations answers GET /v1/conversations (senderId) and /v2/conversations (from).
func (s *Server) listConversations(v2 bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := keyFrom(r.Context())
		limit, after, err := s.pageRequest(r, key.Project, "conversations")
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		q := r.URL.Query()
		f := message.ConversationFilter{Limit: limit + 1, Channel: queryOpt(q.Get("channel")), Search: queryOpt(q.Get("search"))}
		if v2 {
			f.Address = queryAddress(q, "from")
		} else {
			f.Sender = queryOpt(q.Get("senderId"))
		}
		f.BeforeTime, f.BeforeID = after.seek()
		rows, err := s.messages.Conversations(r.Context(), key, f)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		// The most recently active first.
		at := func(c db.Conversation) (time.Time, string) { return c.LastMessageAt, c.ID }
		writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "conversations", rows, limit, at,
			func(c db.Conversation) conversationJSON { return s.conversationView(c, v2) }))
	}
}

func (s *Server) listConversationMessages(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	id := r.PathValue("conversationId")
	limit, after, err := s.pageRequest(r, key.Project, "conversation-messages:"+id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f := message.ListFilter{Limit: limit + 1}
	f.BeforeTime, f.BeforeID = after.seek()
	rows, err := s.messages.ConversationMessages(r.Context(), key, id, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "conversation-messages:"+id, rows, limit, messageKey, messageView))
}

// typing answers POST /v1/messages/{messageId}/typing (no body).
func (s *Server) typing(w http.ResponseWriter, r *http.Request) {
	if err := s.messages.Typing(r.Context(), keyFrom(r.Context()), r.Header.Get("Service-Sender"), r.PathValue("messageId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}

// react answers POST /v1/messages/{messageId}/reactions with the reaction message.
func (s *Server) react(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Emoji *string `json:"emoji"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.messages.React(r.Context(), keyFrom(r.Context()), r.Header.Get("Service-Sender"), r.PathValue("messageId"), in.Emoji)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": messageView(m)})
}

// injectInbound answers POST /v1/sandbox/inbound: a simulated message from a contact (test keys).
func (s *Server) injectInbound(w http.ResponseWriter, r *http.Request) {
	var in injectBody
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.messages.Inject(r.Context(), keyFrom(r.Context()), r.Header.Get("Service-Sender"), message.Injection(in))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": messageView(m)})
}

// injectBody is the body of POST /v1/sandbox/inbound.
type injectBody struct {
	From        *string            `json:"from"`
	Channel     *string            `json:"channel"`
	MessageType *string            `json:"messageType"`
	Text        *string            `json:"text"`
	Content     *transport.Content `json:"content"`
	// To is the address written to; by default the sender's address on the channel. For
	// catch-all email it is the original recipient.
	To          *string             `json:"to"`
	ProfileName *string             `json:"profileName"`
	Referral    *transport.Referral `json:"referral"`
	// ReplyToMessageID is a message of the conversation the contact quotes.
	ReplyToMessageID *string `json:"replyToMessageId"`
}

func queryOpt(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
