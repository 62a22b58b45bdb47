/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"slices"
	"strings"

	"github.com/switchboard-io/switchboard/internal/addr"
)

// AllChannels lists every channel, in the order the spec lists them.
var AllChannels = []Channel{
	ChannelSMS, ChannelSMSOneway, ChannelWhatsApp, ChannelTelegram,
	ChannelEmail, ChannelInstagram, ChannelMessenger, ChannelVoice,
}

// Channels lists the channels the transport can carry.
func (t Transport) Channels() []Channel {
	switch t {
	case TransportSandbox, TransportProviders, "":
		return AllChannels
	default:
		return nil
	}
}

// Supports tells whether the transport can carry the channel.
func (t Transport) Supports(c Channel) bool {
	return slices.Contains(t.Channels(), c)
}

// IsReady tells whether the sender's Ready condition is True for its current generation.
func (s *Sender) IsReady() bool {
	return isReady(s.Status.Conditions, s.Generation)
}

// ActiveChannels lists the channels that are configured and activated, in the spec's channel
// order, before the transport and readiness are considered.
func (s *SenderSpec) ActiveChannels() []Channel {
	on := map[Channel]bool{
		ChannelSMS:       s.PhoneNumber != "" && s.SMS != nil && s.SMS.Active,
		ChannelSMSOneway: s.SMSOneway != nil && s.SMSOneway.Enabled,
		ChannelVoice:     s.PhoneNumber != "" && s.Voice != nil && s.Voice.Enabled,
		ChannelWhatsApp:  s.WhatsApp != nil && s.WhatsApp.Active,
		ChannelTelegram:  s.Telegram != nil && s.Telegram.Active,
		ChannelInstagram: s.Instagram != nil && s.Instagram.Active,
		ChannelMessenger: s.Messenger != nil && s.Messenger.Active,
		ChannelEmail:     s.Email != nil && s.Email.Address != "",
	}
	var out []Channel
	for _, c := range AllChannels {
		if on[c] {
			out = append(out, c)
		}
	}
	return out
}

// DefaultSender picks the project's default among the Senders of a namespace: the oldest (then
// first by name) of those that ask to be it.
func DefaultSender(items []Sender) *Sender {
	var chosen *Sender
	for i := range items {
		s := &items[i]
		if !s.Spec.Default || !s.DeletionTimestamp.IsZero() {
			continue
		}
		if chosen == nil || s.CreationTimestamp.Before(&chosen.CreationTimestamp) ||
			(s.CreationTimestamp.Equal(&chosen.CreationTimestamp) && s.Name < chosen.Name) {
			chosen = s
		}
	}
	return chosen
}

// EmailInEffect is what is in effect of the email receiving settings, given the EmailDomains of
// the sender's namespace: receiving needs its address's domain to receive (receiving on, inbound
// MX published), or the sandbox, which simulates mail; catch-all needs receiving.
func (s *Sender) EmailInEffect(domains []EmailDomain) (receiving, catchAll bool) {
	e := s.Spec.Email
	if e == nil || !e.ReceivingEnabled {
		return false, false
	}
	if s.Spec.Transport == TransportSandbox {
		receiving = true
	} else if d := DomainFor(domains, e.Address); d != nil {
		receiving = d.Receives()
	}
	return receiving, receiving && e.CatchAllEnabled
}

// SendableChannels are the channels the sender can send on now, computed from its spec: the
// configured and activated channels its transport carries. The controller publishes them as
// status.channels, the API shows them, and a send picks among them, so a sender changed a moment
// ago sends as its answer said.
func (s *Sender) SendableChannels() []Channel {
	var out []Channel
	for _, c := range s.Spec.ActiveChannels() {
		if s.Spec.Transport.Supports(c) {
			out = append(out, c)
		}
	}
	return out
}

// Address is the sender's address on a configured channel, as contacts see it, as GET
// /v2/channels lists it and as a message shows it in from: the number (sms, voice), the WhatsApp
// number in E.164, the bot's @username, the account or page id, the email address. One-way SMS
// without a number sends from the sender's name (an alphanumeric sender id). It is "" when the
// channel is not configured.
func (s *Sender) Address(c Channel) string {
	spec := &s.Spec
	switch c {
	case ChannelSMS:
		if spec.SMS != nil {
			return spec.PhoneNumber
		}
	case ChannelSMSOneway:
		if spec.SMSOneway != nil {
			if spec.PhoneNumber != "" {
				return spec.PhoneNumber
			}
			return s.Name
		}
	case ChannelVoice:
		if spec.Voice != nil {
			return spec.PhoneNumber
		}
	case ChannelWhatsApp:
		if a := spec.WhatsApp; a != nil {
			if n := addr.Normalize(a.DisplayPhoneNumber); addr.IsE164(n) {
				return n
			}
			return a.AccountID
		}
	case ChannelTelegram:
		if a := spec.Telegram; a != nil {
			if a.DisplayName != "" {
				return "@" + strings.TrimPrefix(a.DisplayName, "@")
			}
			return a.AccountID
		}
	case ChannelInstagram:
		if spec.Instagram != nil {
			return spec.Instagram.AccountID
		}
	case ChannelMessenger:
		if spec.Messenger != nil {
			return spec.Messenger.AccountID
		}
	case ChannelEmail:
		if spec.Email != nil {
			return spec.Email.Address
		}
	}
	return ""
}

// ProviderName is the Provider the sender names for channel; "" takes the default.
func (s *Sender) ProviderName(c Channel) string {
	spec := &s.Spec
	switch c {
	case ChannelSMS:
		if spec.SMS != nil {
			return spec.SMS.Provider
		}
	case ChannelSMSOneway:
		if spec.SMSOneway != nil {
			return spec.SMSOneway.Provider
		}
	case ChannelVoice:
		if spec.Voice != nil {
			return spec.Voice.Provider
		}
	case ChannelWhatsApp, ChannelTelegram, ChannelInstagram, ChannelMessenger:
		if a := s.connected(c); a != nil {
			return a.Provider
		}
	}
	return ""
}

// connected is the account connected on a chat channel, or nil.
// AccountID is the provider's id of the sender's connected account on c (the WhatsApp phone
// number id, the page or Instagram account id); "" when none is connected.
func (s *Sender) AccountID(c Channel) string {
	if a := s.connected(c); a != nil {
		return a.AccountID
	}
	return ""
}

func (s *Sender) connected(c Channel) *ConnectedAccount {
	switch c {
	case ChannelWhatsApp:
		return s.Spec.WhatsApp
	case ChannelTelegram:
		return s.Spec.Telegram
	case ChannelInstagram:
		return s.Spec.Instagram
	case ChannelMessenger:
		return s.Spec.Messenger
	}
	return nil
}

// Credentials names the Secret key of the account connected on channel (a bot token), or nil.
func (s *Sender) Credentials(c Channel) *SecretKeyRef {
	if a := s.connected(c); a != nil {
		return a.CredentialsRef
	}
	return nil
}
