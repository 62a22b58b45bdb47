package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// messageJSON is a Message (WIRE.md §2).
type messageJSON struct {
	ID                string          `json:"id"`
	To                string          `json:"to"`
	From              string          `json:"from,omitempty"`
	Channel           string          `json:"channel"`
	Direction         string          `json:"direction"`
	MessageType       string          `json:"messageType"`
	Status            string          `json:"status"`
	SenderID          string          `json:"senderId,omitempty"`
	ConversationID    *string         `json:"conversationId"`
	Text              *string         `json:"text,omitempty"`
	Content           json.RawMessage `json:"content,omitempty"`
	ProviderMessageID *string         `json:"providerMessageId,omitempty"`
	ErrorCode         *string         `json:"errorCode,omitempty"`
	ErrorMessage      *string         `json:"errorMessage,omitempty"`
	Metadata          json.RawMessage `json:"metadata,omitempty"`
	Email             *emailJSON      `json:"email,omitempty"`
	costJSON
	providersJSON
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// providersJSON is Switchboard's own addition to a message (docs/providers.md#failover): the
// Provider it went through last ("namespace/name"), and every Provider it was handed to, in
// order; absent on test traffic and simulated senders, which reach none.
type providersJSON struct {
	Provider           *string  `json:"provider,omitempty"`
	AttemptedProviders []string `json:"attemptedProviders,omitempty"`
}

func providersView(m db.Message) providersJSON {
	return providersJSON{Provider: m.Provider, AttemptedProviders: m.AttemptedProviders}
}

// costJSON is what a message costs, in USD: its price (cost), the provider's cost, and the
// total; null when nothing priced it.
type costJSON struct {
	Cost         *float64 `json:"cost"`
	CostProvider *float64 `json:"costProvider"`
	CostTotal    *float64 `json:"costTotal"`
}

func costView(m db.Message) costJSON {
	usd := func(v *int64) *float64 {
		if v == nil {
			return nil
		}
		f := billing.Micros(*v).USD()
		return &f
	}
	// A message is priced once, so its total is its price: a fallback reprices it as SMS.
	return costJSON{Cost: usd(m.CostMicros), CostProvider: usd(m.CostProviderMicros), CostTotal: usd(m.CostMicros)}
}

func messageView(m db.Message) messageJSON {
	return messageJSON{ID: m.ID, To: m.Recipient, From: m.Originator, Channel: m.Channel, Direction: m.Direction,
		MessageType: m.MessageType, Status: m.Status, SenderID: m.Sender, ConversationID: m.ConversationID, Text: m.Body, Content: m.Content, ProviderMessageID: m.ProviderMessageID,
		ErrorCode: m.ErrorCode, ErrorMessage: m.ErrorMessage, Metadata: m.Metadata, Email: emailView(m), costJSON: costView(m),
		providersJSON: providersView(m), CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	var in sendBody
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, _, err := s.messages.Send(r.Context(), keyFrom(r.Context()), in.v1Request(r))
	if err != nil {
		s.writeError(w, r, replayOr(err, func(m db.Message) any { return messageView(m) }))
		return
	}
	s.sends.accept(m)
	writeJSON(w, http.StatusOK, map[string]any{"message": messageView(m)})
}

// replayOr turns an idempotent retry into 409 idempotent_replay with the original message, in
// the generation's shape; other errors pass through.
func replayOr(err error, view func(db.Message) any) error {
	var dup *message.ErrDuplicate
	if !errors.As(err, &dup) {
		return err
	}
	e := apperror.New(apperror.Conflict, "idempotent_replay",
		"A message was already sent with this idempotency key; it is in details.message, and nothing was sent again.")
	e.Details = map[string]any{"message": view(dup.Original)}
	return e
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	m, err := s.messages.Get(r.Context(), keyFrom(r.Context()), r.PathValue("messageId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": messageView(m)})
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	s.listMessagesAs(w, r, func(m db.Message) any { return messageView(m) })
}

// listMessagesAs answers a message list, each message in the generation's shape.
func (s *Server) listMessagesAs(w http.ResponseWriter, r *http.Request, view func(db.Message) any) {
	key := keyFrom(r.Context())
	limit, after, err := s.pageRequest(r, key.Project, "messages")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	f := message.ListFilter{Limit: limit + 1}
	f.Channel, f.Status, f.To = queryOpt(q.Get("channel")), queryOpt(q.Get("status")), queryAddress(q, "to")
	f.BeforeTime, f.BeforeID = after.seek()
	rows, err := s.messages.List(r.Context(), key, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "messages", rows, limit, messageKey, view))
}

// messageKey is a message's place in a list: newest first, then by id.
func messageKey(m db.Message) (time.Time, string) { return m.CreatedAt, m.ID }
