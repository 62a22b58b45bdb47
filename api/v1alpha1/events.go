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

// The event names (spec: Events), the one list every part reads: the webhooks that subscribe,
// the API that validates a subscription, the code that raises them. The WebhookEvent enum of
// the CRDs repeats it for the API server; a test keeps the two equal.
const (
	EventMessageQueued           WebhookEvent = "message.queued"
	EventMessageSent             WebhookEvent = "message.sent"
	EventMessageDelivered        WebhookEvent = "message.delivered"
	EventMessageRead             WebhookEvent = "message.read"
	EventMessageStatus           WebhookEvent = "message.status"
	EventMessageFailed           WebhookEvent = "message.failed"
	EventMessageInbound          WebhookEvent = "message.inbound"
	EventMessageUnsupported      WebhookEvent = "message.unsupported"
	EventBroadcastStatusChanged  WebhookEvent = "broadcast.status_changed"
	EventConversationNew         WebhookEvent = "conversation.new"
	EventTemplateStatusChanged   WebhookEvent = "template.status_changed"
	EventInvitationStatusChanged WebhookEvent = "invitation.status_changed"
	EventCallInitiated           WebhookEvent = "call.initiated"
	EventCallAnswered            WebhookEvent = "call.answered"
	EventCallCompleted           WebhookEvent = "call.completed"
	EventCallFailed              WebhookEvent = "call.failed"
	EventDomainVerified          WebhookEvent = "domain.verified"
	EventDomainFailed            WebhookEvent = "domain.failed"
)

// WebhookEvents lists every event name, in the spec's order.
var WebhookEvents = []WebhookEvent{
	EventMessageQueued, EventMessageSent, EventMessageDelivered, EventMessageRead, EventMessageStatus, EventMessageFailed,
	EventMessageInbound, EventMessageUnsupported, EventBroadcastStatusChanged, EventConversationNew,
	EventTemplateStatusChanged, EventInvitationStatusChanged, EventCallInitiated, EventCallAnswered,
	EventCallCompleted, EventCallFailed, EventDomainVerified, EventDomainFailed,
}

// MessageEvent is the event of a message moving to status (message.sent, …).
func MessageEvent(status string) WebhookEvent { return WebhookEvent("message." + status) }

// WebhookEventNames lists every event name as a string, in the spec's order.
func WebhookEventNames() []string {
	out := make([]string, len(WebhookEvents))
	for i, e := range WebhookEvents {
		out[i] = string(e)
	}
	return out
}
