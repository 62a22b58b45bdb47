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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProviderType names the upstream a Provider is an account at; it decides the channels the
// Provider serves and the credentials its Secret holds.
// +kubebuilder:validation:Enum=twilio;telegram;meta;smtp;openai;anthropic;google;mistral;webrisk
type ProviderType string

const (
	// ProviderTwilio serves sms, sms_oneway and voice.
	ProviderTwilio ProviderType = "twilio"
	// ProviderTelegram serves telegram. Bot tokens belong to Senders, so it needs no Secret.
	ProviderTelegram ProviderType = "telegram"
	// ProviderMeta (the Cloud and Graph APIs) serves whatsapp, instagram and messenger.
	ProviderMeta ProviderType = "meta"
	// ProviderSMTP serves email.
	ProviderSMTP ProviderType = "smtp"
	// The model providers serve agents (docs/agents.md): an account at a language model API.
	// openai is also any server speaking OpenAI's API (Ollama, vLLM, LiteLLM: set baseURL).
	// One in the installation's namespace serves the agents of provider zavu.
	ProviderOpenAI    ProviderType = "openai"
	ProviderAnthropic ProviderType = "anthropic"
	ProviderGoogle    ProviderType = "google"
	ProviderMistral   ProviderType = "mistral"
	// ProviderWebRisk is the installation's threat intelligence for URL verification
	// (docs/urls.md): Google's Web Risk Lookup API, with an API key. Only one in the
	// installation's namespace is used.
	ProviderWebRisk ProviderType = "webrisk"
)

// IsModel reports whether t is a language model API (an agent's), not a messaging upstream.
func (t ProviderType) IsModel() bool {
	return t == ProviderOpenAI || t == ProviderAnthropic || t == ProviderGoogle || t == ProviderMistral
}

// The keys of a Provider's credentials Secret.
const (
	// ProviderKeyAccountSID and ProviderKeyAuthToken are a twilio account's SID and auth token.
	ProviderKeyAccountSID = "accountSid"
	ProviderKeyAuthToken  = "authToken"
	// ProviderKeyAccessToken is a meta system-user access token; ProviderKeyAppSecret, optional,
	// is the app secret that signs meta's webhooks (without it they are refused);
	// ProviderKeyVerifyToken, optional, answers the webhook subscription's handshake.
	ProviderKeyAccessToken = "accessToken"
	ProviderKeyAppSecret   = "appSecret"
	ProviderKeyVerifyToken = "verifyToken"
	// ProviderKeyUsername and ProviderKeyPassword log in to an smtp relay; ProviderKeyCACert,
	// optional, is the PEM bundle of the CA a relay's certificate is checked against (an
	// internal relay with a private CA) instead of the system's roots.
	ProviderKeyUsername = "username"
	ProviderKeyPassword = "password"
	ProviderKeyCACert   = "caCert"
	// ProviderKeyAPIKey is a model provider's API key.
	ProviderKeyAPIKey = "apiKey"
)

// ProviderSpec is the desired state of a Provider: an account at an upstream provider. A Provider
// in a project's namespace serves that project; one in the installation's namespace is the
// default of every project.
// +kubebuilder:validation:XValidation:rule="self.type == 'telegram' || has(self.secretRef) || (self.type == 'openai' && has(self.baseURL))",message="a Provider needs secretRef, the Secret holding its credentials (telegram excepted, and an openai Provider with baseURL: a local server that takes no key)"
// +kubebuilder:validation:XValidation:rule="!has(self.baseURL) || !isURL(self.baseURL) || ((self.type == 'smtp') == (url(self.baseURL).getScheme() in ['smtp', 'smtps']))",message="baseURL of an smtp Provider is an smtp:// or smtps:// URL; of the other types an http:// or https:// URL"
// +kubebuilder:validation:XValidation:rule="self.type == 'meta' || !has(self.meta)",message="meta settings are for a meta Provider"
// +kubebuilder:validation:XValidation:rule="self.type != 'smtp' || has(self.baseURL)",message="an smtp Provider needs baseURL: the relay, as smtp://host:587 (STARTTLS) or smtps://host:465"
type ProviderSpec struct {
	// Type is the upstream: twilio, telegram, meta or smtp. Set at creation only.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable: create another Provider"
	Type ProviderType `json:"type"`

	// BaseURL replaces the provider's public address: a regional endpoint, a proxy, or a local
	// peer. An absolute http(s) URL (smtp:// or smtps:// host and port for smtp).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['https', 'http', 'smtp', 'smtps']",message="baseURL must be an absolute URL (http:// or https://; smtp:// or smtps:// for smtp)"
	// +optional
	BaseURL string `json:"baseURL,omitempty"`

	// SecretRef names the Secret, in the Provider's namespace, that holds the credentials. The
	// Secret must carry the label messaging.switchboard.io/secret: "true". Keys by type: twilio
	// accountSid and authToken; meta accessToken (and appSecret); smtp username and password;
	// openai, anthropic, google and mistral apiKey.
	// A telegram Provider needs none: bot tokens belong to Senders.
	// +optional
	SecretRef *ProviderSecretRef `json:"secretRef,omitempty"`

	// Default makes this Provider its namespace's default for the channels of its type. When
	// several of one type are, the oldest is.
	// +optional
	Default bool `json:"default,omitempty"`

	// Meta holds what a meta Provider needs besides its Secret.
	// +optional
	Meta *MetaSettings `json:"meta,omitempty"`

	// MessagesPerSecond is how many messages a second one sending address (a number, a
	// WhatsApp number, a bot, a mail domain) may send through this Provider in a broadcast:
	// the throughput the upstream gives that address (Twilio: 1 for a long code, 3 for
	// toll-free, 100 for a short code, or the 10DLC campaign's; WhatsApp Cloud API: 80).
	// Broadcasts sharing an address share it; single sends are not held to it. Unset: broadcasts
	// go as fast as the workers send.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MessagesPerSecond *int32 `json:"messagesPerSecond,omitempty"`

	// Pace says which sends messagesPerSecond holds: broadcasts (default), or all, single sends
	// too, shared by every worker.
	// +kubebuilder:validation:Enum=broadcasts;all
	// +kubebuilder:default=broadcasts
	// +optional
	Pace PaceScope `json:"pace,omitempty"`

	// CircuitBreaker is when the Provider is taken out of its routes' failover order after
	// failing, and when it is tried again.
	// +optional
	CircuitBreaker *CircuitBreaker `json:"circuitBreaker,omitempty"`
}

// PaceScope is which sends a Provider's messagesPerSecond holds.
type PaceScope string

const (
	PaceBroadcasts PaceScope = "broadcasts"
	PaceAll        PaceScope = "all"
)

// CircuitBreaker is a Provider's circuit breaker, shared by every worker: after Failures calls
// in a row that it did not take (refused connections, 5xx, timeouts), it opens for OpenFor:
// routes put it after their other Providers. Then one call probes it (half-open): taken, it
// closes; refused, it opens again.
type CircuitBreaker struct {
	// Failures in a row that open the circuit (default 5).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Failures *int32 `json:"failures,omitempty"`
	// OpenFor is how long the circuit stays open before a probe (default 30s).
	// +optional
	OpenFor *metav1.Duration `json:"openFor,omitempty"`
}

// MetaSettings are a Meta app's public settings.
type MetaSettings struct {
	// AppID is the Meta app's id.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,32}$`
	// +optional
	AppID string `json:"appId,omitempty"`
	// GraphAPIVersion is the Graph API version calls use, e.g. v21.0; empty: Switchboard's.
	// +kubebuilder:validation:Pattern=`^v[0-9]+\.[0-9]+$`
	// +optional
	GraphAPIVersion string `json:"graphApiVersion,omitempty"`
	// EmbeddedSignupConfigID is the Facebook Login for Business configuration of the app's
	// WhatsApp Embedded Signup: invitations of connectionType whatsapp_waba run it.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,32}$`
	// +optional
	EmbeddedSignupConfigID string `json:"embeddedSignupConfigId,omitempty"`
	// DialogURL replaces https://www.facebook.com, where the OAuth dialog of Facebook Login is
	// (a local peer in tests).
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +optional
	DialogURL string `json:"dialogURL,omitempty"`
	// SDKURL replaces https://connect.facebook.net/en_US/sdk.js, the Facebook JS SDK the
	// connection page loads for Embedded Signup.
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +optional
	SDKURL string `json:"sdkURL,omitempty"`
}

// ProviderSecretRef names a Secret in the Provider's namespace.
type ProviderSecretRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ProviderStatus is the observed state of a Provider.
type ProviderStatus struct {
	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready tells whether the credentials are complete and the provider accepts them.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Account is what the provider said of the account when it accepted the credentials: its
	// name and id.
	// +optional
	Account string `json:"account,omitempty"`

	// Circuit is the state of the Provider's circuit breaker: closed, open or halfOpen.
	// +optional
	Circuit string `json:"circuit,omitempty"`
}

// Provider is an account at an upstream provider (Twilio, Meta, Telegram, an SMTP relay).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="Account",type=string,JSONPath=`.status.account`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Circuit",type=string,JSONPath=`.status.circuit`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ProviderSpec   `json:"spec"`
	Status ProviderStatus `json:"status,omitempty"`
}

// ProviderList is a list of Providers.
// +kubebuilder:object:root=true
type ProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Provider{}, &ProviderList{})
}
