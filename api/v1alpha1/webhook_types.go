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

// WebhookKind says which project webhook a Webhook is.
// +kubebuilder:validation:Enum=v2;invitations
type WebhookKind string

const (
	// WebhookKindV2 is the v2 project webhook: every event of the project, v2 envelope. It must
	// be named "v2".
	WebhookKindV2 WebhookKind = "v2"
	// WebhookKindInvitations is the v1 project webhook for invitation events, v1 envelope. It
	// must be named "invitations".
	WebhookKindInvitations WebhookKind = "invitations"
)

// WebhookSpec is a project-level webhook. Sender webhooks live on their Sender.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.signatureVersion) || !has(self.signatureVersion) || (!(oldSelf.signatureVersion == 'v1' && self.signatureVersion == 'v2') && !(oldSelf.signatureVersion == 'v2' && self.signatureVersion == 'v1'))",message="signatureVersion moves between v1 and v2 only through v1+v2"
// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="kind is immutable"
type WebhookSpec struct {
	// Kind is which project webhook this is.
	Kind WebhookKind `json:"kind"`

	// URL receives the deliveries: https (plain http only reaches loopback receivers in dev), with
	// no credentials (user:password@) — receivers authenticate deliveries by their signature.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['https', 'http']",message="url must be an absolute http(s) URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^:/?#]*://[^/?#]*@')",message="url must not carry credentials (user:password@)"
	URL string `json:"url"`

	// Events are the event names delivered; empty means all.
	// +listType=set
	// +optional
	Events []WebhookEvent `json:"events,omitempty"`

	// SignatureVersion is the signing scheme; new webhooks use v2.
	// +kubebuilder:default=v2
	// +optional
	SignatureVersion SignatureVersion `json:"signatureVersion,omitempty"`

	// SecretRef names a Secret key with the signing secret (labelled
	// messaging.switchboard.io/secret: "true"); without it the controller generates one.
	// +optional
	SecretRef *SecretKeyRef `json:"secretRef,omitempty"`
}

// WebhookStatus is the observed state of a Webhook.
type WebhookStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// WebhookSecret is the Secret key deliveries are signed with.
	// +optional
	WebhookSecret *SecretKeyRef `json:"webhookSecret,omitempty"`
}

// Webhook is a project-level webhook: the v2 project webhook or the v1 invitations webhook.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:validation:XValidation:rule="self.metadata.name == (self.spec.kind == 'v2' ? 'v2' : 'invitations')",message="a project has one webhook of each kind: name the v2 webhook \"v2\" and the invitations webhook \"invitations\""
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Signature",type=string,JSONPath=`.spec.signatureVersion`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Webhook struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   WebhookSpec   `json:"spec"`
	Status WebhookStatus `json:"status,omitempty"`
}

// WebhookList is a list of Webhooks.
// +kubebuilder:object:root=true
type WebhookList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Webhook `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Webhook{}, &WebhookList{})
}
