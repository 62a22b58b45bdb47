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
	"fmt"
	"slices"
)

// ProviderTypes lists every provider type.
var ProviderTypes = []ProviderType{ProviderTwilio, ProviderTelegram, ProviderMeta, ProviderSMTP}

// Channels lists the channels a Provider of the type serves.
func (t ProviderType) Channels() []Channel {
	switch t {
	case ProviderTwilio:
		return []Channel{ChannelSMS, ChannelSMSOneway, ChannelVoice}
	case ProviderTelegram:
		return []Channel{ChannelTelegram}
	case ProviderMeta:
		return []Channel{ChannelWhatsApp, ChannelInstagram, ChannelMessenger}
	case ProviderSMTP:
		return []Channel{ChannelEmail}
	default:
		return nil
	}
}

// Serves tells whether a Provider of the type serves the channel.
func (t ProviderType) Serves(c Channel) bool {
	return slices.Contains(t.Channels(), c)
}

// CredentialKeys lists the keys of the credentials Secret of a Provider of the type: those it
// must hold, and those it may.
func (t ProviderType) CredentialKeys() (required, optional []string) {
	switch t {
	case ProviderTwilio:
		return []string{ProviderKeyAccountSID, ProviderKeyAuthToken}, nil
	case ProviderMeta:
		return []string{ProviderKeyAccessToken}, []string{ProviderKeyAppSecret, ProviderKeyVerifyToken}
	case ProviderSMTP:
		return []string{ProviderKeyUsername, ProviderKeyPassword}, []string{ProviderKeyCACert}
	case ProviderOpenAI:
		// A local OpenAI-compatible server (Ollama, vLLM) may take no key.
		return nil, []string{ProviderKeyAPIKey}
	case ProviderAnthropic, ProviderGoogle, ProviderMistral, ProviderWebRisk:
		return []string{ProviderKeyAPIKey}, nil
	default:
		return nil, nil
	}
}

// MissingCredentialKeys lists the keys the type requires that data lacks or holds empty.
func (t ProviderType) MissingCredentialKeys(data map[string][]byte) []string {
	required, _ := t.CredentialKeys()
	var missing []string
	for _, k := range required {
		if len(data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	return missing
}

// IsReady tells whether the Provider's Ready condition is True for its current generation.
func (p *Provider) IsReady() bool {
	return isReady(p.Status.Conditions, p.Generation)
}

// EndpointAllowed says whether p's baseURL may be used: in the installation's namespace, for an
// smtp Provider (its baseURL is its relay, not an override), or where the operator allows
// projects' endpoints (--allow-project-provider-endpoints). A project's own endpoint would
// answer for the provider: claim any bot id or number, and receive what Switchboard sends it.
func (p *Provider) EndpointAllowed(installationNamespace string, allowProjects bool) bool {
	return p.Spec.BaseURL == "" || p.Spec.Type == ProviderSMTP || allowProjects ||
		(installationNamespace != "" && p.Namespace == installationNamespace)
}

// DefaultProvider picks, among the Providers of one namespace, the default for a channel: the
// oldest (then first by name) of those that ask to be a default and whose type serves the channel.
func DefaultProvider(items []Provider, channel Channel) *Provider {
	var chosen *Provider
	for i := range items {
		p := &items[i]
		if !p.Spec.Default || !p.DeletionTimestamp.IsZero() || !p.Spec.Type.Serves(channel) {
			continue
		}
		if chosen == nil || p.CreationTimestamp.Before(&chosen.CreationTimestamp) ||
			(p.CreationTimestamp.Equal(&chosen.CreationTimestamp) && p.Name < chosen.Name) {
			chosen = p
		}
	}
	return chosen
}

// ResolveProvider returns the Provider a channel uses, given the Providers of the project's
// namespace and of the installation's namespace:
//
//  1. the one named, when named is set: looked up in the project's namespace, then in the
//     installation's; it must serve the channel;
//  2. else the project namespace's default Provider for the channel (DefaultProvider);
//  3. else the installation namespace's default for it.
//
// It returns nil and a reason a user can act on when none applies. Readiness is not considered:
// a project whose own default is not Ready is not silently moved to the installation's account.
func ResolveProvider(channel Channel, named string, project []Provider, installation []Provider) (*Provider, string) {
	if named != "" {
		p := findProvider(project, named)
		if p == nil {
			p = findProvider(installation, named)
		}
		if p == nil {
			return nil, fmt.Sprintf("Provider %q not found", named)
		}
		if !p.Spec.Type.Serves(channel) {
			return nil, fmt.Sprintf("Provider %q is of type %s, which does not serve %s", named, p.Spec.Type, channel)
		}
		return p, ""
	}
	if p := DefaultProvider(project, channel); p != nil {
		return p, ""
	}
	if p := DefaultProvider(installation, channel); p != nil {
		return p, ""
	}
	return nil, fmt.Sprintf("no Provider serves %s: create one (docs/providers.md)", channel)
}

func findProvider(items []Provider, name string) *Provider {
	for i := range items {
		if items[i].Name == name && items[i].DeletionTimestamp.IsZero() {
			return &items[i]
		}
	}
	return nil
}
