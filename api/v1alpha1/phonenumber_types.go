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

// PhoneCapability is something a phone number can do.
// +kubebuilder:validation:Enum=sms;mms;voice
type PhoneCapability string

const (
	CapabilitySMS   PhoneCapability = "sms"
	CapabilityMMS   PhoneCapability = "mms"
	CapabilityVoice PhoneCapability = "voice"
)

// PhoneNumberOwnership is how a project's claim on a number is proved.
// +kubebuilder:validation:Enum=Assigned;ProviderAccount;Sandbox
type PhoneNumberOwnership string

const (
	// OwnershipAssigned: an operator assigned the number, with a PhoneNumber in the
	// installation's namespace (which only operators write).
	OwnershipAssigned PhoneNumberOwnership = "Assigned"
	// OwnershipProviderAccount: the project's own twilio Provider (in its namespace) lists the
	// number among its account's IncomingPhoneNumbers.
	OwnershipProviderAccount PhoneNumberOwnership = "ProviderAccount"
	// OwnershipSandbox: the number is one of the sandbox's test numbers (bought with a test
	// key), which every project may hold: nobody can be reached at them.
	OwnershipSandbox PhoneNumberOwnership = "Sandbox"
)

// ConditionNumberOwned is the Sender condition that says whether its project owns its phone
// number; while it is False, live sms, sms_oneway and voice from the number are refused.
const ConditionNumberOwned = "NumberOwned"

// Reasons of a PhoneNumber's Ready condition (Ready when it holds the number: ReasonReady).
const (
	// ReasonNumberConflict: the claim is proved, and another PhoneNumber holds the number (one
	// owner at a time: the oldest proved claim).
	ReasonNumberConflict = "Conflict"
	// ReasonNumberNotOwned: nothing proves the claim: the project's own twilio account does not
	// list the number, or the project has no twilio Provider of its own.
	ReasonNumberNotOwned = "NotOwned"
	// ReasonNumberInvalidProject: the PhoneNumber names no project it may assign the number to
	// (one in the installation's namespace without spec.project, one in a project's namespace
	// naming another project).
	ReasonNumberInvalidProject = "InvalidProject"
	// ReasonNumberSuspended: the number's monthly renewal could not be paid (its Paid condition
	// is False): it is kept, and unusable until the project's balance pays it.
	ReasonNumberSuspended = "Suspended"
)

// ConditionNumberPaid is the condition of a bought PhoneNumber that says whether its month is
// paid; the renewer writes it (reasons Renewed, RenewalUnpaid).
const ConditionNumberPaid = "Paid"

// Reasons of a PhoneNumber's Paid condition.
const (
	ReasonNumberRenewed       = "Renewed"
	ReasonNumberRenewalUnpaid = "RenewalUnpaid"
)

// Annotations and finalizer of the PhoneNumbers the API buys.
const (
	// PhoneNumberPurchaseAnnotation names the purchase (its id) that bought the number through
	// the API; its money is kept with it.
	PhoneNumberPurchaseAnnotation = "messaging.switchboard.io/purchase"
	// PhoneNumberSIDAnnotation is the provider's id of a bought number (Twilio: PN…), which
	// releasing it needs.
	PhoneNumberSIDAnnotation = "messaging.switchboard.io/number-sid"
	// PhoneNumberKeepAnnotation ("true") keeps the number in the provider account when its
	// PhoneNumber is deleted; without it, deleting a bought number releases it.
	PhoneNumberKeepAnnotation = "messaging.switchboard.io/keep-number"
	// PhoneNumberReleaseFinalizer holds a bought PhoneNumber until its number is released.
	PhoneNumberReleaseFinalizer = "messaging.switchboard.io/release-number"
	// PhoneNumberNameAnnotation is the project's name for the number (the API's name). An
	// annotation, not spec: renaming a number changes nothing of its claim, so nothing that
	// waits on its status (its senders) sees it being checked again.
	PhoneNumberNameAnnotation = "messaging.switchboard.io/display-name"
)

// Reasons of a Sender's NumberOwned condition.
const (
	// ReasonNumberOwned: a Ready PhoneNumber holds the number for the Sender's project.
	ReasonNumberOwned = "Owned"
	// ReasonSandboxNumber: the number is one of the sandbox's test numbers, which no project owns
	// and every project may use.
	ReasonSandboxNumber = "SandboxNumber"
	// ReasonOwnershipPending: a PhoneNumber that can prove the number is being made or checked.
	ReasonOwnershipPending = "OwnershipPending"
	// ReasonNumberConflict and ReasonNumberNotOwned (above) also apply: another project holds
	// the number; nothing proves this project's claim.
)

// Annotations and labels of the PhoneNumbers the Sender controller makes.
const (
	// PhoneNumberForSenderAnnotation names the Sender a PhoneNumber was made for.
	PhoneNumberForSenderAnnotation = "messaging.switchboard.io/for-sender"
	// PhoneNumberCheckAnnotation asks the controller to ask the project's accounts again now (a
	// new value does): the API sets it when it has just seen the account list the number.
	PhoneNumberCheckAnnotation = "messaging.switchboard.io/check-requested"
	// PhoneNumberAdoptedLabel marks the assignments made at an upgrade for numbers Senders held
	// before ownership was checked ("true"): an operator reviews them.
	PhoneNumberAdoptedLabel = "messaging.switchboard.io/adopted"
)

// PhoneNumberSpec is a claim on a phone number for a project. In the installation's namespace it
// is an operator's assignment of the number to spec.project; in a project's namespace it is that
// project's claim, proved by the project's own twilio Provider listing the number. A number has
// one owner at a time: of the proved claims, the one that holds it keeps it, else the oldest.
// +kubebuilder:validation:XValidation:rule="has(oldSelf.provider) == has(self.provider)",message="provider is set at creation only: create another PhoneNumber"
type PhoneNumberSpec struct {
	// Number is the phone number in E.164. Set at creation only.
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="number is immutable: create another PhoneNumber"
	Number string `json:"number"`

	// Project is the project (its namespace) the number is for. Required in the installation's
	// namespace, where an operator assigns numbers; in a project's namespace it may only name
	// that project (empty: that project).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Project string `json:"project,omitempty"`

	// Provider names the twilio Provider, in the PhoneNumber's namespace, whose account holds
	// the number. In a project's namespace the claim is proved by that account listing it
	// (empty: any twilio Provider of the namespace). Set at creation only.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="provider is immutable: create another PhoneNumber"
	// +optional
	Provider string `json:"provider,omitempty"`

	// Capabilities are what the number can do (sms, mms, voice), as the operator assigns it.
	// Informative: the provider refuses what its number cannot do. Empty: what the account
	// holding it reports.
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	// +optional
	Capabilities []PhoneCapability `json:"capabilities,omitempty"`
}

// PhoneNumberAccount is what the provider account that holds a number reports of it.
type PhoneNumberAccount struct {
	// Provider is the Provider, in the PhoneNumber's namespace, whose account lists the number.
	Provider string `json:"provider"`
	// NumberSID is the provider's id of the number (Twilio: its IncomingPhoneNumber's PN sid).
	// +optional
	NumberSID string `json:"numberSid,omitempty"`
	// Capabilities are what the account says the number can do.
	// +listType=set
	// +optional
	Capabilities []PhoneCapability `json:"capabilities,omitempty"`
	// CheckedAt is when the account last listed the number.
	CheckedAt metav1.Time `json:"checkedAt"`
}

// PhoneNumberStatus is the observed state of a PhoneNumber.
type PhoneNumberStatus struct {
	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready tells whether this PhoneNumber holds the number for its project.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Project is the project the claim is for (it holds the number while Ready).
	// +optional
	Project string `json:"project,omitempty"`

	// Ownership is how the claim is proved; empty while nothing proves it.
	// +optional
	Ownership PhoneNumberOwnership `json:"ownership,omitempty"`

	// Account is what the project's own provider account reports of the number
	// (ownership ProviderAccount).
	// +optional
	Account *PhoneNumberAccount `json:"account,omitempty"`

	// Capabilities are what the number can do: spec.capabilities, else what its account reports.
	// +listType=set
	// +optional
	Capabilities []PhoneCapability `json:"capabilities,omitempty"`

	// Senders are the project's Senders with this phone number, by name.
	// +listType=set
	// +optional
	Senders []string `json:"senders,omitempty"`

	// Purchase is what the project pays for a number bought through the API; the API and the
	// renewer write it.
	// +optional
	Purchase *PhoneNumberPurchase `json:"purchase,omitempty"`
}

// PhoneNumberPurchase is a bought number's money.
type PhoneNumberPurchase struct {
	// ID is the purchase's id (the annotation's).
	ID string `json:"id"`
	// MonthlyPrice and UpfrontPrice are what the project pays, in USD, from the PriceList at
	// purchase.
	MonthlyPrice USDAmount `json:"monthlyPrice"`
	// +optional
	UpfrontPrice USDAmount `json:"upfrontPrice,omitempty"`
	// BoughtAt is when the provider sold the number.
	BoughtAt metav1.Time `json:"boughtAt"`
	// PaidUntil is when its paid month ends: the next renewal.
	PaidUntil metav1.Time `json:"paidUntil"`
}

// PhoneNumber is a phone number a project owns: assigned by an operator, or proved by the
// project's own provider account. Only its owner sends from it, receives its inbound messages
// and registers it for 10DLC (docs/resources.md#phonenumber).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="Number",type=string,JSONPath=`.spec.number`
// +kubebuilder:printcolumn:name="Project",type=string,JSONPath=`.status.project`
// +kubebuilder:printcolumn:name="Sender",type=string,JSONPath=`.status.senders`
// +kubebuilder:printcolumn:name="Ownership",type=string,JSONPath=`.status.ownership`,priority=1
// +kubebuilder:printcolumn:name="Monthly",type=string,JSONPath=`.status.purchase.monthlyPrice`
// +kubebuilder:printcolumn:name="Paid",type=string,JSONPath=`.status.conditions[?(@.type=="Paid")].status`,priority=1
// +kubebuilder:printcolumn:name="Capabilities",type=string,JSONPath=`.status.capabilities`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PhoneNumber struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   PhoneNumberSpec   `json:"spec"`
	Status PhoneNumberStatus `json:"status,omitempty"`
}

// PhoneNumberList is a list of PhoneNumbers.
// +kubebuilder:object:root=true
type PhoneNumberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PhoneNumber `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PhoneNumber{}, &PhoneNumberList{})
}
