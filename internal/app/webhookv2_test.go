package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

func TestV2ProjectWebhook(t *testing.T) {
	in := start(t)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)

	r := in.post("/v1/senders", key, `{"name":"Support","webhookUrl":"https://hooks.acme.example/v1","webhookEvents":["message.failed"]}`)
	senderID := r.body["id"].(string)
	waitFor(t, func() bool { return in.get("/v1/senders/"+senderID, key).status == 200 })

	r = in.get("/v2/webhook", key)
	if r.status != 200 || r.body["webhook"] != nil || len(r.body["senderWebhooks"].([]any)) != 1 {
		t.Fatalf("GET before = %d %v", r.status, r.body)
	}

	// Create: 201, v2, the secret once.
	r = in.do("PUT", "/v2/webhook", key, strings.NewReader(`{"url":"https://hooks.acme.example/v2","events":["message.delivered","message.inbound"]}`))
	hook, _ := r.body["webhook"].(map[string]any)
	if r.status != 201 || hook["signatureVersion"] != "v2" || !strings.HasPrefix(fmt.Sprint(hook["secret"]), "whsec_") {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	secret := hook["secret"].(string)
	var s corev1.Secret
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "webhook-v2"}, &s); err != nil || string(s.Data["secret"]) != secret {
		t.Fatalf("webhook Secret: %v", err)
	}

	// Replace: 200, the secret kept (and not shown); sender webhooks switched off but kept.
	r = in.do("PUT", "/v2/webhook", key, strings.NewReader(`{"url":"https://hooks.acme.example/v2b","events":["message.delivered"],"disableSenderWebhooks":true}`))
	if r.status != 200 || r.body["webhook"].(map[string]any)["secret"] != nil || r.body["webhook"].(map[string]any)["url"] != "https://hooks.acme.example/v2b" {
		t.Fatalf("replace = %d %v", r.status, r.body)
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "webhook-v2"}, &s); err != nil || string(s.Data["secret"]) != secret {
		t.Fatalf("replace changed the secret: %v", err)
	}
	var snd v1alpha1.Sender
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: senderID}, &snd); err != nil {
		t.Fatal(err)
	}
	if wh := snd.Spec.Webhook; wh == nil || wh.Active == nil || *wh.Active || wh.URL != "https://hooks.acme.example/v1" || len(wh.Events) != 1 {
		t.Fatalf("sender webhook after disableSenderWebhooks: %+v", snd.Spec.Webhook)
	}
	waitFor(t, func() bool {
		r := in.get("/v2/webhook", key)
		return r.body["webhook"] != nil && len(r.body["senderWebhooks"].([]any)) == 0
	})

	// Bad input: every field listed, the valid event names given, nothing changed.
	r = in.do("PUT", "/v2/webhook", key, strings.NewReader(`{"url":"ftp://x","events":["message.delivered","message.exploded"],"signatureVersion":"v9"}`))
	errs := fieldErrors(r)
	allowed, _ := r.body["details"].(map[string]any)["allowed"].([]any)
	if r.status != 400 || len(errs) != 3 || len(allowed) != 18 {
		t.Fatalf("bad PUT = %d %v", r.status, r.body)
	}
	if r := in.do("PUT", "/v2/webhook", key, strings.NewReader(`{"url":"https://x.example","events":["message.sent"],"signatureVersion":"v1"}`)); r.status != 400 {
		t.Fatalf("v2 → v1 = %d %v", r.status, r.body)
	}
	for _, body := range []string{`[]`, `{"url": "https://x.example"}`, `{"events": "message.sent", "url": 5}`, `{"url":`} {
		if r := in.do("PUT", "/v2/webhook", key, strings.NewReader(body)); r.status != 400 {
			t.Errorf("PUT %s = %d", body, r.status)
		} else if r.body["code"] == "invalid_request" && r.body["details"].(map[string]any)["errors"] == nil {
			t.Errorf("PUT %s: v2 invalid_request without details.errors: %v", body, r.body)
		}
	}
	if r := in.get("/v2/webhook", key); r.body["webhook"].(map[string]any)["url"] != "https://hooks.acme.example/v2b" {
		t.Errorf("bad PUTs changed the webhook: %v", r.body)
	}

	// Rotation: the old secret stops at once.
	r = in.post("/v2/webhook/secret", key, "")
	rotated, _ := r.body["secret"].(string)
	if r.status != 200 || rotated == secret || !strings.HasPrefix(rotated, "whsec_") {
		t.Fatalf("rotate = %d %v", r.status, r.body)
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "webhook-v2"}, &s); err != nil || string(s.Data["secret"]) != rotated {
		t.Fatalf("rotated Secret: %v", err)
	}

	// Wrong method: 405 on v2.
	if r := in.post("/v2/webhook", key, `{}`); r.status != 405 || r.header.Get("Allow") != "GET, PUT, DELETE" {
		t.Errorf("POST /v2/webhook = %d Allow %q", r.status, r.header.Get("Allow"))
	}

	// Delete: gone with its secret; sender webhooks are not turned back on.
	if r := in.do("DELETE", "/v2/webhook", key, nil); r.status != 204 {
		t.Fatalf("delete = %d", r.status)
	}
	waitFor(t, func() bool { return in.get("/v2/webhook", key).body["webhook"] == nil })
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "webhook-v2"}, &s); err == nil {
		t.Errorf("the webhook's secret outlived it")
	}
	if r := in.do("DELETE", "/v2/webhook", key, nil); r.status != 404 {
		t.Errorf("second delete = %d, want 404", r.status)
	}
	if r := in.post("/v2/webhook/secret", key, ""); r.status != 404 {
		t.Errorf("rotate without webhook = %d, want 404", r.status)
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: senderID}, &snd); err != nil || *snd.Spec.Webhook.Active {
		t.Errorf("delete turned sender webhooks back on: %v %+v", err, snd.Spec.Webhook)
	}
}

func TestInvitationsWebhookIsStoredApartFromTheV2Webhook(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)

	r := in.post("/v1/invitations/webhook", key, `{"url":"https://hooks.acme.example/invitations"}`)
	hook, _ := r.body["webhook"].(map[string]any)
	if r.status != 201 || fmt.Sprint(hook["events"]) != "[invitation.status_changed]" || !strings.HasPrefix(fmt.Sprint(hook["secret"]), "whsec_") {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	r = in.post("/v1/invitations/webhook", key, `{"url":"https://hooks.acme.example/invitations2"}`)
	if r.status != 200 || r.body["webhook"].(map[string]any)["secret"] != nil {
		t.Fatalf("replace = %d %v", r.status, r.body)
	}
	for name, body := range map[string]string{
		"a message event":       `{"url":"https://hooks.acme.example/i","events":["message.sent"]}`,
		"disableSenderWebhooks": `{"url":"https://hooks.acme.example/i","disableSenderWebhooks":true}`,
		"no url":                `{}`,
	} {
		if r := in.post("/v1/invitations/webhook", key, body); r.status != 400 || len(fieldErrors(r)) == 0 {
			t.Errorf("%s: %d %v", name, r.status, r.body)
		}
	}
	// The v2 API neither reads nor writes it.
	waitFor(t, func() bool { return in.get("/v2/webhook", key).status == 200 })
	if r := in.get("/v2/webhook", key); r.body["webhook"] != nil {
		t.Errorf("GET /v2/webhook shows the invitations webhook: %v", r.body)
	}
	if r := in.do("DELETE", "/v2/webhook", key, nil); r.status != 404 {
		t.Errorf("DELETE /v2/webhook with only an invitations webhook = %d, want 404", r.status)
	}
}

// Once PUT /v2/webhook has answered, the webhook receives every later event, even one of a
// send made the next instant and before any controller has looked at the webhook.
func TestAWebhookReceivesTheEventsOfASendRightAfterItsPUT(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	for i := range 3 {
		_, key := sendingProject(t, in, nil, apikey.Test)
		r := in.do("PUT", "/v2/webhook", key, strings.NewReader(`{"url":"`+rcv.URL+`/v2","events":["message.queued"]}`))
		if r.status != 201 {
			t.Fatalf("PUT = %d %v", r.status, r.body)
		}
		r = in.post("/v1/messages", key, fmt.Sprintf(`{"to":"+1500555010%d","text":"Right after"}`, i))
		if r.status != 200 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		id := r.body["message"].(map[string]any)["id"].(string)
		waitFor(t, func() bool { return slices.Contains(rcv.names(id), "message.queued") })
	}
}
