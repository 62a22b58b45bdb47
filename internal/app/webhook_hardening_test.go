package app_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// TestWebhookURLsCarryNoCredentialsAndAreHTTPS: every place a webhook URL is set refuses one
// with user:password@ (the REST API with 400 invalid_request on the field, the CRDs through CEL
// so kubectl is refused too), never repeating the credentials; outside dev the REST API refuses
// plain http, which no worker of such an installation delivers.
func TestWebhookURLsCarryNoCredentialsAndAreHTTPS(t *testing.T) {
	in := start(t)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	r := in.post("/v1/senders", key, `{"name":"Support"}`)
	if r.status != 201 {
		t.Fatalf("create sender = %d %v", r.status, r.body)
	}
	id := r.body["id"].(string)
	waitFor(t, func() bool { return in.get("/v1/senders/"+id, key).status == 200 })

	const credentials = "https://user:s3cr3t@hooks.acme.example/sb"
	for name, c := range map[string]struct {
		method, path, body, field, reason string
	}{
		"create sender, credentials": {"POST", "/v1/senders", `{"name":"Other","webhookUrl":"` + credentials + `"}`, "webhookUrl", "must not carry credentials"},
		"patch sender, credentials":  {"PATCH", "/v1/senders/" + id, `{"webhookUrl":"` + credentials + `"}`, "webhookUrl", "must not carry credentials"},
		"patch sender, user only":    {"PATCH", "/v1/senders/" + id, `{"webhookUrl":"https://user@hooks.acme.example/sb"}`, "webhookUrl", "must not carry credentials"},
		"patch sender, http loopback": {"PATCH", "/v1/senders/" + id, `{"webhookUrl":"http://127.0.0.1:8080/hook"}`, "webhookUrl",
			"must be https"},
		"v2 webhook, credentials":   {"PUT", "/v2/webhook", `{"url":"` + credentials + `","events":["message.delivered"]}`, "url", "must not carry credentials"},
		"v2 webhook, http loopback": {"PUT", "/v2/webhook", `{"url":"http://localhost:8080/hook","events":["message.delivered"]}`, "url", "must be https"},
		"invitations, credentials":  {"POST", "/v1/invitations/webhook", `{"url":"` + credentials + `"}`, "url", "must not carry credentials"},
	} {
		r := in.do(c.method, c.path, key, strings.NewReader(c.body))
		errs := fieldErrors(r)
		if r.status != 400 || r.body["code"] != "invalid_request" || len(errs) != 1 {
			t.Errorf("%s: %d %v, want 400 invalid_request on %s", name, r.status, r.body, c.field)
			continue
		}
		fe := errs[0].(map[string]any)
		if fe["path"] != c.field || !strings.HasPrefix(fe["message"].(string), c.reason) || strings.Contains(string(r.raw), "s3cr3t") {
			t.Errorf("%s: %s, want %s: %s…, without the credentials", name, r.raw, c.field, c.reason)
		}
	}
	if r := in.get("/v1/senders/"+id, key); r.body["webhook"] != nil {
		t.Errorf("a refused URL was stored: %v", r.body)
	}
	if r := in.get("/v2/webhook", key); r.body["webhook"] != nil {
		t.Errorf("a refused URL was stored: %v", r.body)
	}

	// kubectl: the CRDs refuse credentials, and take plain http (dev delivers it to loopback).
	sender := func(url string) *v1alpha1.Sender {
		return &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, GenerateName: "s-"},
			Spec: v1alpha1.SenderSpec{DisplayName: "S", Webhook: &v1alpha1.SenderWebhook{URL: url}}}
	}
	for _, url := range []string{credentials, "https://user@hooks.acme.example/sb", "http://user:s3cr3t@127.0.0.1:8080/hook"} {
		if err := in.k8s.Create(ctx, sender(url)); err == nil || !strings.Contains(err.Error(), "must not carry credentials") {
			t.Errorf("sender with %s: %v, want refused", url, err)
		}
	}
	for _, url := range []string{"http://127.0.0.1:8080/hook", "https://hooks.acme.example/p@th?q=a@b"} {
		if err := in.k8s.Create(ctx, sender(url)); err != nil {
			t.Errorf("sender with %s: %v", url, err)
		}
	}
	for _, url := range []string{credentials, "https://@hooks.acme.example/v2"} {
		wh := &v1alpha1.Webhook{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "v2"},
			Spec: v1alpha1.WebhookSpec{Kind: v1alpha1.WebhookKindV2, URL: url}}
		if err := in.k8s.Create(ctx, wh); err == nil || !strings.Contains(err.Error(), "must not carry credentials") {
			t.Errorf("webhook with %s: %v, want refused", url, err)
		}
	}
	wh := &v1alpha1.Webhook{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "v2"},
		Spec: v1alpha1.WebhookSpec{Kind: v1alpha1.WebhookKindV2, URL: "http://localhost:8080/hook"}}
	if err := in.k8s.Create(ctx, wh); err != nil {
		t.Errorf("webhook with plain http: %v", err)
	}
}
