package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

// Sandbox simulates every channel for svc_test_ keys: nothing leaves the machine. A message is
// sent at once, delivered after DeliverAfter and, on whatsapp, read after ReadAfter more. Magic
// recipients produce each failure (docs/messages.md).
type Sandbox struct {
	DeliverAfter time.Duration
	ReadAfter    time.Duration
}

// MagicRecipients make the sandbox fail a send with the given error code: one for each code a
// message can fail with before or at its provider (docs/messages.md lists them).
var MagicRecipients = map[string]Failure{
	"+15005550001":                       {Code: "RISK_BLOCKED", Message: "The content was refused by risk review."},
	"+15005550002":                       {Code: "SENDING_SUSPENDED", Message: "Sending is suspended for this account."},
	"+15005550003":                       {Code: "TEN_DLC_REQUIRED", Message: "This +1 destination needs a registered 10DLC brand and campaign."},
	"+15005550010":                       {Code: "RISK_REJECTED", Message: "Risk review held the message and the reviewer refused it."},
	"+15005550011":                       {Code: "RISK_REVIEW_EXPIRED", Message: "Risk review held the message and its review window closed."},
	"malformed@sandbox.switchboard.io":   {Code: "EMAIL_INVALID_RECIPIENT", Message: "The recipient's address is malformed."},
	"suppressed@sandbox.switchboard.io":  {Code: "EMAIL_RECIPIENT_SUPPRESSED", Message: "The address is on the suppression list after a bounce or complaint."},
	"nobody@nomx.sandbox.switchboard.io": {Code: "EMAIL_DOMAIN_NOT_FOUND", Message: "The recipient's domain has no MX or A records."},
}

// WhatsAppUnreachable is a number the sandbox cannot reach on whatsapp, and reaches on every
// other channel: a send to it shows the fallback to SMS.
const WhatsAppUnreachable = "+15005550009"

// whatsAppUndeliverable is Meta's "message undeliverable" (error 131026), as the sandbox reports it.
var whatsAppUndeliverable = Failure{Code: "WHATSAPP_UNDELIVERABLE", ProviderCode: "131026",
	Message: "The recipient cannot be reached on WhatsApp (no account, or an old app version)."}

// Send implements Transport.
func (s Sandbox) Send(_ context.Context, m Outbound) (Result, error) {
	if f, ok := MagicRecipients[strings.ToLower(m.To)]; ok {
		return Result{Failure: &f}, nil
	}
	if m.To == WhatsAppUnreachable && m.Channel == "whatsapp" {
		f := whatsAppUndeliverable
		return Result{Failure: &f}, nil
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	r := Result{ProviderMessageID: SandboxIDPrefix + hex.EncodeToString(b)}
	for status := "sent"; ; {
		step, ok := s.Next(m.Channel, status)
		if !ok {
			return r, nil
		}
		r.Steps, status = append(r.Steps, step), step.Status
	}
}

// SandboxIDPrefix starts the provider id of every message the sandbox sends.
const SandboxIDPrefix = "sbx_"

// Next is the simulated step after status on channel: delivered DeliverAfter after sent and,
// on whatsapp, read ReadAfter after delivered.
func (s Sandbox) Next(channel, status string) (Step, bool) {
	switch {
	case status == "sent":
		return Step{After: s.DeliverAfter, Status: "delivered"}, true
	case status == "delivered" && channel == "whatsapp":
		return Step{After: s.ReadAfter, Status: "read"}, true
	}
	return Step{}, false
}
