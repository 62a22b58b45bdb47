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

// ConnectionType is what an invitation connects.
// +kubebuilder:validation:Enum=whatsapp_waba;messenger
type ConnectionType string

const (
	// ConnectionWhatsApp connects a WhatsApp business account through Meta's Embedded Signup.
	ConnectionWhatsApp ConnectionType = "whatsapp_waba"
	// ConnectionMessenger connects a Facebook page's Messenger inbox through Facebook Login.
	ConnectionMessenger ConnectionType = "messenger"
)

// InvitationSpec is an invitation to a client to connect one channel of theirs to the project
// (the namespace): the connection yields a Sender there.
// +kubebuilder:validation:XValidation:rule="self.connectionType == 'whatsapp_waba' || (!has(self.phoneNumberId) && !has(self.allowedPhoneCountries))",message="phoneNumberId and allowedPhoneCountries are only for whatsapp_waba invitations"
type InvitationSpec struct {
	// ClientName, ClientEmail and ClientPhone say who is invited; the page greets them by name.
	// +kubebuilder:validation:MaxLength=100
	// +optional
	ClientName string `json:"clientName,omitempty"`
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Format=email
	// +optional
	ClientEmail string `json:"clientEmail,omitempty"`
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	// +optional
	ClientPhone string `json:"clientPhone,omitempty"`

	// ConnectionType is the channel the client connects.
	// +kubebuilder:default=whatsapp_waba
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="connectionType is immutable: create another invitation"
	// +optional
	ConnectionType ConnectionType `json:"connectionType,omitempty"`

	// PhoneNumberID is a WhatsApp phone number id of the service's that the client registers
	// instead of a number of their own (whatsapp_waba only).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[0-9]+$`
	// +optional
	PhoneNumberID string `json:"phoneNumberId,omitempty"`

	// AllowedPhoneCountries limits the numbers the client may connect to these countries
	// (ISO 3166-1 alpha-2 codes; whatsapp_waba only).
	// +kubebuilder:validation:MaxItems=250
	// +kubebuilder:validation:items:Pattern=`^[A-Z]{2}$`
	// +listType=set
	// +optional
	AllowedPhoneCountries []string `json:"allowedPhoneCountries,omitempty"`

	// ExpiresInDays is how long the link works after creation (and after each resend).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	// +kubebuilder:default=7
	// +optional
	ExpiresInDays int32 `json:"expiresInDays,omitempty"`

	// ResendRequestedAt resends the invitation: set to a time later than status.resentAt, it
	// moves the invitation back to pending with a new expiry (`switchboard invitation resend`
	// sets it to now).
	// +optional
	ResendRequestedAt *metav1.Time `json:"resendRequestedAt,omitempty"`
}

// InvitationState is an invitation's stored state. Expired is not stored: an invitation whose
// status.expiresAt has passed reads as expired, whatever it stores, until it is resent.
// +kubebuilder:validation:Enum=pending;in_progress;completed;failed;cancelled
type InvitationState string

const (
	InvitationPending    InvitationState = "pending"
	InvitationInProgress InvitationState = "in_progress"
	InvitationCompleted  InvitationState = "completed"
	InvitationFailed     InvitationState = "failed"
	InvitationCancelled  InvitationState = "cancelled"
	// InvitationExpired is read, never stored.
	InvitationExpired InvitationState = "expired"
)

// Failure reasons of a failed invitation (the spec's).
const (
	FailureSocialCancelled     = "social_cancelled"
	FailureSocialNotAuthorized = "social_not_authorized"
	FailureSignupAbandoned     = "signup_abandoned"
	FailureProviderNoPages     = "provider_no_pages"
	FailureInternalError       = "internal_error"
)

// InvitationAccount is the provider account a completed invitation connected.
type InvitationAccount struct {
	// Channel is whatsapp or messenger.
	// +kubebuilder:validation:Enum=whatsapp;messenger
	Channel string `json:"channel"`
	// ID is the provider's id of it: a WhatsApp phone number id, a page id.
	ID string `json:"id"`
	// Name is its verified name, or the page's name.
	// +optional
	Name string `json:"name,omitempty"`
}

// InvitationStatus is an invitation's stored state and what the connection produced.
type InvitationStatus struct {
	// State is the stored state; a missing one is pending.
	// +optional
	State InvitationState `json:"state,omitempty"`
	// PreviousState is the state before the last change of State, and ChangeID names that
	// change: invitation.status_changed is written once per change id.
	// +optional
	PreviousState InvitationState `json:"previousState,omitempty"`
	// +optional
	ChangeID string `json:"changeId,omitempty"`
	// TokenHash is the SHA-256 of the link's token (hex); the token is never stored.
	// +optional
	TokenHash string `json:"tokenHash,omitempty"`
	// ExpiresAt is when the link stops working.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// ViewedAt, StartedAt, CompletedAt, FailedAt and CancelledAt are when the client first
	// opened the link, last started connecting, completed, last failed, and when it was cancelled.
	// +optional
	ViewedAt *metav1.Time `json:"viewedAt,omitempty"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// +optional
	FailedAt *metav1.Time `json:"failedAt,omitempty"`
	// +optional
	CancelledAt *metav1.Time `json:"cancelledAt,omitempty"`
	// UpdatedAt is the last change of this status.
	// +optional
	UpdatedAt *metav1.Time `json:"updatedAt,omitempty"`
	// ResentAt is the resend request last carried out (spec.resendRequestedAt).
	// +optional
	ResentAt *metav1.Time `json:"resentAt,omitempty"`
	// FailureReason says why it failed: social_cancelled, social_not_authorized,
	// signup_abandoned, provider_no_pages or internal_error.
	// +optional
	FailureReason string `json:"failureReason,omitempty"`
	// Sender is the Sender the connection created in the project.
	// +optional
	Sender string `json:"sender,omitempty"`
	// ConnectedAccount is what the client connected.
	// +optional
	ConnectedAccount *InvitationAccount `json:"connectedAccount,omitempty"`
	// WABAAccountID is the WhatsApp business account of a whatsapp_waba connection.
	// +optional
	WABAAccountID string `json:"wabaAccountId,omitempty"`
}

// Invitation asks a client to connect a WhatsApp business account or a Facebook page to the
// project, through a link to the hosted connection page.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=inv
// +kubebuilder:printcolumn:name="Client",type=string,JSONPath=`.spec.clientName`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.connectionType`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`,description="when the link stops working (a date column would show a future time as <invalid>)"
// +kubebuilder:printcolumn:name="Sender",type=string,JSONPath=`.status.sender`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Invitation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   InvitationSpec   `json:"spec,omitempty"`
	Status InvitationStatus `json:"status,omitempty"`
}

// InvitationList is a list of Invitations.
// +kubebuilder:object:root=true
type InvitationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Invitation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Invitation{}, &InvitationList{})
}
