package app_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
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

func TestLiveTelegram(t *testing.T) {
	peer := telegramtest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted(), func(c *app.Config) { c.TelegramAPI = peer.URL })
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	id := in.post("/v1/senders", key, `{"name":"Support","webhookUrl":"`+rcv.URL+`/hook"}`).body["id"].(string)
	waitFor(t, func() bool {
		var s v1alpha1.Sender
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id}, &s) == nil && s.Status.WebhookSecret != nil
	})

	// Attaching the bot points its webhook at Switchboard, with a secret token.
	if r := in.post("/v1/senders/"+id+"/telegram", key, `{"botToken":"`+botToken+`"}`); r.status != 200 {
		t.Fatalf("attach = %d %v", r.status, r.body)
	}
	hook := peer.Webhook()
	if hook.URL != in.url+"/callbacks/telegram/"+acme+"/"+id+"/updates" || len(hook.SecretToken) < 32 {
		t.Fatalf("webhook = %+v", hook)
	}
	waitFor(t, func() bool {
		r := in.get("/v2/channels/@acme_bot", key)
		return r.status == 200 && r.body["channels"].([]any)[0].(map[string]any)["active"] == true
	})

	// A live message goes to the Bot API as the bot.
	r := in.post("/v2/messages", key, `{"from":"@acme_bot","to":"555000111","text":"Your order shipped","messageType":"buttons",`+
		`"content":{"buttons":[{"id":"track","title":"Track it"}]}}`)
	if r.status != 202 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	msgID := r.body["message"].(map[string]any)["id"].(string)
	m := waitStatus(t, in, key, msgID, "sent")
	var sent []telegramtest.Call
	for _, c := range peer.Sent() {
		if c.Method != "setWebhook" && c.Method != "getMe" {
			sent = append(sent, c)
		}
	}
	if len(sent) != 1 || sent[0].Method != "sendMessage" || sent[0].ChatID != 555000111 || sent[0].Text != "Your order shipped" ||
		sent[0].ReplyMarkup == nil || sent[0].ReplyMarkup.InlineKeyboard[0][0].CallbackData != "track" ||
		m["providerMessageId"] != "555000111:"+strconv.FormatInt(sent[0].MessageID, 10) {
		t.Fatalf("Bot API received %+v; message %v", sent, m)
	}

	// Updates arrive as inbound messages; a reply keeps its context.
	if status, err := peer.Deliver(ctx, peer.Reply(555000111, sent[0].MessageID, "Where is it now?")); err != nil || status != 200 {
		t.Fatalf("deliver = %d %v", status, err)
	}
	if status, err := peer.Deliver(ctx, peer.Poll(555000111, "Rate us?")); err != nil || status != 200 {
		t.Fatalf("deliver poll = %d %v", status, err)
	}
	// A press of the message's button arrives as its data, and Telegram is told it was received.
	if status, err := peer.Deliver(ctx, peer.CallbackQuery(555000111, sent[0].MessageID, "track")); err != nil || status != 200 {
		t.Fatalf("deliver button press = %d %v", status, err)
	}
	waitFor(t, func() bool {
		for _, c := range peer.Calls() {
			if c.Method == "answerCallbackQuery" && c.Status == 200 {
				return true
			}
		}
		return false
	})
	var inbound, pressed, unsupported map[string]any
	waitFor(t, func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		for _, ev := range rcv.events {
			data, _ := ev["data"].(map[string]any)
			switch {
			case ev["event"] == "message.inbound" && data["text"] == "track":
				pressed = data
			case ev["event"] == "message.inbound":
				inbound = data
			case ev["event"] == "message.unsupported":
				unsupported = data
			}
		}
		return inbound != nil && pressed != nil && unsupported != nil
	})
	if c, _ := pressed["content"].(map[string]any); c["replyToMessageId"] != msgID {
		t.Errorf("button press = %v, want it to answer %s", pressed, msgID)
	}
	content, _ := inbound["content"].(map[string]any)
	if inbound["from"] != "555000111" || inbound["channel"] != "telegram" || inbound["text"] != "Where is it now?" ||
		content["replyToMessageId"] != msgID || inbound["providerTimestamp"] == nil {
		t.Errorf("message.inbound = %v", inbound)
	}
	if unsupported["kind"] != "poll" || unsupported["from"] != "555000111" {
		t.Errorf("message.unsupported = %v", unsupported)
	}

	// Posts without the bot's secret token change nothing.
	messages := in.count(`SELECT count(*) FROM messages WHERE project = $1`, acme)
	for name, c := range map[string]struct {
		secret string
		want   int
	}{"no token": {"", 401}, "another token": {"not-the-secret", 403}} {
		req, _ := http.NewRequest(http.MethodPost, hook.URL, strings.NewReader(`{"update_id":1,"message":{"message_id":9,"date":1700000000,"chat":{"id":555000111,"type":"private"},"from":{"id":555000111,"is_bot":false,"first_name":"Eve"},"text":"forged"}}`))
		req.Header.Set("Content-Type", "application/json")
		if c.secret != "" {
			req.Header.Set(telegram.SecretHeader, c.secret)
		}
		if resp := in.doRequest(req); resp.status != c.want {
			t.Errorf("%s = %d, want %d", name, resp.status, c.want)
		}
	}
	if in.count(`SELECT count(*) FROM messages WHERE project = $1`, acme) != messages {
		t.Errorf("a forged update was stored")
	}

	// Detaching the bot deletes its webhook.
	if r := in.do("DELETE", "/v1/senders/"+id+"/telegram", key, nil); r.status != 204 {
		t.Fatalf("detach = %d", r.status)
	}
	if hook := peer.Webhook(); hook.URL != "" {
		t.Errorf("webhook after detach = %+v", hook)
	}
}
