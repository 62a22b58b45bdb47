package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// messageV2JSON is a v2 message: from and to are addresses, there is no senderId.
type messageV2JSON struct {
	ID                string            `json:"id"`
	From              string            `json:"from"`
	To                string            `json:"to"`
	Channel           string            `json:"channel"`
	Direction         string            `json:"direction"`
	MessageType       string            `json:"messageType"`
	Status            string            `json:"status"`
	Text              *string           `json:"text,omitempty"`
	Content           json.RawMessage   `json:"content,omitempty"`
	ProviderMessageID *string           `json:"providerMessageId,omitempty"`
	ErrorCode         *string           `json:"errorCode,omitempty"`
	ErrorMessage      *string           `json:"errorMessage,omitempty"`
	ErrorDetails      *errorDetailsJSON `json:"errorDetails,omitempty"`
	ConversationID    *string           `json:"conversationId"`
	AttemptedChannels []string          `json:"attemptedChannels"`
	RiskHold          bool              `json:"riskHold"`
	Metadata          map[string]string `json:"metadata,omitempty"`
	Email             *emailJSON        `json:"email,omitempty"`
	costJSON
	providersJSON
	// Charged is what an SMS (or voice message) took from the balance: 0 for test traffic
	// and once refunded.
	Charged   *float64  `json:"charged"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// errorDetailsJSON is what the provider said when errorCode translates it.
type errorDetailsJSON struct {
	ProviderCode string `json:"providerCode"`
}

func messageV2View(m db.Message) messageV2JSON {
	v := messageV2JSON{ID: m.ID, From: m.Originator, To: m.Recipient, Channel: m.Channel, Direction: m.Direction,
		MessageType: m.MessageType, Status: m.Status, Text: m.Body, Content: m.Content, ProviderMessageID: m.ProviderMessageID,
		ErrorCode: m.ErrorCode, ErrorMessage: m.ErrorMessage, ConversationID: m.ConversationID, Email: emailView(m),
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(), costJSON: costView(m), providersJSON: providersView(m), RiskHold: m.RiskHold}
	switch {
	case m.ChargedMicros != nil:
		c := billing.Micros(*m.ChargedMicros).USD()
		v.Charged = &c
	case billing.Charged[m.Channel]:
		// A channel charged per message that took nothing (test traffic, an unpriced
		// destination, an installation with no PriceList, an inbound message): 0, not unknown.
		v.Charged = new(float64)
	}
	// The channels tried, in order: a fallback's earlier ones, then the one it is on.
	v.AttemptedChannels = append(append([]string{}, m.AttemptedChannels...), m.Channel)
	if m.ErrorProviderCode != nil {
		v.ErrorDetails = &errorDetailsJSON{ProviderCode: *m.ErrorProviderCode}
	}
	if len(m.Metadata) > 0 {
		_ = json.Unmarshal(m.Metadata, &v.Metadata)
	}
	return v
}

func (s *Server) sendMessageV2(w http.ResponseWriter, r *http.Request) {
	var in sendV2Body
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, routing, err := s.messages.Send(r.Context(), keyFrom(r.Context()), in.v2Request(r))
	if err != nil {
		s.writeError(w, r, replayOr(err, func(m db.Message) any { return messageV2View(m) }))
		return
	}
	s.sends.accept(m)
	writeJSON(w, http.StatusAccepted, map[string]any{
		"message": messageV2View(m),
		"routing": map[string]string{"channel": routing.Channel, "from": routing.From, "reason": routing.Reason},
	})
}

func (s *Server) getMessageV2(w http.ResponseWriter, r *http.Request) {
	m, err := s.messages.Get(r.Context(), keyFrom(r.Context()), r.PathValue("messageId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": messageV2View(m)})
}

func (s *Server) listMessagesV2(w http.ResponseWriter, r *http.Request) {
	s.listMessagesAs(w, r, func(m db.Message) any { return messageV2View(m) })
}
