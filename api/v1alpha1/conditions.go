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

// ConditionReady is the one condition every Switchboard resource carries; printer columns read it.
const ConditionReady = "Ready"

// ConditionCircuitClosed is a Provider's circuit breaker: False while it is open or probed
// (docs/providers.md#circuit-breaker).
const ConditionCircuitClosed = "CircuitClosed"

// ConditionWebhookEnabled is a webhook's delivery switch (a Webhook's, or a Sender's webhook):
// False once every attempt has failed for too long (docs/webhooks.md#disabled-endpoints), and
// then nothing is sent to it until it is enabled again: by the API, the CLI, or any change of
// the resource's spec. Absent means enabled.
const ConditionWebhookEnabled = "WebhookEnabled"

// Reasons of the WebhookEnabled condition.
const (
	// ReasonFailingTooLong: every attempt failed for longer than the installation allows.
	ReasonFailingTooLong = "FailingTooLong"
	// ReasonReEnabled: enabled again through the API or the CLI.
	ReasonReEnabled = "ReEnabled"
	// ReasonSpecChanged: enabled again by a change of the resource's spec (a new URL, say).
	ReasonSpecChanged = "SpecChanged"
)

// Reasons of the Ready condition.
const (
	// ReasonReady: every check passed.
	ReasonReady = "Ready"
	// ReasonDuplicateProject: another Project in the namespace is older and is the namespace's project.
	ReasonDuplicateProject = "DuplicateProject"
	// ReasonInvalidRules: a RiskPolicy rule does not compile (the message says which, and why).
	ReasonInvalidRules = "InvalidRules"
	// ReasonParentNotFound: spec.parent names a namespace with no Project.
	ReasonParentNotFound = "ParentNotFound"
	// ReasonProjectNotFound: the Sender's namespace has no Project.
	ReasonProjectNotFound = "ProjectNotFound"
	// ReasonProjectNotReady: the Sender's namespace has a Project that is not Ready.
	ReasonProjectNotReady = "ProjectNotReady"
	// ReasonTransportUnsupportedChannel: a channel of the Sender is not offered by its transport.
	ReasonTransportUnsupportedChannel = "UnsupportedChannel"
	// ReasonWebhookSecretNotFound: spec.webhook.secretRef names a Secret or key that does not exist,
	// or a Secret without the webhook-secret label.
	ReasonWebhookSecretNotFound = "WebhookSecretNotFound"

	// ReasonSecretNotFound: the Provider's spec.secretRef names a Secret that does not exist or
	// does not carry the label SecretLabel (Switchboard's cache holds no other Secret).
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretIncomplete: the Provider's Secret lacks a key its type needs; the message names it.
	ReasonSecretIncomplete = "SecretIncomplete"
	// ReasonCredentialsRejected: the provider answered that the Provider's credentials are wrong.
	ReasonCredentialsRejected = "CredentialsRejected"
	// ReasonProviderUnreachable: the credential check could not get an answer from the provider;
	// it is tried again with a backoff.
	ReasonProviderUnreachable = "ProviderUnreachable"
	// ReasonCheckPending: the Provider's credentials changed and are checked again shortly (checks
	// of one Provider are spaced out so a burst of edits does not hammer the provider).
	ReasonCheckPending = "CheckPending"
	// ReasonEndpointNotAllowed: a Provider in a project's namespace sets baseURL, which only the
	// installation's Providers may (unless the installation allows projects' endpoints).
	ReasonEndpointNotAllowed = "EndpointNotAllowed"
	// ReasonModelUnresolved: an Agent's model (or a fallback's) has no account to call it
	// with: its API key Secret, its model Provider, or the installation's model is missing or
	// not Ready.
	ReasonModelUnresolved = "ModelUnresolved"
)

// SecretLabel marks the Secrets Switchboard reads: webhook signing secrets and provider
// credentials (bot tokens, access tokens). Its informer cache holds no other Secret.
const SecretLabel = "messaging.switchboard.io/secret"

// GeneratedWebhookSecretKey is the key of a generated webhook Secret.
const GeneratedWebhookSecretKey = "secret"

// TelegramWebhookSecretKey is the key, in the Secret holding a Sender's bot token, of the secret
// token Telegram sends with the bot's updates (random, made when the bot is attached).
const TelegramWebhookSecretKey = "webhookSecret"
