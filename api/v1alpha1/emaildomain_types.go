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

// EmailDomainSpec is the desired state of an email domain: a domain the project sends mail
// from (and optionally receives mail at), proven by DNS records the controller asks for.
type EmailDomainSpec struct {
	// Domain is the domain name, in lowercase ASCII (an internationalised name in its xn--
	// form). Set at creation only.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="domain is immutable: create another EmailDomain"
	Domain string `json:"domain"`

	// EnhancedRecords requires SPF, DMARC and a custom MAIL FROM domain (bounce.<domain>, whose
	// MX brings bounces back to Switchboard) besides DKIM before the domain counts as verified.
	// +optional
	EnhancedRecords bool `json:"enhancedRecords,omitempty"`

	// Receiving asks for inbound mail at the domain: its MX record must point at this
	// installation's inbound mail host, and senders on the domain may then receive, while the
	// project holds the domain (status.held).
	// +optional
	Receiving bool `json:"receiving,omitempty"`

	// DKIM brings a signing key of one's own (a domain moving from another platform with its
	// published selector); without it the controller generates an RSA-2048 key into a Secret
	// it owns.
	// +optional
	DKIM *DKIMSettings `json:"dkim,omitempty"`

	// DKIMEd25519 also signs the domain's mail with an Ed25519 key (RFC 8463) the controller
	// generates into a Secret it owns, beside the RSA key: each mail then carries two
	// DKIM-Signature fields, each under its own selector, and receivers that know Ed25519 check
	// the shorter, faster one while the others keep checking RSA. Its record is recommended, not
	// required: the domain's verification does not wait for it, and mail is signed with the key
	// once its record is found published. Off again, the key is no longer used.
	// +optional
	DKIMEd25519 bool `json:"dkimEd25519,omitempty"`
}

// DKIMSettings names an existing DKIM key.
type DKIMSettings struct {
	// Selector is the DKIM selector the key is published under (<selector>._domainkey.<domain>).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`
	Selector string `json:"selector"`

	// SecretRef names the Secret key holding the private key, PEM-encoded (PKCS#1 or PKCS#8;
	// RSA of at least 1024 bits, or Ed25519). The Secret must carry the label
	// messaging.switchboard.io/secret: "true".
	SecretRef SecretKeyRef `json:"secretRef"`
}

// EmailDomainState is where an email domain stands (the REST API's status).
// +kubebuilder:validation:Enum=pending;verified;partially_verified;failed
type EmailDomainState string

const (
	// DomainPending: the records are being looked for, within the verification window.
	DomainPending EmailDomainState = "pending"
	// DomainVerified: every required record is published.
	DomainVerified EmailDomainState = "verified"
	// DomainPartiallyVerified: some required records are published and others are not, after
	// the verification window or after the domain was verified once.
	DomainPartiallyVerified EmailDomainState = "partially_verified"
	// DomainFailed: no required record is published, after the verification window or after
	// the domain was verified once.
	DomainFailed EmailDomainState = "failed"
)

// RecordState is where one DNS record stands.
// +kubebuilder:validation:Enum=pending;verified;failed;temporary_failure
type RecordState string

const (
	// RecordPending: not found yet, within the verification window.
	RecordPending RecordState = "pending"
	// RecordVerified: published as asked.
	RecordVerified RecordState = "verified"
	// RecordFailed: not found, or published with another value, past the window.
	RecordFailed RecordState = "failed"
	// RecordTemporaryFailure: DNS could not be asked (a timeout, SERVFAIL); the last answer stands.
	RecordTemporaryFailure RecordState = "temporary_failure"
)

// RecordPurpose is what a DNS record is for.
// +kubebuilder:validation:Enum=dkim;dkim_ed25519;spf;dmarc;mail_from;inbound;ownership
type RecordPurpose string

const (
	PurposeDKIM RecordPurpose = "dkim"
	// PurposeDKIMEd25519 is the record of the Ed25519 key a domain may add (spec.dkimEd25519).
	PurposeDKIMEd25519 RecordPurpose = "dkim_ed25519"
	PurposeSPF         RecordPurpose = "spf"
	PurposeDMARC       RecordPurpose = "dmarc"
	PurposeMailFrom    RecordPurpose = "mail_from"
	PurposeInbound     RecordPurpose = "inbound"
	// PurposeOwnership proves that this project, of all the installation's projects, controls
	// the domain: its value is a token of the project and the domain.
	PurposeOwnership RecordPurpose = "ownership"
)

// DNSRecord is a record to publish for the domain, and whether it is.
type DNSRecord struct {
	// Purpose is what the record is for.
	Purpose RecordPurpose `json:"purpose"`
	// Name is the record's owner name (fully qualified, without the trailing dot).
	Name string `json:"name"`
	// Type is TXT or MX.
	// +kubebuilder:validation:Enum=TXT;MX
	Type string `json:"type"`
	// Value is the record's value: the TXT string, or the MX host.
	Value string `json:"value"`
	// Priority is the MX preference.
	// +optional
	Priority *int32 `json:"priority,omitempty"`
	// Required: the domain verifies only with this record; the others are recommended.
	Required bool `json:"required"`
	// State is what the last check found.
	// +optional
	State RecordState `json:"state,omitempty"`
	// Found is what DNS holds at Name when it is not what was asked (the first few values), to
	// show what to fix.
	// +kubebuilder:validation:MaxItems=4
	// +optional
	Found []string `json:"found,omitempty"`
}

// EmailDomainStatus is the observed state of an EmailDomain.
type EmailDomainStatus struct {
	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (the domain is verified), and one per purpose of the records
	// (DKIMVerified, OwnershipVerified, SPFVerified, DMARCVerified, MailFromVerified,
	// InboundVerified).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// State is where the domain stands.
	// +optional
	State EmailDomainState `json:"state,omitempty"`

	// Verified is whether every required record is published (kubectl's column).
	// +optional
	Verified bool `json:"verified,omitempty"`

	// Verifiable is false when the records cannot be made (SetupError says why): such a
	// domain is never checked.
	// +optional
	Verifiable *bool `json:"verifiable,omitempty"`

	// SetupError says why the records cannot be made.
	// +optional
	SetupError string `json:"setupError,omitempty"`

	// DKIMSelector is the selector the DKIM key is published under.
	// +optional
	DKIMSelector string `json:"dkimSelector,omitempty"`

	// DKIMSecret is the Secret key holding the DKIM private key.
	// +optional
	DKIMSecret *SecretKeyRef `json:"dkimSecret,omitempty"`

	// DKIMEd25519Selector is the selector the Ed25519 key is published under (spec.dkimEd25519).
	// +optional
	DKIMEd25519Selector string `json:"dkimEd25519Selector,omitempty"`

	// DKIMEd25519Secret is the Secret key holding the Ed25519 private key (spec.dkimEd25519).
	// +optional
	DKIMEd25519Secret *SecretKeyRef `json:"dkimEd25519Secret,omitempty"`

	// Records are the DNS records to publish, each with what the last check found.
	// +listType=atomic
	// +optional
	Records []DNSRecord `json:"records,omitempty"`

	// VerificationStartedAt opens the verification window: creation, or the last verify request.
	// +optional
	VerificationStartedAt *metav1.Time `json:"verificationStartedAt,omitempty"`

	// VerifyRequestedAt is the last verify request the controller has taken in (it copies
	// the annotation messaging.switchboard.io/verify-requested-at).
	// +optional
	VerifyRequestedAt string `json:"verifyRequestedAt,omitempty"`

	// EverVerified: the domain was verified once; missing records count as failures at once.
	// +optional
	EverVerified bool `json:"everVerified,omitempty"`

	// Held: this project holds the domain, the one project of the installation the domain
	// verifies and receives mail for: its ownership record was found published (or its grace
	// period runs) and no other project held the domain first. Without it the domain neither
	// verifies nor receives.
	// +optional
	Held bool `json:"held,omitempty"`

	// OwnershipGraceUntil: the domain was verified before ownership records were asked for,
	// and until then verifies and receives without its own (its DKIM record proves it).
	// +optional
	OwnershipGraceUntil *metav1.Time `json:"ownershipGraceUntil,omitempty"`

	// LastCheckedAt is when DNS was last asked, and NextCheckAt when it will be again.
	// +optional
	LastCheckedAt *metav1.Time `json:"lastCheckedAt,omitempty"`
	// +optional
	NextCheckAt *metav1.Time `json:"nextCheckAt,omitempty"`

	// VerifiedAt is when the domain last became verified.
	// +optional
	VerifiedAt *metav1.Time `json:"verifiedAt,omitempty"`
}

// EmailDomain is a domain a project sends mail from, verified through DNS, with its DKIM key.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=edom
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.spec.domain`
// +kubebuilder:printcolumn:name="Verified",type=boolean,JSONPath=`.status.verified`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,priority=1
// +kubebuilder:printcolumn:name="Receiving",type=boolean,JSONPath=`.spec.receiving`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EmailDomain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   EmailDomainSpec   `json:"spec"`
	Status EmailDomainStatus `json:"status,omitempty"`
}

// EmailDomainList is a list of EmailDomains.
// +kubebuilder:object:root=true
type EmailDomainList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EmailDomain `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EmailDomain{}, &EmailDomainList{})
}
