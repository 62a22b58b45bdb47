package meta

import (
	"context"
	"net/http"
)

// WhatsApp "coexistence": a business that onboards a number it uses in the WhatsApp Business
// app keeps using the app, and the number is on the Cloud API too
// (developers.facebook.com/docs/whatsapp/embedded-signup/custom-flows/onboarding-business-app-users).
// Soon after the onboarding (Meta allows 24 hours), the business's solution provider may
// synchronize, once each, the app's contacts and its chat history:
//
//	POST /{phone-number-id}/smb_app_data {"messaging_product": "whatsapp", "sync_type": "smb_app_state_sync"}
//	POST /{phone-number-id}/smb_app_data {"messaging_product": "whatsapp", "sync_type": "history"}
//
// Meta answers {"messaging_product": "whatsapp", "request_id": …}, then posts the results to the
// WABA's webhook subscription: smb_app_state_sync changes for the contacts, history chunks for
// the chats the business agreed (in the app) to share, or one history change with error
// 2593109 when it declined. Messages the business sends from the app from then on arrive as
// smb_message_echoes. ParseCoexistence reads the three (webhook.go).
//
// Meta's reference documents the request and the webhooks; the answer's request_id, and that a
// second request of a sync is refused, are what integrations report (the refusal's code is not
// documented).

// The two syncs StartSync starts: the app's address book, and its chat history.
const (
	SyncContacts = "smb_app_state_sync"
	SyncHistory  = "history"
)

// StartSync asks Meta to synchronize the WhatsApp Business app data of a coexistence number:
// its contacts (SyncContacts) or its chat history (SyncHistory), POST
// /{phone-number-id}/smb_app_data. Meta allows each once, within 24 hours of the onboarding;
// the results arrive as webhooks (ParseCoexistence). requestID is Meta's id of the request
// (request_id, else id), "" when the answer names none. An empty token is the Provider's.
// Another syncType fails before Meta is asked; Meta's refusals are errors as Send's
// (*transport.Failure, *transport.Temporary).
func (t *Transport) StartSync(ctx context.Context, token, phoneNumberID, syncType string) (requestID string, err error) {
	if syncType != SyncContacts && syncType != SyncHistory {
		return "", invalid("A sync of WhatsApp Business app data is %s (contacts) or %s (chat history), not %q.",
			SyncContacts, SyncHistory, syncType)
	}
	var out struct {
		RequestID hookID `json:"request_id"`
		ID        hookID `json:"id"`
	}
	err = t.call(ctx, request{op: "start " + syncType + " sync", method: http.MethodPost,
		path: []string{phoneNumberID, "smb_app_data"},
		body: obj{"messaging_product": "whatsapp", "sync_type": syncType}, token: t.token(token)}, &out)
	if err != nil {
		return "", err
	}
	if out.RequestID != "" {
		return string(out.RequestID), nil
	}
	return string(out.ID), nil
}
