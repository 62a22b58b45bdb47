package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

func init() {
	register([]string{"conversations", "conversation"}, []viewRoute{
		{pattern: "GET " + Path + "conversations", handler: func(h *Handler) handlerFunc { return h.conversations }},
		{pattern: "GET " + Path + "conversations/{id}", handler: func(h *Handler) handlerFunc { return h.conversation }},
	}, conversationTexts)
}

var conversationTexts = map[string]map[string]string{
	"en": {
		"nav.conversations":      "Conversations",
		"conversations.none":     "No conversation matches.",
		"conversations.contact":  "Contact",
		"conversations.last":     "Last message",
		"conversations.channels": "Channels",
		"conversations.messages": "Messages",
		"conversations.unread":   "%d unread",
		"conversations.fromThem": "They wrote",
		"conversations.fromUs":   "We wrote",
		"conversation.all":       "All conversations",
		"conversation.facts":     "The conversation",
		"conversation.started":   "Started",
		"conversation.window":    "WhatsApp window open until",
		"conversation.thread":    "Messages",
		"conversation.order":     "Oldest first; open a message for its details and webhook deliveries.",
		"conversation.none":      "No message of this conversation is kept any more.",
		"conversation.older":     "Older messages",
		"conversation.newest":    "Newest messages",
		"conversation.noText":    "(%s, no text)",
		"conversation.inbound":   "From the contact",
		"conversation.outbound":  "To the contact",
	},
	"es": {
		"nav.conversations":      "Conversaciones",
		"conversations.none":     "Ninguna conversación coincide.",
		"conversations.contact":  "Contacto",
		"conversations.last":     "Último mensaje",
		"conversations.channels": "Canales",
		"conversations.messages": "Mensajes",
		"conversations.unread":   "%d sin leer",
		"conversations.fromThem": "Escribió el contacto",
		"conversations.fromUs":   "Escribimos",
		"conversation.all":       "Todas las conversaciones",
		"conversation.facts":     "La conversación",
		"conversation.started":   "Iniciada",
		"conversation.window":    "Ventana de WhatsApp abierta hasta",
		"conversation.thread":    "Mensajes",
		"conversation.order":     "Primero los más antiguos; abre un mensaje para ver sus detalles y sus entregas de webhooks.",
		"conversation.none":      "Ya no se conserva ningún mensaje de esta conversación.",
		"conversation.older":     "Mensajes anteriores",
		"conversation.newest":    "Mensajes más recientes",
		"conversation.noText":    "(%s, sin texto)",
		"conversation.inbound":   "Del contacto",
		"conversation.outbound":  "Al contacto",
	},
}

type conversationsData struct {
	Channel, Sender string
	Channels        []string
	Rows            []conversationRow
	Next            string
}

type conversationRow struct {
	Link, Name, Identifier, Sender, Address string
	Channels                                []string
	Messages, Unread                        int64
	LastAt                                  time.Time
	LastInbound                             bool
	LastText                                string
}

// conversations lists the project's conversations, the most recently active first, by channel
// and sender: one read of the conversations table for a page.
func (h *Handler) conversations(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesRead) {
		h.forbidden(w, r, v, apikey.PermissionMessagesRead)
		return
	}
	q := r.URL.Query()
	d := conversationsData{Channel: q.Get("channel"), Sender: q.Get("sender"), Channels: channels}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	f := message.ConversationFilter{Channel: opt(d.Channel), Sender: opt(d.Sender), Limit: pageSize + 1}
	if before, id := q.Get("before"), q.Get("beforeId"); before != "" && id != "" {
		if at, err := time.Parse(time.RFC3339Nano, before); err == nil {
			f.BeforeTime, f.BeforeID = &at, &id
		}
	}
	rows, err := h.o.Messages.Conversations(r.Context(), v.key(), f)
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	for i, c := range rows {
		if i == pageSize {
			last := rows[i-1]
			d.Next = v.link("conversations", url.Values{"channel": {d.Channel}, "sender": {d.Sender},
				"before": {last.LastMessageAt.UTC().Format(time.RFC3339Nano)}, "beforeId": {last.ID}})
			break
		}
		d.Rows = append(d.Rows, conversationRow{Link: v.link("conversations/"+c.ID, nil), Name: contactName(c),
			Identifier: c.ContactIdentifier, Sender: c.Sender, Address: c.Address, Channels: c.Channels, Messages: c.MessageCount,
			Unread: c.UnreadCount, LastAt: c.LastMessageAt, LastInbound: c.LastMessageDirection == "inbound",
			LastText: snippet(c.LastMessageText, 80)})
	}
	h.render(w, r, v, http.StatusOK, "conversations", t(v.lang, "nav.conversations"), d)
}

type conversationData struct {
	C db.Conversation
	// Window is the end of the WhatsApp window while it is open.
	Window *time.Time
	Rows   []threadRow
	// Older continues with the messages before this page; Newest goes back to the latest.
	Older, Newest, All string
}

// threadText is how much of a message's text the thread shows.
const threadText = 600

type threadRow struct {
	ID, Link, Direction, Channel, Status, Text, Type string
	At                                               time.Time
	HasText                                          bool
}

// conversation is one thread: the conversation and a page of its messages, oldest first, each
// linking to its own page. (ConversationMessages reads the conversation again to scope the
// messages' partitions: two small reads by primary key, then one of the messages.)
func (h *Handler) conversation(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesRead) {
		h.forbidden(w, r, v, apikey.PermissionMessagesRead)
		return
	}
	id := r.PathValue("id")
	c, err := h.o.Messages.Conversation(r.Context(), v.key(), id)
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	f := message.ListFilter{Limit: pageSize + 1}
	q := r.URL.Query()
	if before, bid := q.Get("before"), q.Get("beforeId"); before != "" && bid != "" {
		if at, err := time.Parse(time.RFC3339Nano, before); err == nil {
			f.BeforeTime, f.BeforeID = &at, &bid
		}
	}
	msgs, err := h.o.Messages.ConversationMessages(r.Context(), v.key(), id, f)
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	d := conversationData{C: c, All: v.link("conversations", nil)}
	if c.WhatsappWindowUntil != nil && c.WhatsappWindowUntil.After(time.Now()) {
		d.Window = c.WhatsappWindowUntil
	}
	if len(msgs) > pageSize { // newest first: the extra one says there are older messages
		msgs = msgs[:pageSize]
		last := msgs[pageSize-1]
		d.Older = v.link("conversations/"+id, url.Values{"before": {last.CreatedAt.UTC().Format(time.RFC3339Nano)}, "beforeId": {last.ID}})
	}
	if f.BeforeTime != nil {
		d.Newest = v.link("conversations/"+id, nil)
	}
	for _, m := range slices.Backward(msgs) { // oldest first, as a thread reads
		row := threadRow{ID: m.ID, Link: v.link("messages/"+m.ID, nil), Direction: m.Direction, Channel: m.Channel, Status: m.Status,
			Type: m.MessageType, At: m.CreatedAt}
		text := m.Body
		if text == nil || *text == "" {
			text = m.Subject // an email without a text part
		}
		if text != nil && *text != "" {
			row.Text, row.HasText = *text, true
			if r := []rune(row.Text); len(r) > threadText { // the whole text is on the message's page
				row.Text = string(r[:threadText-1]) + "…"
			}
		}
		d.Rows = append(d.Rows, row)
	}
	h.render(w, r, v, http.StatusOK, "conversation", contactName(c), d)
}

// contactName is how a conversation's contact is called: the name their profile gives, else
// their address.
func contactName(c db.Conversation) string {
	if c.ProfileName != nil && strings.TrimSpace(*c.ProfileName) != "" {
		return *c.ProfileName
	}
	return c.ContactIdentifier
}

// snippet is the start of a text, up to n characters, on one line.
func snippet(s *string, n int) string {
	if s == nil {
		return ""
	}
	text := strings.Join(strings.Fields(*s), " ")
	if r := []rune(text); len(r) > n {
		return strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return text
}
