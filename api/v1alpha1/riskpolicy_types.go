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

// RiskOutcome is what a matching risk rule does to a message.
// +kubebuilder:validation:Enum=hold;refuse;block
type RiskOutcome string

// RiskRule is a CEL expression over a send's features (docs/risk.md) that, when true, gives
// its outcome.
type RiskRule struct {
	// Name identifies the rule in decisions and logs.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Expression is CEL over message, project and lists, and must give a bool.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`
	// Outcome: hold for an operator, refuse (RISK_REJECTED) or block outright (RISK_BLOCKED).
	Outcome RiskOutcome `json:"outcome"`
	// Reason is what the decision says (to the operator, and as a failed message's
	// errorMessage).
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Reason string `json:"reason,omitempty"`
}

// RiskPolicySpec is how sends (sms, sms_oneway, email, voice) are reviewed. The RiskPolicy in a
// project's namespace reviews that project; otherwise the one in the installation's namespace
// reviews every project. With none, nothing is reviewed.
// +kubebuilder:validation:XValidation:rule="self.reviewer != 'external' || has(self.external)",message="reviewer external needs spec.external"
type RiskPolicySpec struct {
	// Reviewer decides sends: rules (spec.rules, the default) or external (the installation's
	// moderation service, spec.external).
	// +kubebuilder:validation:Enum=rules;external
	// +kubebuilder:default=rules
	// +optional
	Reviewer string `json:"reviewer,omitempty"`
	// External is the moderation service an external reviewer asks (docs/risk.md).
	// +optional
	External *ExternalReviewer `json:"external,omitempty"`

	// Rules are evaluated on every reviewed send; the most severe outcome that matches decides
	// (block, then refuse, then hold).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=200
	// +optional
	Rules []RiskRule `json:"rules,omitempty"`
	// Lists are named word or domain lists rules refer to as lists.<name>.
	// +optional
	Lists map[string][]string `json:"lists,omitempty"`
	// ReviewWindow is how long a held message waits for an operator before it fails with
	// RISK_REVIEW_EXPIRED: at most 7 days (168h).
	// +kubebuilder:default="2h"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('168h')",message="reviewWindow is at most 168h (7 days)"
	// +optional
	ReviewWindow *metav1.Duration `json:"reviewWindow,omitempty"`
	// Suspension is when repeated refusals suspend a project's sending (per mode: test
	// traffic's refusals suspend test traffic only).
	// +optional
	Suspension *RiskSuspension `json:"suspension,omitempty"`
}

// ExternalReviewer is an HTTP service that decides sends: Switchboard POSTs each send's features
// and reads {decision, reason} back (docs/risk.md).
type ExternalReviewer struct {
	// URL the review requests are POSTed to.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// Timeout bounds one review (at most 30 s).
	// +kubebuilder:default="5s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// SecretRef names the key of a labelled Secret whose value signs the requests
	// (X-Service-Signature, v2, as webhooks are signed); unsigned without it.
	// +optional
	SecretRef *SecretKeyRef `json:"secretRef,omitempty"`
	// OnFailure is what happens to a send the service did not decide (a timeout, an error, an
	// answer that is not a decision): hold it (the default) or approve it.
	// +kubebuilder:validation:Enum=hold;approve
	// +kubebuilder:default=hold
	// +optional
	OnFailure string `json:"onFailure,omitempty"`
}

// RiskSuspension suspends a project's sending after Refusals refused or blocked sends within
// Within; 0 refusals never suspends.
type RiskSuspension struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +kubebuilder:default=5
	// +optional
	Refusals int32 `json:"refusals"`
	// +kubebuilder:default="24h"
	// +optional
	Within *metav1.Duration `json:"within,omitempty"`
}

// RiskPolicyStatus says whether the rules compile.
type RiskPolicyStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready is False, reason InvalidRules, with CEL's reasons while a rule does
	// not compile (the policy then holds every reviewed send rather than let it through).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RiskPolicy holds the rules sends are reviewed by.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=risk
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RiskPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RiskPolicySpec   `json:"spec"`
	Status RiskPolicyStatus `json:"status,omitempty"`
}

// RiskPolicyList is a list of RiskPolicies.
// +kubebuilder:object:root=true
type RiskPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RiskPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RiskPolicy{}, &RiskPolicyList{})
}
