// Package sandbox is the transport of every svc_test_ key: it simulates every channel in
// process and nothing leaves the machine.
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Sandbox simulates every channel. A message is sent at once, delivered after DeliverAfter
// and, on whatsapp, read after ReadAfter more. Magic recipients produce each failure
// (docs/messages.md). The later steps run on in-memory timers (Follow); a step lost with a
// stopped process is made by the catch-up (CatchUpWorker). Statuses only move forward, so a
// step made twice is made once.
type Sandbox struct {
	DeliverAfter time.Duration
	ReadAfter    time.Duration
	// AdvanceAll moves many messages to one status, each with its event, together: the steps
	// that fall due together and the catch-up's are made as a group. Set before the first
	// Follow.
	AdvanceAll func(ctx context.Context, messageIDs []string, status string) error

	steps steps
}

// stepGrain is how finely the simulated steps keep time: the steps of one status falling due in
// the same stepGrain are made together, in one statement (up to stepBatch messages), whichever
// sends they came from. A step comes up to stepGrain after its time.
const (
	stepGrain = 20 * time.Millisecond
	stepBatch = 1000
)

// steps are the simulated steps waiting for their time, by status and due time.
type steps struct {
	mu  sync.Mutex
	due map[dueStep][]transport.Sent
}

type dueStep struct {
	status string
	at     time.Time
}

// MagicRecipients make the sandbox fail a send with the given error code: one for each code a
// message can fail with before or at its provider (docs/messages.md lists them).
var MagicRecipients = map[string]transport.Failure{
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
var whatsAppUndeliverable = transport.Failure{Code: "WHATSAPP_UNDELIVERABLE", ProviderCode: "131026",
	Message: "The recipient cannot be reached on WhatsApp (no account, or an old app version)."}

// Channels implements transport.Transport: every channel.
func (s *Sandbox) Channels() []string {
	out := make([]string, len(v1alpha1.AllChannels))
	for i, c := range v1alpha1.AllChannels {
		out[i] = string(c)
	}
	return out
}

// Send implements transport.Transport.
func (s *Sandbox) Send(_ context.Context, m transport.Outbound) (transport.Result, error) {
	if f, ok := MagicRecipients[strings.ToLower(m.To)]; ok {
		return transport.Result{}, &f
	}
	if m.To == WhatsAppUnreachable && m.Channel == "whatsapp" {
		f := whatsAppUndeliverable
		return transport.Result{}, &f
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return transport.Result{ProviderMessageID: IDPrefix + hex.EncodeToString(b)}, nil
}

// Follow plays the message's later steps on timers, once its sent status is committed.
func (s *Sandbox) Follow(messageID, channel string) {
	s.playAll([]transport.Sent{{MessageID: messageID, Channel: channel}}, transport.StatusSent)
}

// FollowAll implements transport.GroupFollower: the messages' later steps are played in groups,
// each group's step recorded at once.
func (s *Sandbox) FollowAll(sent []transport.Sent) {
	s.playAll(sent, transport.StatusSent)
}

// playAll schedules the step after status of every message, joining the messages whose same
// step falls due in the same stepGrain: one timer and one statement for them all.
func (s *Sandbox) playAll(msgs []transport.Sent, status string) {
	now := time.Now()
	s.steps.mu.Lock()
	defer s.steps.mu.Unlock()
	for _, m := range msgs {
		step, ok := s.Next(m.Channel, status)
		if !ok {
			continue
		}
		key := dueStep{status: step.Status, at: now.Add(step.After).Truncate(stepGrain).Add(stepGrain)}
		if s.steps.due == nil {
			s.steps.due = map[dueStep][]transport.Sent{}
		}
		if _, waiting := s.steps.due[key]; !waiting {
			time.AfterFunc(time.Until(key.at), func() { s.makeSteps(key) })
		}
		s.steps.due[key] = append(s.steps.due[key], m)
	}
}

// makeSteps makes the steps that fell due at key, stepBatch messages at a time.
func (s *Sandbox) makeSteps(key dueStep) {
	s.steps.mu.Lock()
	group := s.steps.due[key]
	delete(s.steps.due, key)
	s.steps.mu.Unlock()
	for len(group) > 0 {
		n := min(len(group), stepBatch)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		// A failure here is not lost: the catch-up makes the same steps later.
		_ = s.advance(ctx, group[:n], key.status)
		cancel()
		group = group[n:]
	}
}

// advance moves the group to status together, then schedules the steps after it.
func (s *Sandbox) advance(ctx context.Context, group []transport.Sent, status string) error {
	ids := make([]string, len(group))
	for i, m := range group {
		ids[i] = m.MessageID
	}
	if err := s.AdvanceAll(ctx, ids, status); err != nil {
		return err
	}
	s.playAll(group, status)
	return nil
}

// Step is a simulated status change, After the previous one.
type Step struct {
	After  time.Duration
	Status string
}

// IDPrefix starts the provider id of every message the sandbox sends.
const IDPrefix = "sbx_"

// Next is the simulated step after status on channel: delivered DeliverAfter after sent and,
// on whatsapp, read ReadAfter after delivered.
func (s *Sandbox) Next(channel, status string) (Step, bool) {
	switch {
	case status == "sent":
		return Step{After: s.DeliverAfter, Status: "delivered"}, true
	case status == "delivered" && channel == "whatsapp":
		return Step{After: s.ReadAfter, Status: "read"}, true
	}
	return Step{}, false
}
