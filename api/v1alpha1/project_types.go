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

// Plan is a project's billing plan.
// +kubebuilder:validation:Enum=free;paid
type Plan string

const (
	PlanFree Plan = "free"
	PlanPaid Plan = "paid"
)

// Verification is how far a project's verification has gone. Each step raises the project's
// daily sending ceilings, and the request-rate tier of every project of its team.
// contact_verified is the first step past nothing verified (the owner's email and phone
// confirmed): 200 SMS a day instead of 25.
// +kubebuilder:validation:Enum=none;contact_verified;identity_approved;business_approved;ten_dlc_brand_verified
type Verification string

const (
	VerificationNone             Verification = "none"
	VerificationContact          Verification = "contact_verified"
	VerificationIdentityApproved Verification = "identity_approved"
	VerificationBusinessApproved Verification = "business_approved"
	VerificationTenDLCBrand      Verification = "ten_dlc_brand_verified"
)

// ProjectSpec is the desired state of a project. A project is a namespace: the Project object in it
// holds the settings of the whole namespace, and the REST API's project id is the namespace's name.
// +kubebuilder:validation:XValidation:rule="has(self.parent) == has(oldSelf.parent) && (!has(self.parent) || self.parent == oldSelf.parent)",message="parent is immutable: a sub-account cannot be moved to another parent"
type ProjectSpec struct {
	// DisplayName is the project's human-readable name, shown by GET /v1/me.
	// +kubebuilder:validation:MaxLength=100
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// Plan is the billing plan. Sending limits and allowances depend on it.
	// +kubebuilder:default=free
	// +optional
	Plan Plan `json:"plan,omitempty"`

	// Team names the team the project belongs to; verification tiers apply to every project of a team.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Team string `json:"team,omitempty"`

	// Verification is the project's verification level.
	// +kubebuilder:default=none
	// +optional
	Verification Verification `json:"verification,omitempty"`

	// RequestRateLimit is a request rate per minute set by hand for this project. The automatic
	// tiers never lower it; a tier above it applies instead.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	RequestRateLimit *int32 `json:"requestRateLimit,omitempty"`

	// DailyLimits are ceilings agreed by hand, per day: each replaces the one the plan and
	// verification give (docs/limits.md).
	// +optional
	DailyLimits *DailyLimits `json:"dailyLimits,omitempty"`

	// LiftSuspensionsBefore lifts the sending suspensions risk review made before this time:
	// the resource's way to do what `switchboard project unsuspend` does (docs/risk.md).
	// +optional
	LiftSuspensionsBefore *metav1.Time `json:"liftSuspensionsBefore,omitempty"`

	// ApproveHoldsBefore approves the project's sends risk review held at or before this time,
	// as `switchboard review approve` does for each: the resource's way to decide holds.
	// +optional
	ApproveHoldsBefore *metav1.Time `json:"approveHoldsBefore,omitempty"`

	// RefuseHoldsBefore refuses them (RISK_REJECTED, an SMS's charge returned); for a hold both
	// fields cover, refusal wins.
	// +optional
	RefuseHoldsBefore *metav1.Time `json:"refuseHoldsBefore,omitempty"`

	// Parent is the namespace of the parent project when this project is a sub-account. Set at
	// creation only.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Parent string `json:"parent,omitempty"`

	// SubAccount holds the parent's settings of a sub-account.
	// +optional
	SubAccount *SubAccountSettings `json:"subAccount,omitempty"`

	// RestrictTestKeys reserves every change to what live traffic shares (senders and their
	// channels, webhooks, templates, email domains, invitations, 10DLC, sub-accounts) to live
	// keys: test keys then send through the sandbox, keep their own contacts and read, nothing
	// else. Off, test keys configure the project as the spec's quickstarts do
	// (docs/guarantees.md).
	// +optional
	RestrictTestKeys bool `json:"restrictTestKeys,omitempty"`

	// MaxSubAccounts is how many sub-accounts (active or not) this project may have, set by the
	// operator; unset, the installation's --max-sub-accounts applies.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	MaxSubAccounts *int32 `json:"maxSubAccounts,omitempty"`

	// Email holds the project's email settings.
	// +optional
	Email *ProjectEmail `json:"email,omitempty"`

	// Retention keeps the project's data for less time than the installation does
	// (docs/data-lifecycle.md); unset, the installation's settings apply. A setting longer than
	// the installation's has the installation's effect: data is not kept past it.
	// +optional
	Retention *ProjectRetention `json:"retention,omitempty"`
}

// ProjectRetention is how long a project's data is kept, in days.
type ProjectRetention struct {
	// MessagesDays: the project's messages (their text, content, metadata and media) are gone
	// from the API once this old.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3650
	// +optional
	MessagesDays *int32 `json:"messagesDays,omitempty"`
}

// UnsubscribeScope is what an unsubscribe on a project's suppression list refuses.
// +kubebuilder:validation:Enum=broadcasts;all
type UnsubscribeScope string

const (
	// UnsubscribeScopeBroadcasts refuses only broadcast email to the address.
	UnsubscribeScopeBroadcasts UnsubscribeScope = "broadcasts"
	// UnsubscribeScopeAll refuses every email to the address.
	UnsubscribeScopeAll UnsubscribeScope = "all"
)

// ProjectEmail holds a project's email settings.
type ProjectEmail struct {
	// UnsubscribeScope is what an unsubscribe stops: an `unsubscribe` entry on the project's
	// suppression list, made when a recipient uses a broadcast email's one-click link or its
	// mailto (or by POST /v1/email-suppressions with reason unsubscribe).
	//   - broadcasts (the default, when unset): only broadcast (marketing) email to the address
	//     is refused; single sends (transactional mail such as receipts and password resets)
	//     still go, as mailbox providers tell marketing from transactional mail.
	//   - all: every email to the address is refused, single sends too.
	// Bounces, complaints and manual entries refuse every email either way.
	// +optional
	UnsubscribeScope UnsubscribeScope `json:"unsubscribeScope,omitempty"`
}

// DailyLimits are agreed daily ceilings (messages per UTC day); an unset one is the plan's.
type DailyLimits struct {
	// SMS counts sms and sms_oneway together.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SMS *int64 `json:"sms,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	Voice *int64 `json:"voice,omitempty"`
	// Conversational counts whatsapp, telegram, instagram and messenger together.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Conversational *int64 `json:"conversational,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	Email *int64 `json:"email,omitempty"`
}

// SubAccountSettings are what a parent project keeps about one of its sub-accounts.
type SubAccountSettings struct {
	// ExternalID is the parent's own reference for the sub-account.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	ExternalID string `json:"externalId,omitempty"`

	// CreditLimit is how far, in cents, the sub-account may spend past a zero balance. The
	// parent pays what it spends past its balance (docs/limits.md#sub-accounts), so the API
	// refuses a limit above what the parent's balance could pay.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CreditLimit *int64 `json:"creditLimit,omitempty"`

	// Metadata is free-form JSON the parent attaches.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`

	// Deactivated stops the sub-account: its keys are refused.
	// +optional
	Deactivated bool `json:"deactivated,omitempty"`
}

// ProjectStatus is the observed state of a project.
type ProjectStatus struct {
	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// RequestRateLimit is the request rate per minute in force: the highest of the team's
	// verification tier and spec.requestRateLimit.
	// +optional
	RequestRateLimit int32 `json:"requestRateLimit,omitempty"`

	// Conditions: Ready tells whether this object is the namespace's project and its references resolve.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Project holds the settings of one Switchboard project (its namespace).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=proj
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.plan`
// +kubebuilder:printcolumn:name="Team",type=string,JSONPath=`.spec.team`
// +kubebuilder:printcolumn:name="Verification",type=string,JSONPath=`.spec.verification`,priority=1
// +kubebuilder:printcolumn:name="Rate",type=integer,JSONPath=`.status.requestRateLimit`,priority=1
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Project struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ProjectSpec   `json:"spec"`
	Status ProjectStatus `json:"status,omitempty"`
}

// ProjectList is a list of Projects.
// +kubebuilder:object:root=true
type ProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Project `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Project{}, &ProjectList{})
}
