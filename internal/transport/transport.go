// Package transport is the boundary between Switchboard and the upstream providers that carry
// messages. A transport sends one message and says what happened; providers that report later
// (delivery receipts, read receipts) do it through their callbacks, the sandbox through the
// steps it plans.
package transport

import (
	"context"
	"time"
)

// Outbound is a message to send.
type Outbound struct {
	ID          string
	Channel     string
	MessageType string
	To          string
	From        string
	Text        string
	Subject     string
	// Attachments are an email's attachments, in order.
	Attachments []Attachment
}

// Attachment is an email attachment: its bytes, or a URL the transport fetches when it sends.
type Attachment struct {
	Filename    string
	ContentType string
	// ContentID, when set, makes the attachment inline: the HTML body shows it as cid:<ContentID>.
	ContentID string
	// Content is the attachment itself; nil when URL names it instead.
	Content []byte
	URL     string
}

// Failure is a refusal with the message's errorCode (spec: Errors, message errorCode values).
type Failure struct {
	Code    string
	Message string
	// ProviderCode is the provider's own code that Code translates (v2 errorDetails.providerCode).
	ProviderCode string
}

// Step is a later status change the transport already knows of (the sandbox's simulation).
type Step struct {
	After  time.Duration
	Status string
}

// Result is the outcome of a send.
type Result struct {
	// ProviderMessageID is the upstream's id of the accepted message.
	ProviderMessageID string
	// Failure, when set, means the message failed and was not sent.
	Failure *Failure
	// Steps are status changes to come, each after the previous one.
	Steps []Step
}

// Transport sends messages for the channels it carries.
type Transport interface {
	Send(ctx context.Context, m Outbound) (Result, error)
}
