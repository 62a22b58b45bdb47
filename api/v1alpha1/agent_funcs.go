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

import "sort"

// SenderHolders maps each sender named by agents to the agent that answers on it: the oldest
// agent naming it (by creation, then name), deleted agents aside.
func SenderHolders(agents []Agent) map[string]string {
	live := make([]Agent, 0, len(agents))
	for _, a := range agents {
		if a.DeletionTimestamp.IsZero() {
			live = append(live, a)
		}
	}
	sort.Slice(live, func(i, j int) bool {
		ti, tj := live[i].CreationTimestamp, live[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return live[i].Name < live[j].Name
	})
	holders := map[string]string{}
	for _, a := range live {
		for _, s := range a.Spec.Senders {
			if _, taken := holders[s]; !taken {
				holders[s] = a.Name
			}
		}
	}
	return holders
}

// ServesModel says whether a Provider of type t can serve agents of provider m: its own type,
// and any openai-compatible server for openai or mistral agents (Mistral's API is one).
func ServesModel(t ProviderType, m ModelProvider) bool {
	switch m {
	case ModelZavu:
		return t.IsModel()
	case ModelMistral:
		return t == ProviderMistral || t == ProviderOpenAI
	default:
		return string(t) == string(m)
	}
}

// InstallationModel picks, among the Providers of the installation's namespace, the model
// Provider that serves agents of provider zavu: the oldest default one, else the oldest; nil
// when there is none.
func InstallationModel(providers []Provider) *Provider {
	var models []Provider
	for _, p := range providers {
		if p.Spec.Type.IsModel() && p.DeletionTimestamp.IsZero() {
			models = append(models, p)
		}
	}
	if len(models) == 0 {
		return nil
	}
	sort.Slice(models, func(i, j int) bool {
		if models[i].Spec.Default != models[j].Spec.Default {
			return models[i].Spec.Default
		}
		ti, tj := models[i].CreationTimestamp, models[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return models[i].Name < models[j].Name
	})
	return &models[0]
}

// OwnSecretName is the Secret the REST API keeps an agent's keys in (owned by the Agent): its
// API key under AgentKeyAPIKey, each tool's signing secret under ToolSecretKey(id).
func (a *Agent) OwnSecretName() string { return a.Name + "-secrets" }

// AgentKeyAPIKey is the key of an agent's API key in its own Secret.
const AgentKeyAPIKey = "apiKey"

// ToolSecretKey is the key of a tool's signing secret in its agent's own Secret.
func ToolSecretKey(toolID string) string { return "tool-" + toolID }

// ToolSecretRef is where tool t's signing secret is: its secretRef, else its agent's own Secret.
func (a *Agent) ToolSecretRef(t AgentTool) SecretKeyRef {
	if t.SecretRef != nil {
		return *t.SecretRef
	}
	return SecretKeyRef{Name: a.OwnSecretName(), Key: ToolSecretKey(t.ID)}
}

// ToolEnabled says whether t is offered to the model (unset: yes).
func (t AgentTool) ToolEnabled() bool { return t.Enabled == nil || *t.Enabled }

// IsReady tells whether the Agent's Ready condition is True for its current generation.
func (a *Agent) IsReady() bool { return isReady(a.Status.Conditions, a.Generation) }
