package app_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/telegram/telegramtest"
)

const botToken = telegramtest.Token

func TestTelegramBots(t *testing.T) {
	api := telegramtest.NewServer(t)
	in := start(t, func(c *app.Config) { c.TelegramAPI = api.URL })
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	id := in.post("/v1/senders", key, `{"name":"Support"}`).body["id"].(string)
	waitFor(t, func() bool { return in.get("/v1/senders/"+id, key).status == 200 })

	// A token Telegram rejects changes nothing.
	r := in.post("/v1/senders/"+id+"/telegram", key, `{"botToken":"987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsXX"}`)
	if r.status != 400 || r.body["code"] != "invalid_request" {
		t.Fatalf("v1 rejected token = %d %v", r.status, r.body)
	}
	r = in.post("/v2/channels", key, `{"type":"telegram","botToken":"nope"}`)
	if r.status != 400 || r.body["code"] != "invalid_bot_token" || len(fieldErrors(r)) != 1 {
		t.Fatalf("v2 rejected token = %d %v", r.status, r.body)
	}
	if n := len(in.get("/v1/senders", key).body["items"].([]any)); n != 1 {
		t.Errorf("a rejected token created senders: %d", n)
	}

	r = in.post("/v1/senders/"+id+"/telegram", key, `{"botToken":"`+botToken+`"}`)
	tg, _ := r.body["telegram"].(map[string]any)
	if r.status != 200 || tg["connected"] != true || tg["botId"] != "123456789" || tg["botUsername"] != "acme_bot" {
		t.Fatalf("attach = %d %v", r.status, r.body)
	}
	if strings.Contains(string(r.raw), "AAHdq") {
		t.Fatalf("the answer repeats the token: %s", r.raw)
	}
	var s corev1.Secret
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id + "-telegram"}, &s); err != nil ||
		string(s.Data["token"]) != botToken || s.Labels[v1alpha1.SecretLabel] != "true" {
		t.Fatalf("token Secret: %v %v", err, s.Labels)
	}
	waitFor(t, func() bool {
		r := in.get("/v2/channels/@acme_bot", key)
		return r.status == 200 && r.body["channels"].([]any)[0].(map[string]any)["active"] == true
	})

	// Attaching through v2 makes a sender of its own.
	r = in.post("/v2/channels", key, `{"type":"telegram","botToken":"`+botToken+`","name":"Bot desk"}`)
	if c, _ := r.body["channel"].(map[string]any); r.status != 201 || c["address"] != "@acme_bot" || c["name"] != "Bot desk" {
		t.Fatalf("v2 attach = %d %v", r.status, r.body)
	}

	if r := in.do("DELETE", "/v1/senders/"+id+"/telegram", key, nil); r.status != 204 {
		t.Fatalf("detach = %d %v", r.status, r.body)
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id + "-telegram"}, &s); err == nil {
		t.Errorf("the token outlived the bot")
	}
	if r := in.do("DELETE", "/v1/senders/"+id+"/telegram", key, nil); r.status != 404 {
		t.Errorf("second detach = %d, want 404", r.status)
	}
}
