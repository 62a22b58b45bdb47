package httpapi

import (
	"net/http"

	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// sendBody is the body of POST /v1/messages (WIRE.md §2): the wire's names for a send.
type sendBody struct {
	To             *string            `json:"to"`
	Channel        *string            `json:"channel"`
	MessageType    *string            `json:"messageType"`
	Text           *string            `json:"text"`
	Content        *transport.Content `json:"content"`
	Subject        *string            `json:"subject"`
	HTMLBody       *string            `json:"htmlBody"`
	ReplyTo        *string            `json:"replyTo"`
	Fallback       *bool              `json:"fallbackEnabled"`
	VoiceLanguage  *string            `json:"voiceLanguage"`
	Metadata       map[string]string  `json:"metadata"`
	IdempotencyKey *string            `json:"idempotencyKey"`
	Attachments    []attachmentBody   `json:"attachments"`
}

// sendV2Body is the body of POST /v2/messages: the v1 fields, from an address, or into a thread.
type sendV2Body struct {
	sendBody
	From           *string `json:"from"`
	ConversationID *string `json:"conversationId"`
}

// request is the send in the domain's terms. The idempotency key comes from the body, where
// existing clients put it, else from the Idempotency-Key header.
func (b sendBody) request(r *http.Request) message.Request {
	req := message.Request{To: b.To, Channel: b.Channel, MessageType: b.MessageType, Text: b.Text, Content: b.Content,
		Subject: b.Subject, HTMLBody: b.HTMLBody, ReplyTo: b.ReplyTo, Fallback: b.Fallback, VoiceLanguage: b.VoiceLanguage,
		Metadata: b.Metadata, IdempotencyKey: b.IdempotencyKey, Attachments: attachmentInputs(b.Attachments)}
	if req.IdempotencyKey == nil {
		if h := r.Header.Get("Idempotency-Key"); h != "" {
			req.IdempotencyKey = &h
		}
	}
	return req
}

// v1Request: the sender is the Service-Sender header's, or the project's default.
func (b sendBody) v1Request(r *http.Request) message.Request {
	req := b.request(r)
	req.SenderID = r.Header.Get("Service-Sender")
	return req
}

// v2Request: the sender is the thread's or the from address's, under v2's stricter rules.
func (b sendV2Body) v2Request(r *http.Request) message.Request {
	req := b.request(r)
	req.From, req.ConversationID, req.Strict = b.From, b.ConversationID, true
	return req
}
