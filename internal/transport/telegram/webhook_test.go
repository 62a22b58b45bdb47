package telegram_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
	"github.com/switchboard-io/switchboard/internal/transport/telegram/telegramtest"
)

// secret0 is a webhook secret token of the tests.
const secret0 = "Zk9vYmFyYmF6cXV4cXV1eHF1dXpxdXV4cXV1eHF1dXo"

func TestSetAndDeleteWebhook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := telegramtest.NewServer(t)
	c := telegram.Client{API: srv.URL}
	secret := secret0
	if err := c.SetWebhook(ctx, goodToken, "https://hooks.acme.example/telegram/123456789", secret); err != nil {
		t.Fatalf("SetWebhook: %v", err)
	}
	want := telegramtest.Webhook{URL: "https://hooks.acme.example/telegram/123456789", SecretToken: secret,
		AllowedUpdates: []string{"message", "edited_message", "callback_query", "message_reaction"}}
	if got := srv.Webhook(); !reflect.DeepEqual(got, want) {
		t.Fatalf("webhook = %+v, want %+v", got, want)
	}
	if c := srv.Sent()[0]; c.Method != "setWebhook" || c.Param("drop_pending_updates") != "false" {
		t.Errorf("setWebhook call = %+v", c.Params)
	}
	if err := c.DeleteWebhook(ctx, goodToken); err != nil {
		t.Fatalf("DeleteWebhook: %v", err)
	}
	if got := srv.Webhook(); got.URL != "" || got.SecretToken != "" {
		t.Fatalf("webhook after delete = %+v", got)
	}

	const unknown = "987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsXX"
	for name, err := range map[string]error{
		"set, unknown token":    c.SetWebhook(ctx, unknown, "https://hooks.acme.example/t", secret),
		"delete, unknown token": c.DeleteWebhook(ctx, unknown),
		"set, malformed token":  c.SetWebhook(ctx, "nope", "https://hooks.acme.example/t", secret),
	} {
		if !errors.Is(err, telegram.ErrInvalidToken) {
			t.Errorf("%s: %v, want ErrInvalidToken", name, err)
		}
	}
	before := len(srv.Calls())
	if err := c.SetWebhook(ctx, goodToken, "https://hooks.acme.example/t", ""); err == nil {
		t.Error("a webhook without a secret token was set")
	}
	if len(srv.Calls()) != before {
		t.Error("a webhook without a secret token reached Telegram")
	}
	// Telegram refuses a secret token outside its character set.
	if err := c.SetWebhook(ctx, goodToken, "https://hooks.acme.example/t", "not/allowed="); transport.AsFailure(err) == nil {
		t.Errorf("bad secret token: %v, want a refusal", err)
	}
}

func TestNewWebhookSecret(t *testing.T) {
	t.Parallel()
	s, err := telegram.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`).MatchString(s) {
		t.Fatalf("secret %q is not a secret_token Telegram takes (A-Z a-z 0-9 _ -, up to 256)", s)
	}
	if again, _ := telegram.NewWebhookSecret(); again == s {
		t.Error("two webhooks share a secret")
	}
}

func TestVerifySecretToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header, want string
		ok           bool
	}{
		{"s3cret-token_1", "s3cret-token_1", true},
		{"s3cret-token_2", "s3cret-token_1", false},
		{"s3cret-token", "s3cret-token_1", false},
		{"s3cret-token_1x", "s3cret-token_1", false},
		{"", "s3cret-token_1", false},
		{"", "", false},
		{"anything", "", false},
	} {
		if got := telegram.VerifySecretToken(tc.header, tc.want); got != tc.ok {
			t.Errorf("VerifySecretToken(%q, %q) = %v", tc.header, tc.want, got)
		}
	}
}

// TestWebhookDelivery: the peer posts the updates its builders make to the webhook set through
// the client; a receiver that checks the secret token and parses them reads each as sent.
func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := telegramtest.NewServer(t)
	client := telegram.Client{API: api.URL}
	secret := secret0

	got := make(chan transport.Inbound, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !telegram.VerifySecretToken(r.Header.Get(telegram.SecretHeader), secret) {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		in, ok, err := telegram.ParseUpdate(body)
		switch {
		case err != nil:
			w.WriteHeader(http.StatusBadRequest)
		case ok:
			got <- in
		}
	}))
	t.Cleanup(receiver.Close)
	if err := client.SetWebhook(ctx, goodToken, receiver.URL+"/telegram", secret); err != nil {
		t.Fatal(err)
	}

	// The bot's message 1 in chat 42, which the contact then answers.
	tr := telegram.Transport{Client: client}
	m := outbound("buttons", "Delivery today?", &transport.Content{Buttons: []transport.Button{{ID: "yes", Title: "Yes"}}})
	if _, err := tr.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	deliver := func(u telegramtest.Update) transport.Inbound {
		t.Helper()
		status, err := api.Deliver(ctx, u)
		if err != nil || status != http.StatusOK {
			t.Fatalf("Deliver = %d, %v", status, err)
		}
		select {
		case in := <-got:
			return in
		default:
			t.Fatalf("update %v stored nothing", u)
		}
		return transport.Inbound{}
	}

	in := deliver(api.Message(42, "Hi there"))
	if in.MessageType != "text" || in.Text != "Hi there" || in.From != "42" || in.ProviderMessageID != "42:2" ||
		in.ProfileName != "Ada Lovelace" || in.Channel != "telegram" || in.ProviderTimestamp == nil {
		t.Errorf("message = %+v", in)
	}
	if in := deliver(api.Reply(42, 1, "Yes please")); in.ReplyToProviderMessageID != "42:1" || in.Text != "Yes please" {
		t.Errorf("reply = %+v", in)
	}
	photo := api.Photo(42, "My receipt")
	if in := deliver(photo); in.MessageType != "image" || in.Text != "My receipt" || in.Content == nil || in.Content.MediaID != photo.PhotoFileID() {
		t.Errorf("photo = %+v %+v, want media %s", in, in.Content, photo.PhotoFileID())
	}
	if in := deliver(api.CallbackQuery(42, 1, "yes")); in.MessageType != "text" || in.Text != "yes" || in.ReplyToProviderMessageID != "42:1" {
		t.Errorf("button press = %+v", in)
	} else if id, ok := telegram.CallbackQueryID(in.ProviderMessageID); !ok {
		t.Errorf("button press id %q names no callback query", in.ProviderMessageID)
	} else if err := client.AnswerCallbackQuery(ctx, goodToken, id); err != nil {
		t.Errorf("AnswerCallbackQuery: %v", err)
	}
	r1, r2 := deliver(api.Reaction(42, 1, "👍")), deliver(api.Reaction(42, 1, "🔥"))
	if r1.MessageType != "reaction" || r1.Content.Emoji != "👍" || r1.ReplyToProviderMessageID != "42:1" {
		t.Errorf("reaction = %+v", r1)
	}
	if r1.ProviderMessageID == "" || r1.ProviderMessageID == r2.ProviderMessageID {
		t.Errorf("two reactions have provider ids %q and %q: a repeated delivery cannot be told from a new reaction", r1.ProviderMessageID, r2.ProviderMessageID)
	}
	if in := deliver(api.Poll(42, "Lunch?")); in.Unsupported != "poll" || in.MessageType != "" || in.From != "42" {
		t.Errorf("poll = %+v", in)
	}
	// A group: the chat is the address, the member the name.
	if in := deliver(api.Message(-1001234567890, "Hello group")); in.From != "-1001234567890" || in.ProfileName != "Ada Lovelace" {
		t.Errorf("group message = %+v", in)
	}

	// Someone else posting to the webhook, without the secret.
	forged, err := http.Post(receiver.URL+"/telegram", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	forged.Body.Close()
	if forged.StatusCode != http.StatusForbidden {
		t.Errorf("forged update = %d, want 403", forged.StatusCode)
	}

	// Once deleted, there is nothing to deliver to.
	if err := client.DeleteWebhook(ctx, goodToken); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Deliver(ctx, api.Message(42, "late")); err == nil {
		t.Error("delivered without a webhook")
	}
}

func TestDeliverStaysOnLoopback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := telegramtest.NewServer(t)
	client := telegram.Client{API: api.URL}
	for _, u := range []string{"https://hooks.acme.example/telegram", "http://192.0.2.10:8080/telegram", "http://[2001:db8::1]/t"} {
		if err := client.SetWebhook(ctx, goodToken, u, "s3cret"); err != nil {
			t.Fatal(err)
		}
		if _, err := api.Deliver(ctx, api.Message(42, "hi")); err == nil {
			t.Errorf("Deliver posted to %s", u)
		}
	}
}
