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
)

// AllChannels lists every channel, in the order the spec lists them.
var AllChannels = []Channel{
	ChannelSMS, ChannelSMSOneway, ChannelWhatsApp, ChannelTelegram,
	ChannelEmail, ChannelInstagram, ChannelMessenger, ChannelVoice,
}

// Channels lists the channels the transport can carry.
func (t Transport) Channels() []Channel {
	switch t {
	case TransportSandbox, "":
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
