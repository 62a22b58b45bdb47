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

// Channel is a channel a sender can send and receive on (the spec's channel values less `auto`).
// +kubebuilder:validation:Enum=sms;sms_oneway;whatsapp;telegram;email;instagram;messenger;voice
type Channel string

const (
	ChannelSMS       Channel = "sms"
	ChannelSMSOneway Channel = "sms_oneway"
	ChannelWhatsApp  Channel = "whatsapp"
	ChannelTelegram  Channel = "telegram"
	ChannelEmail     Channel = "email"
	ChannelInstagram Channel = "instagram"
	ChannelMessenger Channel = "messenger"
	ChannelVoice     Channel = "voice"
)

// Transport says where a sender's live messages go. Test keys (svc_test_) always send through
// the sandbox, whatever the sender says.
// +kubebuilder:validation:Enum=providers;sandbox
type Transport string

const (
	// TransportProviders sends live messages through the Provider each channel uses (the one it
	// names, else its project's default, else the installation's).
	TransportProviders Transport = "providers"
	// TransportSandbox simulates every message of the sender in process, live ones too: a
	// sender for demos and staging, which never reaches a provider.
	TransportSandbox Transport = "sandbox"
)

// SignatureVersion is the signing scheme of webhook deliveries.
// +kubebuilder:validation:Enum=v1;"v1+v2";v2
type SignatureVersion string

const (
	SignatureV1   SignatureVersion = "v1"
	SignatureV1V2 SignatureVersion = "v1+v2"
	SignatureV2   SignatureVersion = "v2"
)

// WebhookEvent is an event name a webhook can subscribe to.
// +kubebuilder:validation:Enum=message.queued;message.sent;message.delivered;message.read;message.status;message.failed;message.inbound;message.unsupported;broadcast.status_changed;conversation.new;template.status_changed;invitation.status_changed;call.initiated;call.answered;call.completed;call.failed;domain.verified;domain.failed
type WebhookEvent string

// SenderSpec is the desired state of a sender: a sending identity inside a project. A channel is
// on (status.channels) when it is configured — its number, account or address is there — and
// activated. A phone number alone enables neither SMS nor voice; a connected account that is not
// activated is off.
// +kubebuilder:validation:XValidation:rule="!has(self.voice) || !self.voice.enabled || has(self.phoneNumber)",message="voice needs a phone number provisioned for calls: set phoneNumber first"
type SenderSpec struct {
	// DisplayName is the sender's name (`name` on the REST API).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	DisplayName string `json:"displayName"`

	// Default marks the project's default sender, used when a send names none.
	// +optional
	Default bool `json:"default,omitempty"`

	// Transport is where the sender's live messages go: through Providers, or simulated.
	// +kubebuilder:default=providers
	// +optional
	Transport Transport `json:"transport,omitempty"`

	// PhoneNumber is the sender's number in E.164, used by sms and voice once they are activated.
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	// +optional
	PhoneNumber string `json:"phoneNumber,omitempty"`

	// SMS is two-way SMS on PhoneNumber.
	// +optional
	SMS *Activation `json:"sms,omitempty"`

	// SMSOneway is one-way SMS: enabling it needs nothing else and is immediate.
	// +optional
	SMSOneway *Enablement `json:"smsOneway,omitempty"`

	// Voice is calls on PhoneNumber.
	// +optional
	Voice *Enablement `json:"voice,omitempty"`

	// WhatsApp is a connected WhatsApp business account.
	// +optional
	WhatsApp *ConnectedAccount `json:"whatsapp,omitempty"`

	// Telegram is a connected Telegram bot.
	// +optional
	Telegram *ConnectedAccount `json:"telegram,omitempty"`

	// Instagram is a connected Instagram account.
	// +optional
	Instagram *ConnectedAccount `json:"instagram,omitempty"`

	// Messenger is a connected page's Messenger inbox.
	// +optional
	Messenger *ConnectedAccount `json:"messenger,omitempty"`

	// Email is the email channel.
	// +optional
	Email *EmailSettings `json:"email,omitempty"`

	// Webhook receives the sender's events.
	// +optional
	Webhook *SenderWebhook `json:"webhook,omitempty"`

	// Routes send a channel's messages through several Providers: in failover order, by least
	// cost or by weight, optionally per destination prefix. A channel with no route that matches
	// the destination uses its channel's provider, else the default Provider.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Routes []ChannelRoute `json:"routes,omitempty"`
}

// Activation switches a configured channel on.
type Activation struct {
	// Active switches the channel on.
	// +optional
	Active bool `json:"active,omitempty"`

	// Provider names the Provider this channel sends through, in the project's namespace or the
	// installation's; empty takes the project's default Provider for the channel, else the
	// installation's.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Provider string `json:"provider,omitempty"`
}

// Enablement switches a channel that needs no connection on.
type Enablement struct {
	// Enabled switches the channel on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// Provider names the Provider this channel sends through, in the project's namespace or the
	// installation's; empty takes the project's default Provider for the channel, else the
	// installation's.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Provider string `json:"provider,omitempty"`
}

// ConnectedAccount is an account at a provider, connected to the sender (through an invitation,
// or by hand), with its credentials in a Secret.
type ConnectedAccount struct {
	// AccountID is the provider's id: the phone number id (WhatsApp), the bot id (Telegram), the
	// account or page id (Instagram, Messenger).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	AccountID string `json:"accountId"`

	// DisplayName is what the provider shows: the verified name, the bot's username, the page name.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// DisplayPhoneNumber is the WhatsApp number as the provider shows it.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	DisplayPhoneNumber string `json:"displayPhoneNumber,omitempty"`

	// BusinessAccountID is the WhatsApp business account (WABA) the number belongs to.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	BusinessAccountID string `json:"businessAccountId,omitempty"`

	// CredentialsRef names the Secret key holding the account's token. The sandbox needs none.
	// +optional
	CredentialsRef *SecretKeyRef `json:"credentialsRef,omitempty"`

	// Active switches the connected account on; connected but not active, it is off.
	// +optional
	Active bool `json:"active,omitempty"`

	// Provider names the Provider this channel sends through, in the project's namespace or the
	// installation's; empty takes the project's default Provider for the channel, else the
	// installation's.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Provider string `json:"provider,omitempty"`

	// Profile is the WhatsApp business profile shown to contacts (WhatsApp accounts only).
	// +optional
	Profile *BusinessProfile `json:"profile,omitempty"`

	// Coexistence says the WhatsApp number was onboarded from the WhatsApp Business app, which
	// it keeps using: its contacts and chat history may be synced once (docs/whatsapp-sync.md).
	// WhatsApp accounts only.
	// +optional
	Coexistence bool `json:"coexistence,omitempty"`
}

// BusinessProfile is a WhatsApp business profile (spec: WhatsApp business profile update).
type BusinessProfile struct {
	// +kubebuilder:validation:MaxLength=139
	// +optional
	About string `json:"about,omitempty"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Address string `json:"address,omitempty"`
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Description string `json:"description,omitempty"`
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Email string `json:"email,omitempty"`
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	Websites []string `json:"websites,omitempty"`
	// +kubebuilder:validation:Enum=UNDEFINED;OTHER;AUTO;BEAUTY;APPAREL;EDU;ENTERTAIN;EVENT_PLAN;FINANCE;GROCERY;GOVT;HOTEL;HEALTH;NONPROFIT;PROF_SERVICES;RETAIL;TRAVEL;RESTAURANT;NOT_A_BIZ
	// +optional
	Vertical string `json:"vertical,omitempty"`
	// ProfilePictureURL is the picture shown to contacts.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	ProfilePictureURL string `json:"profilePictureUrl,omitempty"`
}

// EmailSettings is the email channel of a sender.
type EmailSettings struct {
	// Address is the from-address; its domain must be a verified email domain of the project.
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Pattern=`^[^@\s]+@[^@\s]+\.[^@\s]+$`
	Address string `json:"address"`

	// FromName is the display name of the from-address.
	// +kubebuilder:validation:MaxLength=100
	// +optional
	FromName string `json:"fromName,omitempty"`

	// ReceivingEnabled asks for inbound mail; it takes effect only with a verified inbound MX.
	// +optional
	ReceivingEnabled bool `json:"receivingEnabled,omitempty"`

	// CatchAllEnabled receives mail for any local part at the domain; only with receiving on.
	// +optional
	CatchAllEnabled bool `json:"catchAllEnabled,omitempty"`
}

// SenderWebhook is where a sender's events are delivered.
// +kubebuilder:validation:XValidation:rule="!(oldSelf.signatureVersion == 'v1' && self.signatureVersion == 'v2') && !(oldSelf.signatureVersion == 'v2' && self.signatureVersion == 'v1')",message="signatureVersion moves between v1 and v2 only through v1+v2"
type SenderWebhook struct {
	// URL receives the deliveries: https (plain http only reaches loopback receivers in dev), with
	// no credentials (user:password@) — receivers authenticate deliveries by their signature.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['https', 'http']",message="url must be an absolute http(s) URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^:/?#]*://[^/?#]*@')",message="url must not carry credentials (user:password@)"
	URL string `json:"url"`

	// Active switches deliveries on and off without losing the configuration.
	// +kubebuilder:default=true
	// +optional
	Active *bool `json:"active,omitempty"`

	// Events are the event names delivered; empty means all.
	// +listType=set
	// +optional
	Events []WebhookEvent `json:"events,omitempty"`

	// SignatureVersion is the signing scheme. New webhooks use v2; moving between v1 and v2 goes
	// through v1+v2.
	// +kubebuilder:default=v2
	// +optional
	SignatureVersion SignatureVersion `json:"signatureVersion,omitempty"`

	// SecretRef names a Secret key holding the signing secret. The Secret must carry the label
	// messaging.switchboard.io/secret: "true". Without it the controller generates a
	// Secret "<sender>-webhook", owned by the Sender.
	// +optional
	SecretRef *SecretKeyRef `json:"secretRef,omitempty"`
}

// SecretKeyRef names one key of a Secret in the same namespace.
type SecretKeyRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// SenderStatus is the observed state of a sender.
type SenderStatus struct {
	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready tells whether the sender can send.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Channels are the channels the sender can send on now (configured and activated).
	// +listType=set
	// +optional
	Channels []Channel `json:"channels,omitempty"`

	// WebhookSecret is the Secret key deliveries are signed with, once it exists.
	// +optional
	WebhookSecret *SecretKeyRef `json:"webhookSecret,omitempty"`

	// EmailReceivingEnabled is whether inbound mail is on: asked for, and possible.
	// +optional
	EmailReceivingEnabled bool `json:"emailReceivingEnabled,omitempty"`

	// EmailCatchAllEnabled is whether catch-all is on: asked for, with receiving on.
	// +optional
	EmailCatchAllEnabled bool `json:"emailCatchAllEnabled,omitempty"`

	// IsDefault is whether this is the project's default sender: asked for, and the oldest of
	// those that ask.
	// +optional
	IsDefault bool `json:"isDefault,omitempty"`

	// Routes are the Providers each channel sends through, as resolved now.
	// +listType=atomic
	// +optional
	Routes []ResolvedRoute `json:"routes,omitempty"`

	// Activity is the sender's traffic, from Postgres, refreshed by the controller.
	// +optional
	Activity *SenderActivity `json:"activity,omitempty"`

	// WhatsApp is what the provider reports of the sender's WhatsApp number and its business
	// account, read by the controller through a meta Provider (absent on the sandbox).
	// +optional
	WhatsApp *WhatsAppStatus `json:"whatsApp,omitempty"`
}

// WhatsAppStatus is what Meta reports of a WhatsApp number and its business account.
type WhatsAppStatus struct {
	// PhoneNumberID is the number these figures were read for.
	PhoneNumberID string `json:"phoneNumberId"`
	// DisplayPhoneNumber and VerifiedName are the number and name contacts see.
	// +optional
	DisplayPhoneNumber string `json:"displayPhoneNumber,omitempty"`
	// +optional
	VerifiedName string `json:"verifiedName,omitempty"`
	// QualityRating is Meta's rating of the number: GREEN, YELLOW, RED or UNKNOWN.
	// +optional
	QualityRating string `json:"qualityRating,omitempty"`
	// CanSendTemplates says template messages (which Meta bills) can go out: the business
	// account has a payment method and Meta does not block it.
	CanSendTemplates bool `json:"canSendTemplates"`
	// PaymentMethodStatus is "active" once the business account has a payment method, "missing"
	// before.
	// +optional
	PaymentMethodStatus string `json:"paymentMethodStatus,omitempty"`
	// SetupStatus is "complete" once the number is connected, its code verified and its display
	// name approved; otherwise what is pending ("pending_verification", "pending_name_review",
	// "disconnected"…).
	// +optional
	SetupStatus string `json:"setupStatus,omitempty"`
	// CheckedAt is when Meta was last asked; Error what went wrong then, if anything (the
	// figures are then those of the last good read).
	CheckedAt metav1.Time `json:"checkedAt"`
	// +optional
	Error string `json:"error,omitempty"`
}

// SenderActivity summarises what lives in Postgres for a sender.
type SenderActivity struct {
	// Outbound24h and Inbound24h count the messages of the last 24 hours.
	Outbound24h int64 `json:"outbound24h"`
	Inbound24h  int64 `json:"inbound24h"`
	// LastMessageID and LastMessageAt name the sender's latest message.
	// +optional
	LastMessageID string `json:"lastMessageId,omitempty"`
	// +optional
	LastMessageAt *metav1.Time `json:"lastMessageAt,omitempty"`
	// RefreshedAt is when these figures were read.
	RefreshedAt metav1.Time `json:"refreshedAt"`
}

// Sender is a sending identity inside a project.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.spec.transport`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="Channels",type=string,JSONPath=`.status.channels`,priority=1
// +kubebuilder:printcolumn:name="Sent 24h",type=integer,JSONPath=`.status.activity.outbound24h`,priority=1
// +kubebuilder:printcolumn:name="Last Message",type=date,JSONPath=`.status.activity.lastMessageAt`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Sender struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   SenderSpec   `json:"spec"`
	Status SenderStatus `json:"status,omitempty"`
}

// SenderList is a list of Senders.
// +kubebuilder:object:root=true
type SenderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sender `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Sender{}, &SenderList{})
}
