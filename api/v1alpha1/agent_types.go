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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModelProvider is the language model API an agent calls (`provider` on the REST API).
// +kubebuilder:validation:Enum=openai;anthropic;google;mistral;zavu
type ModelProvider string

const (
	ModelOpenAI    ModelProvider = "openai"
	ModelAnthropic ModelProvider = "anthropic"
	ModelGoogle    ModelProvider = "google"
	ModelMistral   ModelProvider = "mistral"
	// ModelZavu is the installation's own model: the default model Provider of the
	// installation namespace, priced by the PriceList per million tokens.
	ModelZavu ModelProvider = "zavu"
)

// AgentSpec is the desired state of an Agent: a language model that answers the inbound
// messages of the senders it serves, with its prompt, its tools and the rules of when it
// answers (docs/agents.md).
// +kubebuilder:validation:XValidation:rule="self.provider == 'zavu' || has(self.apiKeyRef) || has(self.providerRef)",message="an agent of provider openai, anthropic, google or mistral needs apiKeyRef (the Secret key holding its API key) or providerRef (a model Provider); only zavu uses the installation's model"
type AgentSpec struct {
	// DisplayName is the agent's name (`name` on the REST API).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	DisplayName string `json:"displayName"`

	// Enabled makes the agent answer. An agent made through POST /v1/agents starts disabled.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// Provider is the model API: openai, anthropic, google, mistral, or zavu (the
	// installation's own model).
	Provider ModelProvider `json:"provider"`

	// Model is the provider's model id, e.g. gpt-4o-mini, claude-sonnet-4-5, gemini-2.5-flash.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	Model string `json:"model"`

	// APIKeyRef names the Secret key holding the provider's API key (bring your own key: its
	// executions cost nothing here). The REST API keeps a key it is given in a Secret the
	// Agent owns; the key never appears in the Agent, its status, events, logs or answers.
	// +optional
	APIKeyRef *SecretKeyRef `json:"apiKeyRef,omitempty"`

	// ProviderRef names a model Provider (type openai, anthropic, google or mistral) of the
	// agent's namespace whose account and base URL the agent uses instead of apiKeyRef: an
	// OpenAI-compatible server such as Ollama or vLLM, a regional endpoint, a proxy.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ProviderRef string `json:"providerRef,omitempty"`

	// Fallbacks are further models tried in order, in the same execution, when the one before
	// is rate limited (429) or unavailable (5xx, timeout); a refused request (400, 401) fails
	// at once.
	// +kubebuilder:validation:MaxItems=3
	// +listType=atomic
	// +optional
	Fallbacks []FallbackModel `json:"fallbacks,omitempty"`

	// SystemPrompt is the agent's instructions.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32000
	SystemPrompt string `json:"systemPrompt"`

	// Temperature is the sampling temperature, 0 to 2, as a decimal string ("0.7"); empty:
	// the provider's default.
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,3})?|1(\.[0-9]{1,3})?|2(\.0{1,3})?)$`
	// +optional
	Temperature string `json:"temperature,omitempty"`

	// MaxTokens bounds each reply; unset: 1024.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32000
	// +optional
	MaxTokens *int32 `json:"maxTokens,omitempty"`

	// ContextWindowMessages is how many of the conversation's last messages the model sees;
	// unset: 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ContextWindowMessages *int32 `json:"contextWindowMessages,omitempty"`

	// IncludeContactMetadata gives the model the contact's name and metadata.
	// +optional
	IncludeContactMetadata bool `json:"includeContactMetadata,omitempty"`

	// TokenBudget bounds the tokens (in and out, every step) one execution may use; past it
	// the execution stops with what it has. Unset: 20000.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	TokenBudget *int32 `json:"tokenBudget,omitempty"`

	// Senders are the Senders of the namespace the agent answers on; the first is its primary
	// sender. A sender answers with at most one agent: when two claim one, the older agent
	// keeps it and the other shows it in status.conflicts.
	// +kubebuilder:validation:MaxItems=100
	// +listType=set
	// +optional
	Senders []string `json:"senders,omitempty"`

	// TriggerOnChannels are the channels whose inbound messages the agent answers; empty:
	// every channel of its senders.
	// +kubebuilder:validation:MaxItems=10
	// +listType=set
	// +optional
	TriggerOnChannels []Channel `json:"triggerOnChannels,omitempty"`

	// TriggerOnMessageTypes are the inbound message types it answers; empty: text only.
	// +kubebuilder:validation:MaxItems=20
	// +listType=set
	// +optional
	TriggerOnMessageTypes []string `json:"triggerOnMessageTypes,omitempty"`

	// BusinessHours, when set, limit when the agent answers.
	// +optional
	BusinessHours *BusinessHours `json:"businessHours,omitempty"`

	// Handoff says how a conversation goes to a human; while it is with one, the agent does
	// not answer in it.
	// +optional
	Handoff *Handoff `json:"handoff,omitempty"`

	// Tools are the webhooks the model may call.
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=id
	// +optional
	Tools []AgentTool `json:"tools,omitempty"`

	// Voice is how the agent holds phone calls (calls, docs/calls.md).
	// +optional
	Voice *AgentVoice `json:"voice,omitempty"`

	// Flows are scripted conversations the agent runs step by step (docs/agents.md, "Flows").
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=id
	// +optional
	Flows []AgentFlow `json:"flows,omitempty"`
}

// AgentFlow is a scripted conversation: what starts it, and its steps, run as written from the
// first. The fields are the client's AgentFlow.
type AgentFlow struct {
	// ID is the flow's id on the REST API.
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9_-]{0,62}$`
	ID string `json:"id"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=2000
	// +optional
	Description string `json:"description,omitempty"`
	// Enabled lets the flow start; unset: on.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Priority decides between flows that would start on the same message: higher first.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Priority int32       `json:"priority,omitempty"`
	Trigger  FlowTrigger `json:"trigger"`
	// Steps run from the first; a step without nextStepId ends the flow.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	Steps []FlowStep `json:"steps"`
	// TimeoutMinutes ends a conversation's run of the flow that waited that long for an answer;
	// unset: 1440 (a day).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=43200
	// +optional
	TimeoutMinutes *int32 `json:"timeoutMinutes,omitempty"`
}

// FlowEnabled reports whether the flow may start.
func (f *AgentFlow) FlowEnabled() bool { return f.Enabled == nil || *f.Enabled }

// FlowTrigger is what starts a flow: keyword (the message is one of keywords), always (a
// conversation's first message), intent (the model starts it when the contact wants intent) or
// manual (never by itself).
type FlowTrigger struct {
	// +kubebuilder:validation:Enum=keyword;intent;always;manual
	Type string `json:"type"`
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Intent string `json:"intent,omitempty"`
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	Keywords []string `json:"keywords,omitempty"`
}

// FlowStep is one step of a flow; config is the type's (docs/agents.md, "Flows").
type FlowStep struct {
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	ID string `json:"id"`
	// +kubebuilder:validation:Enum=message;collect;condition;tool;llm;transfer
	Type string `json:"type"`
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Config apiextensionsv1.JSON `json:"config,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	NextStepID string `json:"nextStepId,omitempty"`
}

// FallbackModel is a model an agent moves to when the one before cannot answer now.
type FallbackModel struct {
	Provider ModelProvider `json:"provider"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	Model string `json:"model"`
	// APIKeyRef and ProviderRef as in AgentSpec; neither: the agent's own when the provider
	// is the same (a fallback of another provider needs its own, zavu aside).
	// +optional
	APIKeyRef *SecretKeyRef `json:"apiKeyRef,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ProviderRef string `json:"providerRef,omitempty"`
}

// BusinessHours are the weekly hours an agent answers in, in a time zone.
type BusinessHours struct {
	// TimeZone is an IANA zone, e.g. America/Sao_Paulo.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone"`
	// Hours are the open intervals; a day without one is closed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=28
	// +listType=atomic
	Hours []OpenHours `json:"hours"`
	// OutsideHoursMessage, when set, is sent (once a conversation a day) to a message that
	// comes while closed; unset: nothing is sent.
	// +kubebuilder:validation:MaxLength=1000
	// +optional
	OutsideHoursMessage string `json:"outsideHoursMessage,omitempty"`
}

// OpenHours is one open interval of a weekday, local time.
// +kubebuilder:validation:XValidation:rule="self.from < self.to",message="from must be before to"
type OpenHours struct {
	// +kubebuilder:validation:Enum=monday;tuesday;wednesday;thursday;friday;saturday;sunday
	Day string `json:"day"`
	// From and To are HH:MM, 24-hour; To may be 24:00.
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	From string `json:"from"`
	// +kubebuilder:validation:Pattern=`^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$`
	To string `json:"to"`
}

// Handoff is how a conversation goes to a human.
type Handoff struct {
	// Keywords hand the conversation over when an inbound message is one of them (case and
	// spaces aside), e.g. "agent", "human".
	// +kubebuilder:validation:MaxItems=20
	// +listType=set
	// +optional
	Keywords []string `json:"keywords,omitempty"`
	// Tool offers the model a handoff_to_human tool.
	// +optional
	Tool bool `json:"tool,omitempty"`
	// Message is sent to the contact when the conversation is handed over.
	// +kubebuilder:validation:MaxLength=1000
	// +optional
	Message string `json:"message,omitempty"`
}

// AgentTool is a webhook the model may call with arguments it chooses.
// +kubebuilder:validation:XValidation:rule="has(self.webhookUrl) != has(self.function)",message="a tool has either webhookUrl or function"
type AgentTool struct {
	// ID is the tool's id on the REST API (stable across renames).
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9_-]{0,62}$`
	ID string `json:"id"`
	// Name is what the model calls it, e.g. get_order_status.
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	Name string `json:"name"`
	// Description tells the model when to use it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description"`
	// Parameters is the JSON Schema of its arguments: {type: object, properties, required}.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Parameters apiextensionsv1.JSON `json:"parameters"`
	// WebhookURL is called with POST and the arguments as JSON; it must be https. Each call
	// is signed with the tool's secret (X-Service-Signature, HMAC-SHA256 of the body).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https'",message="webhookUrl must be an https URL"
	// +optional
	WebhookURL string `json:"webhookUrl,omitempty"`
	// Function names a Function of the agent's namespace whose tool of this name (defineTool)
	// answers the call, instead of a webhook.
	// +kubebuilder:validation:MaxLength=60
	// +optional
	Function string `json:"function,omitempty"`
	// Enabled offers the tool to the model; unset: on.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// SecretRef names the Secret key holding the tool's signing secret; unset: the agent's
	// own Secret, key tool-<id> (the REST API's).
	// +optional
	SecretRef *SecretKeyRef `json:"secretRef,omitempty"`
}

// AgentVoice is how an agent holds phone calls; the fields are the client's `voice`.
type AgentVoice struct {
	Enabled bool `json:"enabled"`
	// +kubebuilder:validation:MaxLength=1000
	// +optional
	Greeting string `json:"greeting,omitempty"`
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Greetings map[string]string `json:"greetings,omitempty"`
	// +optional
	Interruptible *bool `json:"interruptible,omitempty"`
	// +kubebuilder:validation:MaxLength=35
	// +optional
	Language string `json:"language,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=240
	// +optional
	MaxCallDurationMinutes *int32 `json:"maxCallDurationMinutes,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	// +optional
	MaxIdleSeconds *int32 `json:"maxIdleSeconds,omitempty"`
	// +kubebuilder:validation:MaxLength=200
	// +optional
	Model string `json:"model,omitempty"`
	// +optional
	RecordCalls bool `json:"recordCalls,omitempty"`
	// +kubebuilder:validation:MaxLength=100
	// +optional
	STTModel string `json:"sttModel,omitempty"`
	// +kubebuilder:validation:MaxLength=100
	// +optional
	STTProvider string `json:"sttProvider,omitempty"`
	// +kubebuilder:validation:MaxLength=100
	// +optional
	TTSProvider string `json:"ttsProvider,omitempty"`
	// +kubebuilder:validation:MaxLength=200
	// +optional
	TTSVoiceID string `json:"ttsVoiceId,omitempty"`
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	// +optional
	TransferPhoneNumber string `json:"transferPhoneNumber,omitempty"`
	// +kubebuilder:validation:Enum=hangup;leave_message
	// +optional
	VoicemailAction string `json:"voicemailAction,omitempty"`
	// +kubebuilder:validation:MaxLength=1000
	// +optional
	VoicemailMessage string `json:"voicemailMessage,omitempty"`
	// VoiceSpeed is a decimal string, 0.5 to 2 ("1.0" is natural).
	// +kubebuilder:validation:Pattern=`^(0\.[5-9][0-9]{0,2}|1(\.[0-9]{1,3})?|2(\.0{1,3})?)$`
	// +optional
	VoiceSpeed string `json:"voiceSpeed,omitempty"`
}

// AgentStatus is the observed state of an Agent.
type AgentStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Senders are the senders the agent answers on now: those of spec.senders that exist and
	// no older agent holds.
	// +listType=set
	// +optional
	Senders []string `json:"senders,omitempty"`
	// Conflicts are the senders of spec.senders another agent holds, as sender=agent.
	// +listType=set
	// +optional
	Conflicts []string `json:"conflicts,omitempty"`
	// Conditions: Ready (the model's account resolves: its key or Provider is there).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`,priority=1
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Senders",type=string,JSONPath=`.status.senders`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.spec.enabled`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Agent is a language model answering the inbound messages of a project's senders.
type Agent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   AgentSpec   `json:"spec"`
	Status AgentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AgentList contains a list of Agent.
type AgentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Agent `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Agent{}, &AgentList{})
}
