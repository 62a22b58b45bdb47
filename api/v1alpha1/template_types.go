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

// TemplateCategory is the category WhatsApp bills a template under.
// +kubebuilder:validation:Enum=UTILITY;MARKETING;AUTHENTICATION
type TemplateCategory string

const (
	CategoryUtility        TemplateCategory = "UTILITY"
	CategoryMarketing      TemplateCategory = "MARKETING"
	CategoryAuthentication TemplateCategory = "AUTHENTICATION"
)

// TemplateButtonType is what a template button does.
// +kubebuilder:validation:Enum=quick_reply;url;phone;otp;request_contact_info
type TemplateButtonType string

const (
	ButtonQuickReply         TemplateButtonType = "quick_reply"
	ButtonURL                TemplateButtonType = "url"
	ButtonPhone              TemplateButtonType = "phone"
	ButtonOTP                TemplateButtonType = "otp"
	ButtonRequestContactInfo TemplateButtonType = "request_contact_info"
)

// TemplateButton is one button of a template, with its type's own fields.
// +kubebuilder:validation:XValidation:rule="self.type != 'url' || has(self.url)",message="a url button needs url"
// +kubebuilder:validation:XValidation:rule="self.type != 'phone' || has(self.phoneNumber)",message="a phone button needs phoneNumber"
// +kubebuilder:validation:XValidation:rule="self.type == 'otp' || !has(self.otpType)",message="otpType is for otp buttons"
// +kubebuilder:validation:XValidation:rule="self.type != 'otp' || has(self.otpType)",message="an otp button needs otpType"
// +kubebuilder:validation:XValidation:rule="!has(self.otpType) || self.otpType != 'ONE_TAP' || (has(self.packageName) && has(self.signatureHash))",message="a ONE_TAP otp button needs packageName and signatureHash"
type TemplateButton struct {
	Type TemplateButtonType `json:"type"`
	// Text is the button's label.
	// +kubebuilder:validation:MaxLength=25
	// +optional
	Text string `json:"text,omitempty"`
	// URL is a url button's address; {{1}} at its end makes it dynamic.
	// +kubebuilder:validation:MaxLength=2000
	// +optional
	URL string `json:"url,omitempty"`
	// Example is a sample value of a dynamic URL's {{1}}.
	// +kubebuilder:validation:MaxLength=2000
	// +optional
	Example string `json:"example,omitempty"`
	// PhoneNumber is a phone button's number, E.164.
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	// +optional
	PhoneNumber string `json:"phoneNumber,omitempty"`
	// OTPType is an otp button's kind.
	// +kubebuilder:validation:Enum=COPY_CODE;ONE_TAP
	// +optional
	OTPType string `json:"otpType,omitempty"`
	// PackageName and SignatureHash identify the Android app of a ONE_TAP button.
	// +kubebuilder:validation:MaxLength=224
	// +optional
	PackageName string `json:"packageName,omitempty"`
	// +kubebuilder:validation:MaxLength=11
	// +optional
	SignatureHash string `json:"signatureHash,omitempty"`
}

// TemplateHeader is a template's header.
// +kubebuilder:validation:XValidation:rule="self.type != 'text' || (has(self.content) && size(self.content) <= 60)",message="a text header needs content of up to 60 characters"
type TemplateHeader struct {
	// +kubebuilder:validation:Enum=text;image;video;document
	Type string `json:"type"`
	// Content is a text header's text ({{1}} allowed once), or a media header's sample file URL.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Content string `json:"content,omitempty"`
}

// TemplateSpec is a message template: a WhatsApp template once submitted and approved, and the
// bodies other channels render. Name and language identify it: the resource is named
// <name with - for _>.<language, lowercase, with - for _>, so a second template of the same
// name and language cannot exist.
type TemplateSpec struct {
	// Name is the template's name: lowercase letters, digits and underscores.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[a-z0-9_]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="name is immutable: create another template"
	Name string `json:"name"`

	// Language is its language code, as WhatsApp names them: en, en_US, pt_BR, es_MX …
	// +kubebuilder:validation:Pattern=`^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="language is immutable: create another template"
	Language string `json:"language"`

	// Category is the category asked for at submission; the provider may bill another
	// (status.category).
	// +optional
	Category TemplateCategory `json:"category,omitempty"`

	// Body is the text, with positional placeholders {{1}}, {{2}} …
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Body string `json:"body"`

	// Variables are sample values of the placeholders, in order (WhatsApp's review needs them).
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Variables []string `json:"variables,omitempty"`

	// SMSBody, TelegramBody and InstagramBody replace Body on those channels.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	SMSBody string `json:"smsBody,omitempty"`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	TelegramBody string `json:"telegramBody,omitempty"`
	// +kubebuilder:validation:MaxLength=1000
	// +optional
	InstagramBody string `json:"instagramBody,omitempty"`

	// +optional
	Header *TemplateHeader `json:"header,omitempty"`

	// +kubebuilder:validation:MaxLength=60
	// +optional
	Footer string `json:"footer,omitempty"`

	// Buttons, at most three.
	// +kubebuilder:validation:MaxItems=3
	// +listType=atomic
	// +optional
	Buttons []TemplateButton `json:"buttons,omitempty"`

	// AddSecurityRecommendation adds WhatsApp's "do not share this code" to an authentication template.
	// +optional
	AddSecurityRecommendation bool `json:"addSecurityRecommendation,omitempty"`

	// CodeExpirationMinutes is how long an authentication template's code is valid.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=90
	// +optional
	CodeExpirationMinutes *int32 `json:"codeExpirationMinutes,omitempty"`

	// Submission asks for the template to be submitted to the WhatsApp business account of a
	// sender; the controller submits it once per change of this field.
	// +optional
	Submission *TemplateSubmission `json:"submission,omitempty"`
}

// TemplateSubmission names where a template is submitted.
type TemplateSubmission struct {
	// Sender is the sender whose WhatsApp business account reviews the template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Sender string `json:"sender"`
	// Sandbox submits it to the sandbox, which approves it after a short delay (rejects it
	// when its name starts with test_reject). Submissions with test keys are sandboxed.
	// +optional
	Sandbox bool `json:"sandbox,omitempty"`
	// RequestedAt tells one request from the next (an RFC 3339 time).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	RequestedAt string `json:"requestedAt,omitempty"`
}

// TemplateState is where a template stands.
// +kubebuilder:validation:Enum=draft;pending;approved;rejected
type TemplateState string

const (
	TemplateDraft    TemplateState = "draft"
	TemplatePending  TemplateState = "pending"
	TemplateApproved TemplateState = "approved"
	TemplateRejected TemplateState = "rejected"
)

// TemplateStatus is the observed state of a Template.
type TemplateStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready is true once the template is approved.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// State is draft until submitted, then pending, approved or rejected.
	// +optional
	State TemplateState `json:"state,omitempty"`
	// RejectionReason is why the provider rejected it.
	// +optional
	RejectionReason string `json:"rejectionReason,omitempty"`
	// Category is the category the provider bills it under.
	// +optional
	Category TemplateCategory `json:"category,omitempty"`
	// ProviderStatus is the provider's own status (APPROVED, PAUSED, DISABLED …).
	// +optional
	ProviderStatus string `json:"providerStatus,omitempty"`
	// ProviderID, TemplateName and Namespace are the template at the provider.
	// +optional
	ProviderID string `json:"providerId,omitempty"`
	// +optional
	TemplateName string `json:"templateName,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// BusinessAccount is the WhatsApp business account it was submitted to; Sender the sender
	// whose account it is; Sandbox whether the sandbox reviewed it.
	// +optional
	BusinessAccount string `json:"businessAccount,omitempty"`
	// +optional
	Sender string `json:"sender,omitempty"`
	// +optional
	Sandbox bool `json:"sandbox,omitempty"`
	// SubmittedRequest is the submission request taken in (spec.submission.requestedAt).
	// +optional
	SubmittedRequest string `json:"submittedRequest,omitempty"`
	// SubmittedAt, LastSyncedAt: when it was submitted, and last read from the provider.
	// +optional
	SubmittedAt *metav1.Time `json:"submittedAt,omitempty"`
	// +optional
	LastSyncedAt *metav1.Time `json:"lastSyncedAt,omitempty"`
}

// Template is a message template (WhatsApp's, and its bodies for other channels).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=tpl
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.name.replace('_', '-') + '.' + self.spec.language.lowerAscii().replace('_', '-')",message="a Template is named <name with - for _>.<language in lowercase with - for _>, e.g. order_update in en_US is order-update.en-us: name and language identify it"
// +kubebuilder:printcolumn:name="Name",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Language",type=string,JSONPath=`.spec.language`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Category",type=string,JSONPath=`.status.category`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Template struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   TemplateSpec   `json:"spec"`
	Status TemplateStatus `json:"status,omitempty"`
}

// TemplateList is a list of Templates.
// +kubebuilder:object:root=true
type TemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Template `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Template{}, &TemplateList{})
}
