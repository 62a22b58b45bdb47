// Package transport is the boundary between Switchboard and the upstream providers that carry
// messages: the types a transport takes and returns, and how its errors classify. A transport
// sends one message and says what happened; providers that report later (delivery receipts,
// read receipts, inbound messages) do it through their callbacks, the sandbox through the steps
// it plans. Each provider's code lives in a package below this one, with a local peer that
// speaks its protocol for tests (transport/<name>/<name>test).
package transport

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net"
	"time"
)

// Outbound is a message to send.
type Outbound struct {
	ID          string
	Channel     string
	MessageType string
	To          string
	// From is the sender's address on the channel (its number, its email address); empty where
	// the account itself is the address (a bot).
	From    string
	Text    string
	Subject string
	// Email: FromName is the display name of From, HTMLBody makes the mail multipart/alternative
	// with Text, ReplyTo is the Reply-To address, Headers are extra header fields (such as
	// List-Unsubscribe), and DKIM signs the mail with the From domain's key.
	FromName string
	HTMLBody string
	ReplyTo  string
	Headers  map[string]string
	DKIM     *DKIMKey
	// ReturnPath is the envelope sender (MAIL FROM) when it is not From: an address at the
	// domain's custom MAIL FROM domain that names the message, so its bounces come back to
	// Switchboard and find it.
	ReturnPath string
	// Content is what a non-text message carries; nil for plain text.
	Content *Content
	// VoiceLanguage is the language a voice message is spoken in (a BCP 47 tag); empty lets the
	// transport pick one from the recipient's country.
	VoiceLanguage string
	// Attachments are an email's attachments, in order.
	Attachments []Attachment
	// AccountToken is the sender's own credential on the channel (a Telegram bot token), read
	// from the Secret its Sender references; empty when the provider's credentials suffice.
	AccountToken string
	// ReactToProviderMessageID is, for a reaction, the provider's id of the message reacted to.
	ReactToProviderMessageID string
	// ReplyToProviderMessageID is the provider's id of the message this one answers (WhatsApp's
	// context): shown quoted above it.
	ReplyToProviderMessageID string
	// Template is, for messageType template on WhatsApp, the approved template and its
	// parameters, resolved from the Template resource Content.TemplateID names.
	Template *OutboundTemplate
	// WindowUntil is, on Messenger and Instagram, the end of the 24-hour window the contact's
	// last message opened; nil when Switchboard has not seen the contact write.
	WindowUntil *time.Time
	// StatusCallback is the URL the provider reports this message's status changes to; empty
	// when the provider has none or the installation has no public URL.
	StatusCallback string
}

// CallbackMessageParam is the query parameter of a status callback URL that names the message
// the callback reports on: a report that arrives before the provider's id is recorded still
// finds its message.
const CallbackMessageParam = "m"

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

// OutboundTemplate is an approved WhatsApp template as a send uses it.
type OutboundTemplate struct {
	// Name and Language are the template's name and language code at the provider.
	Name, Language string
	// HeaderType is text, image, video, document or "" (no header); HeaderParams fill a text
	// header's {{n}} in order, HeaderMediaURL is a media header's file.
	HeaderType     string
	HeaderParams   []string
	HeaderMediaURL string
	// BodyParams fill the body's {{1}}, {{2}} … in order.
	BodyParams []string
	// Buttons are the parameters of the buttons that take one, by the button's index: the
	// {{1}} of a url button, the code of an otp (copy code) button.
	Buttons []TemplateButtonParam
}

// TemplateButtonParam is the parameter of one template button.
type TemplateButtonParam struct {
	Index int
	// SubType is url, copy_code or quick_reply (Meta's sub_type).
	SubType string
	Value   string
}

// DKIMKey signs outgoing mail of one domain (RFC 6376): the signing domain (d=), the selector
// (s=) under which the public key is published at <selector>._domainkey.<domain>, and the
// private key (an *rsa.PrivateKey or ed25519.PrivateKey). It never appears in a log line.
type DKIMKey struct {
	Domain   string
	Selector string
	Signer   crypto.Signer
	// Also is another key of the domain whose signature goes beside this one's (an Ed25519 key
	// beside the RSA one, RFC 8463); nil when there is none.
	Also *DKIMKey
}

// Result is the outcome of a send the provider accepted.
type Result struct {
	// ProviderMessageID is the upstream's id of the accepted message; its callbacks name it.
	ProviderMessageID string
}

// Follower is a transport that reports a sent message's later steps itself, in process (the
// sandbox, which simulates them): the dispatcher calls Follow once the message's sent status
// is committed.
type Follower interface {
	Follow(messageID, channel string)
}

// Sent is a message a transport took, for a GroupFollower.
type Sent struct {
	MessageID, Channel string
}

// GroupFollower is a Follower that follows a batch dispatch's messages as one group, so that
// their later steps are recorded together.
type GroupFollower interface {
	Follower
	FollowAll(sent []Sent)
}

// Transport sends messages for the channels it carries.
//
// Send returns a *Failure when the provider refused the message for good (the message fails
// with Failure.Code), a *Temporary when it should be tried again later (rate limits, provider
// outages), and any other error for trouble on the way (a network error): also tried again.
type Transport interface {
	// Channels are the channels the transport carries.
	Channels() []string
	Send(ctx context.Context, m Outbound) (Result, error)
}

// Failure is a permanent refusal: the message fails with Code as its errorCode (spec: Errors,
// message errorCode values; docs/transports.md lists the codes a provider's errors map to).
type Failure struct {
	Code    string
	Message string
	// ProviderCode is the provider's own code that Code translates (v2 errorDetails.providerCode).
	ProviderCode string
	// ProviderFault: the refusal is about the provider's account, not the message (refused
	// credentials, an inactive account, a Provider not Ready): another Provider may carry it.
	ProviderFault bool
}

func (f *Failure) Error() string {
	if f.ProviderCode != "" {
		return fmt.Sprintf("%s (provider code %s): %s", f.Code, f.ProviderCode, f.Message)
	}
	return f.Code + ": " + f.Message
}

// Temporary is a refusal for now: the provider asked to slow down, or is failing. The message
// is tried again, after RetryAfter when the provider said how long.
type Temporary struct {
	Err        error
	RetryAfter time.Duration
	// ProviderCode is the provider's own code, kept if the retries run out.
	ProviderCode string
	// NotTaken: the provider answered that it did not take the message (a 5xx, its own
	// "service unavailable"), as opposed to no answer, after which it may have.
	NotTaken bool
}

func (t *Temporary) Error() string { return "temporary: " + t.Err.Error() }
func (t *Temporary) Unwrap() error { return t.Err }

// AsFailure returns the permanent failure err carries, or nil when err is worth trying again.
func AsFailure(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// NotTaken says whether err proves the provider did not take the message, so that another
// Provider can carry it at once without sending it twice: nothing reached the provider (the
// connection was refused, its name did not resolve), it answered that it did not take it (a
// Temporary marked NotTaken), or it refused for a reason about its account (a Failure marked
// ProviderFault). A timeout, or a connection lost after the request was written, proves nothing:
// the provider may have taken the message.
func NotTaken(err error) bool {
	var t *Temporary
	if errors.As(err, &t) && t.NotTaken {
		return true
	}
	if f := AsFailure(err); f != nil {
		return f.ProviderFault
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// Status changes a provider reports in its callbacks, in Switchboard's terms.
const (
	StatusSent      = "sent"
	StatusDelivered = "delivered"
	StatusRead      = "read"
	StatusFailed    = "failed"
)

// StatusUpdate is a provider's report about a message it accepted.
type StatusUpdate struct {
	ProviderMessageID string
	// Status is one of the Status constants; empty for a report that changes nothing (Twilio's
	// "queued" after the message was already sent).
	Status string
	// Failure is set when Status is StatusFailed.
	Failure *Failure
}

// Inbound is a contact's message as a provider delivered it.
type Inbound struct {
	Channel string
	// From is the contact's address (E.164 number, email address, chat id); To is the address
	// written to (our number, our email address; empty for a bot, whose account is the address).
	From, To    string
	MessageType string
	Text        string
	Content     *Content
	// ProviderMessageID and ProviderTimestamp are the provider's id and receive time (nil for
	// SMS and email, which carry none).
	ProviderMessageID string
	ProviderTimestamp *time.Time
	// ProfileName is the name the contact shows on the channel.
	ProfileName string
	// ReplyToProviderMessageID is the provider's id of the message the contact quoted.
	ReplyToProviderMessageID string
	// Referral is the ad the contact came from (WhatsApp; only on a thread's first message).
	Referral *Referral
	// Unsupported names what arrived when Switchboard cannot represent it (a poll, a game):
	// it is announced as message.unsupported rather than stored as a message.
	Unsupported string
	// Email: the subject, the HTML body, the attachments (inline ones with their ContentID),
	// and what the receiving server found of the mail's authentication.
	Subject     string
	HTMLBody    string
	Attachments []Attachment
	EmailAuth   *EmailAuth
}

// EmailAuth is what the checks of an inbound mail found (RFC 8601's results): spf is the SPF
// result of the envelope sender (pass, fail, softfail, neutral, none, temperror, permerror),
// dkim one result per signature, dmarc the result of the From domain's policy and the policy.
type EmailAuth struct {
	SPF         string       `json:"spf"`
	DKIM        []DKIMResult `json:"dkim"`
	DMARC       string       `json:"dmarc"`
	DMARCPolicy string       `json:"dmarcPolicy,omitempty"`
}

// DKIMResult is the check of one DKIM signature.
type DKIMResult struct {
	Domain   string `json:"domain"`
	Selector string `json:"selector,omitempty"`
	Result   string `json:"result"`
	Reason   string `json:"reason,omitempty"`
}
