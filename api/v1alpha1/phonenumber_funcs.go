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
)

// sandboxNumberPrefix starts the sandbox's test numbers: +1 500 555 0000 to +1 500 555 9999, a
// range no carrier assigns (Twilio's test credentials use it too).
const sandboxNumberPrefix = "+1500555"

// IsSandboxNumber tells whether number is one of the sandbox's test numbers, which no project
// owns and every project may use: nobody can be reached at them, or send from them for real.
func IsSandboxNumber(number string) bool {
	if len(number) != len(sandboxNumberPrefix)+4 || !strings.HasPrefix(number, sandboxNumberPrefix) {
		return false
	}
	for _, c := range number[len(sandboxNumberPrefix):] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// IsReady tells whether the PhoneNumber's Ready condition is True for its current generation:
// it holds its number for status.project.
func (p *PhoneNumber) IsReady() bool {
	return isReady(p.Status.Conditions, p.Generation)
}

// Holds tells whether p holds its number for project.
func (p *PhoneNumber) Holds(project string) bool {
	return p.DeletionTimestamp.IsZero() && p.IsReady() && p.Status.Project == project
}

// NumberHolder picks, among PhoneNumbers of one number, the one that holds it: Ready for its
// current generation (the oldest, then first by namespace and name, should two briefly be); nil
// when no project owns the number.
func NumberHolder(items []PhoneNumber) *PhoneNumber {
	var chosen *PhoneNumber
	for i := range items {
		p := &items[i]
		if !p.DeletionTimestamp.IsZero() || !p.IsReady() || p.Status.Project == "" {
			continue
		}
		if chosen == nil || p.CreationTimestamp.Before(&chosen.CreationTimestamp) ||
			(p.CreationTimestamp.Equal(&chosen.CreationTimestamp) && p.Namespace+"/"+p.Name < chosen.Namespace+"/"+chosen.Name) {
			chosen = p
		}
	}
	return chosen
}

// PhoneNumberName is the name the Sender controller gives the PhoneNumber it makes for number:
// "pn-" and its digits.
func PhoneNumberName(number string) string {
	return "pn-" + strings.TrimPrefix(number, "+")
}

// SendsFromNumber tells whether the sender's channel c goes out from its phone number: sms and
// voice, and one-way SMS when the sender has a number (without one it sends from its name).
func (s *Sender) SendsFromNumber(c Channel) bool {
	switch c {
	case ChannelSMS, ChannelSMSOneway, ChannelVoice:
		return s.Spec.PhoneNumber != ""
	}
	return false
}

// ChannelsWithoutNumber are channels less those that go out from the sender's phone number:
// what the sender can send on while its project does not own the number.
func (s *Sender) ChannelsWithoutNumber(channels []Channel) []Channel {
	var out []Channel
	for _, c := range channels {
		if !s.SendsFromNumber(c) {
			out = append(out, c)
		}
	}
	return out
}

// capabilityOrder is the order capabilities are listed in.
var capabilityOrder = map[PhoneCapability]int{CapabilitySMS: 0, CapabilityMMS: 1, CapabilityVoice: 2}

// SortCapabilities puts caps in their usual order: sms, mms, voice.
func SortCapabilities(caps []PhoneCapability) {
	slices.SortFunc(caps, func(a, b PhoneCapability) int { return capabilityOrder[a] - capabilityOrder[b] })
}
