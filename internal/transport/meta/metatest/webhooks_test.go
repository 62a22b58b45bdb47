package metatest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

const (
	hookNumberID = "106540352242922"
	hookDisplay  = "+15550783881"
	hookContact  = "+16505551234"
	hookBSUID    = "US.13491208655302741918"
)

// hookParse reads p back through meta.ParseWebhook, and clears the times the builders stamp
// with the clock after checking they are now.
func hookParse(t *testing.T, p metatest.Payload) meta.Events {
	t.Helper()
	ev, err := meta.ParseWebhook(p.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	recent := func(at time.Time) {
		if d := time.Since(at); d < -time.Second || d > time.Minute {
			t.Errorf("stamped %v, not now", at)
		}
	}
	for i := range ev.Messages {
		if ts := ev.Messages[i].ProviderTimestamp; ts != nil {
			recent(*ts)
		}
		ev.Messages[i].ProviderTimestamp = nil
	}
	for i := range ev.Statuses {
		recent(ev.Statuses[i].Timestamp)
		ev.Statuses[i].Timestamp = time.Time{}
	}
	for i := range ev.Templates {
		recent(ev.Templates[i].Timestamp)
		ev.Templates[i].Timestamp = time.Time{}
	}
	return *ev
}

func hookFrom(from, wamid, messageType, text string, c *transport.Content) meta.HookMessage {
	return meta.HookMessage{AccountID: hookNumberID, Inbound: transport.Inbound{Channel: "whatsapp", From: from, To: hookDisplay,
		MessageType: messageType, Text: text, Content: c, ProviderMessageID: wamid, ProfileName: metatest.HookContactName}}
}

func TestHookBuildersRoundTrip(t *testing.T) {
	t.Parallel()
	referral := transport.Referral{SourceType: "ad", SourceID: "120226305854810726", SourceURL: "https://fb.me/3cr4Wqqkv",
		Headline: "Summer sale", Body: "Chat with us", MediaType: "image", ImageURL: "https://example.test/ad.jpg", CtwaClid: "Afc3nYt4"}
	withReply := func(m meta.HookMessage, to string) meta.HookMessage { m.ReplyToProviderMessageID = to; return m }

	text := hookFrom(hookContact, "wamid.1", "text", "Hello", nil)
	reply := withReply(hookFrom(hookContact, "wamid.2", "text", "Yes", nil), "wamid.0")
	first := hookFrom(hookContact, "wamid.3", "text", "Is the sale on?", nil)
	first.Referral = &referral
	bsuid := hookFrom(hookBSUID, "wamid.4", "text", "Hi", nil)
	bsuid.UserID = hookBSUID
	image := hookFrom(hookContact, "wamid.5", "image", "Receipt", &transport.Content{MediaID: "1003383421387256", MimeType: "image/jpeg"})
	image.MediaID, image.MediaMime, image.MediaSHA256 = "1003383421387256", "image/jpeg", metatest.HookMediaSHA256("1003383421387256")
	doc := hookFrom(hookContact, "wamid.6", "document", "", &transport.Content{MediaID: "77", MimeType: "application/pdf", Filename: "a.pdf"})
	doc.MediaID, doc.MediaMime, doc.MediaSHA256 = "77", "application/pdf", metatest.HookMediaSHA256("77")
	button := withReply(hookFrom(hookContact, "wamid.7", "text", "Cancel",
		&transport.Content{Buttons: []transport.Button{{ID: "cancel", Title: "Cancel"}}}), "wamid.0")
	row := withReply(hookFrom(hookContact, "wamid.8", "text", "Express",
		&transport.Content{Buttons: []transport.Button{{ID: "express", Title: "Express"}}}), "wamid.0")
	reaction := withReply(hookFrom(hookContact, "wamid.9", "reaction", "", &transport.Content{Emoji: "👍"}), "wamid.0")
	unreaction := withReply(hookFrom(hookContact, "wamid.10", "reaction", "", &transport.Content{}), "wamid.0")

	status := func(recipient, s string, f *transport.Failure) meta.HookStatus {
		st := meta.HookStatus{Channel: "whatsapp", AccountID: hookNumberID, Recipient: recipient,
			StatusUpdate: transport.StatusUpdate{ProviderMessageID: "wamid.out", Status: s, Failure: f}}
		if f == nil {
			st.PricingCategory = "utility"
		}
		return st
	}
	messengerText := meta.HookMessage{AccountID: "682498302938465", Inbound: transport.Inbound{Channel: "messenger",
		From: "1254477777772919", MessageType: "text", Text: "hello", ProviderMessageID: "m_1"}}
	instagramText := meta.HookMessage{AccountID: "17841405822304914", Inbound: transport.Inbound{Channel: "instagram",
		From: "6433221234567890", MessageType: "text", Text: "hi", ProviderMessageID: "aWdf1"}}

	for _, tc := range []struct {
		name string
		p    metatest.Payload
		want meta.Events
	}{
		{"text", metatest.HookTextMessage(hookNumberID, hookDisplay, hookContact, "wamid.1", "Hello"), meta.Events{Messages: []meta.HookMessage{text}}},
		{"text with context", metatest.HookTextMessage(hookNumberID, hookDisplay, hookContact, "wamid.2", "Yes", metatest.HookContext("wamid.0")),
			meta.Events{Messages: []meta.HookMessage{reply}}},
		{"referral", metatest.HookTextMessage(hookNumberID, hookDisplay, hookContact, "wamid.3", "Is the sale on?", metatest.HookReferral(referral)),
			meta.Events{Messages: []meta.HookMessage{first}}},
		{"from a business-scoped user id", metatest.HookTextMessage(hookNumberID, hookDisplay, hookBSUID, "wamid.4", "Hi"),
			meta.Events{Messages: []meta.HookMessage{bsuid}}},
		{"image", metatest.HookMediaMessage(hookNumberID, hookDisplay, hookContact, "wamid.5", "image", "1003383421387256", "image/jpeg", "Receipt"),
			meta.Events{Messages: []meta.HookMessage{image}}},
		{"document", metatest.HookMediaMessage(hookNumberID, hookDisplay, hookContact, "wamid.6", "document", "77", "application/pdf", "", metatest.HookFilename("a.pdf")),
			meta.Events{Messages: []meta.HookMessage{doc}}},
		{"button reply", metatest.HookInteractiveReply(hookNumberID, hookDisplay, hookContact, "wamid.7", "wamid.0", "button_reply", "cancel", "Cancel"),
			meta.Events{Messages: []meta.HookMessage{button}}},
		{"list reply", metatest.HookInteractiveReply(hookNumberID, hookDisplay, hookContact, "wamid.8", "wamid.0", "list_reply", "express", "Express"),
			meta.Events{Messages: []meta.HookMessage{row}}},
		{"reaction", metatest.HookReaction(hookNumberID, hookDisplay, hookContact, "wamid.9", "wamid.0", "👍"), meta.Events{Messages: []meta.HookMessage{reaction}}},
		{"reaction removed", metatest.HookReaction(hookNumberID, hookDisplay, hookContact, "wamid.10", "wamid.0", ""), meta.Events{Messages: []meta.HookMessage{unreaction}}},
		{"status sent", metatest.HookStatus(hookNumberID, hookDisplay, "wamid.out", hookContact, "sent", 0),
			meta.Events{Statuses: []meta.HookStatus{status(hookContact, transport.StatusSent, nil)}}},
		{"status read by a business-scoped user id", metatest.HookStatus(hookNumberID, hookDisplay, "wamid.out", hookBSUID, "read", 0),
			meta.Events{Statuses: []meta.HookStatus{status(hookBSUID, transport.StatusRead, nil)}}},
		{"status failed", metatest.HookStatus(hookNumberID, hookDisplay, "wamid.out", hookContact, "failed", 131047),
			meta.Events{Statuses: []meta.HookStatus{status(hookContact, transport.StatusFailed, &transport.Failure{
				Code: "WHATSAPP_WINDOW_CLOSED", ProviderCode: "131047", Message: "Re-engagement message (131047)"})}}},
		{"template approved", metatest.HookTemplateStatus("555", "1689556908129832", "order_confirmation", "en_US", "APPROVED", ""),
			meta.Events{Templates: []meta.TemplateUpdate{{WABAID: "555", TemplateID: "1689556908129832", Name: "order_confirmation", Language: "en_US", Event: "APPROVED"}}}},
		{"template rejected", metatest.HookTemplateStatus("555", "1689556908129833", "promo", "pt_BR", "REJECTED", "INCORRECT_CATEGORY"),
			meta.Events{Templates: []meta.TemplateUpdate{{WABAID: "555", TemplateID: "1689556908129833", Name: "promo", Language: "pt_BR", Event: "REJECTED", Reason: "INCORRECT_CATEGORY"}}}},
		{"template category", metatest.HookTemplateCategory("555", "1689556908129832", "order_confirmation", "en_US", "UTILITY", "MARKETING"),
			meta.Events{Templates: []meta.TemplateUpdate{{WABAID: "555", TemplateID: "1689556908129832", Name: "order_confirmation", Language: "en_US",
				Category: "MARKETING", PreviousCategory: "UTILITY"}}}},
		{"messenger text", metatest.HookMessengerText("682498302938465", "1254477777772919", "m_1", "hello"), meta.Events{Messages: []meta.HookMessage{messengerText}}},
		{"instagram text", metatest.HookInstagramText("17841405822304914", "6433221234567890", "aWdf1", "hi"), meta.Events{Messages: []meta.HookMessage{instagramText}}},
		{"batch", metatest.HookBatch(metatest.HookTextMessage(hookNumberID, hookDisplay, hookContact, "wamid.1", "Hello"),
			metatest.HookStatus(hookNumberID, hookDisplay, "wamid.out", hookContact, "sent", 0)),
			meta.Events{Messages: []meta.HookMessage{text}, Statuses: []meta.HookStatus{status(hookContact, transport.StatusSent, nil)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := hookParse(t, tc.p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestHookMessengerReceipts(t *testing.T) {
	t.Parallel()
	watermark := time.Now().Add(-30 * time.Second).UnixMilli()
	ev := hookParse(t, metatest.HookMessengerRead("682498302938465", "1254477777772919", watermark))
	if len(ev.Statuses) != 1 || ev.Statuses[0].Status != transport.StatusRead || !ev.Statuses[0].Watermark.Equal(time.UnixMilli(watermark)) ||
		ev.Statuses[0].ProviderMessageID != "" || ev.Statuses[0].Recipient != "1254477777772919" {
		t.Errorf("read: got %+v", ev.Statuses)
	}
	ev = hookParse(t, metatest.HookMessengerDelivery("682498302938465", "1254477777772919", watermark, "m_1", "m_2"))
	if len(ev.Statuses) != 2 || ev.Statuses[0].ProviderMessageID != "m_1" || ev.Statuses[1].ProviderMessageID != "m_2" ||
		ev.Statuses[1].Status != transport.StatusDelivered || !ev.Statuses[1].Watermark.IsZero() {
		t.Errorf("delivery: got %+v", ev.Statuses)
	}
}

func TestWebhookPost(t *testing.T) {
	t.Parallel()
	secret := []byte("app-secret")
	var (
		mu  sync.Mutex
		got meta.Events
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, meta.WebhookMaxBody))
		if r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		if err := meta.VerifySignature(secret, body, r.Header.Get(meta.WebhookSignatureHeader)); err != nil {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		ev, err := meta.ParseWebhook(body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = *ev
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	p := metatest.HookTextMessage(hookNumberID, hookDisplay, hookContact, "wamid.1", "Hello")

	code, err := metatest.WebhookPost(ctx, srv.URL+"/callbacks/meta", secret, p)
	if err != nil || code != http.StatusOK {
		t.Fatalf("signed post: %d, %v", code, err)
	}
	mu.Lock()
	if len(got.Messages) != 1 || got.Messages[0].Text != "Hello" {
		t.Errorf("the webhook read %+v", got)
	}
	mu.Unlock()
	if code, err := metatest.WebhookPost(ctx, srv.URL, []byte("another secret"), p); err != nil || code != http.StatusForbidden {
		t.Errorf("post signed with another secret: %d, %v; want 403", code, err)
	}
	for _, u := range []string{"http://192.0.2.10/hook", "https://example.com/hook", "http://[::ffff:8.8.8.8]/", "ftp://127.0.0.1/"} {
		if _, err := metatest.WebhookPost(ctx, u, secret, p); err == nil {
			t.Errorf("posted to %s", u)
		} else if u != "ftp://127.0.0.1/" && !errors.Is(err, metatest.ErrWebhookNotLoopback) {
			t.Errorf("post to %s: %v, want ErrWebhookNotLoopback", u, err)
		}
	}
}

func TestSignHook(t *testing.T) {
	t.Parallel()
	body := []byte(`{"object":"page","entry":[]}`)
	if err := meta.VerifySignature([]byte("s"), body, metatest.SignHook([]byte("s"), body)); err != nil {
		t.Errorf("SignHook's signature does not verify: %v", err)
	}
	if err := meta.VerifySignature([]byte("s"), body, metatest.SignHook([]byte("t"), body)); !errors.Is(err, meta.ErrWebhookSignature) {
		t.Errorf("a signature under another secret verified: %v", err)
	}
}
