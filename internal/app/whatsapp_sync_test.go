package app_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

// TestWhatsAppCoexistenceSync: a sender whose number was onboarded from the WhatsApp Business
// app syncs its contacts (named in the project's contacts) and its history (mirrored into
// conversations, without webhooks or the Free plan's allowance), each once, through Meta's
// smb_app_data and its webhooks; echoes of what the business sends from the app join the
// conversations; a sender that is not in coexistence, a second start and a webhook for a
// number the Provider's project does not have change nothing. Test keys sync in the sandbox.
func TestWhatsAppCoexistenceSync(t *testing.T) {
	peer := metatest.NewServer(t, metatest.Options{})
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted())
	ctx := context.Background()
	acme, key := metaProject(t, in, peer, metatest.Token)
	test := newKey(t, in, acme, apikey.Test)
	if c := providerReady(t, in, acme, "meta"); c.Status != "True" {
		t.Fatalf("Provider Ready = %+v", c)
	}
	const ana, ben = "+15551230001", "+15551230002"
	peer.SetCoexistence(waPhoneID, []metatest.SyncContact{{FullName: "Ana Lima", PhoneNumber: ana[1:]}, {FullName: "Ben Ode", PhoneNumber: ben[1:]}},
		[]metatest.HistoryThreadSpec{{WaID: ana[1:], Messages: []metatest.HistoryMessageSpec{{Text: "Do you deliver?"}, {FromBusiness: true, Text: "Yes, every day"}}},
			{WaID: ben[1:], Messages: []metatest.HistoryMessageSpec{{Text: "Open on Sunday?"}}}})

	// Not in coexistence: nothing can be synced.
	r := in.get("/v1/senders/wa/whatsapp-sync", key)
	if s := r.body["sync"].(map[string]any); r.status != 200 || s["isCoexistence"] != false || s["status"] != "active" ||
		s["contacts"].(map[string]any)["canSync"] != false || s["history"].(map[string]any)["status"] != "not_requested" {
		t.Fatalf("sync status = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/senders/wa/whatsapp-sync/contacts", key, ``); r.status != 400 || len(peer.SyncRequests()) != 0 {
		t.Errorf("a sync of a sender not in coexistence = %d %v", r.status, r.body)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var snd v1alpha1.Sender
		if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "wa"}, &snd); err != nil {
			return err
		}
		snd.Spec.WhatsApp.Coexistence = true
		snd.Spec.Webhook = &v1alpha1.SenderWebhook{URL: rcv.URL + "/hook"}
		return in.k8s.Update(ctx, &snd)
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return in.get("/v1/senders/wa/whatsapp-sync", key).body["sync"].(map[string]any)["contacts"].(map[string]any)["canSync"] == true
	})

	hook := in.url + "/callbacks/meta/" + acme + "/meta"
	deliver := func(ps []metatest.Payload) {
		t.Helper()
		for _, p := range ps {
			if code, err := metatest.WebhookPost(ctx, hook, []byte(metatest.AppSecret), p); err != nil || code != 200 {
				t.Fatalf("webhook = %d %v", code, err)
			}
		}
	}

	// Contacts.
	r = in.post("/v1/senders/wa/whatsapp-sync/contacts", key, ``)
	if r.status != 200 || r.body["message"] == "" || r.body["sync"].(map[string]any)["contacts"].(map[string]any)["status"] != "pending" {
		t.Fatalf("start contacts = %d %v", r.status, r.body)
	}
	if reqs := peer.SyncRequests(); len(reqs) != 1 {
		t.Fatalf("sync requests at Meta: %v", reqs)
	}
	deliver(peer.SyncPayloads(waPhoneID, meta.SyncContacts))
	waitFor(t, func() bool {
		return in.get("/v1/senders/wa/whatsapp-sync", key).body["sync"].(map[string]any)["contacts"].(map[string]any)["status"] == "completed"
	})
	if n := in.count(`SELECT count(*) FROM contacts WHERE project = $1 AND NOT test_mode AND display_name IN ('Ana Lima', 'Ben Ode')`, acme); n != 2 {
		t.Errorf("%d contacts named from the app", n)
	}
	if r := in.post("/v1/senders/wa/whatsapp-sync/contacts", key, ``); r.status != 400 || len(peer.SyncRequests()) != 1 {
		t.Errorf("a second contacts sync = %d %v", r.status, r.body)
	}

	// History: three messages in two conversations, none announced.
	if r := in.post("/v1/senders/wa/whatsapp-sync/history", key, ``); r.status != 200 {
		t.Fatalf("start history = %d %v", r.status, r.body)
	}
	deliver(peer.SyncPayloads(waPhoneID, meta.SyncHistory))
	waitFor(t, func() bool {
		h := in.get("/v1/senders/wa/whatsapp-sync", key).body["sync"].(map[string]any)["history"].(map[string]any)
		return h["status"] == "completed" && h["completedAt"] != nil
	})
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND options->>'mirrored' = 'history'`, acme); n != 3 {
		t.Errorf("%d history messages mirrored, want 3", n)
	}
	if n := in.count(`SELECT count(DISTINCT conversation_id) FROM messages WHERE project = $1 AND options->>'mirrored' = 'history'`, acme); n != 2 {
		t.Errorf("history in %d conversations, want 2", n)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND options->>'mirrored' = 'history' AND direction = 'outbound' AND recipient = $2`, acme, ana); n != 1 {
		t.Errorf("%d of the business's history messages to Ana", n)
	}
	convs := in.get("/v1/conversations", key)
	if items, _ := convs.body["items"].([]any); convs.status != 200 || len(items) != 2 {
		t.Errorf("conversations = %d %v", convs.status, convs.body)
	}
	// The same chunks again (Meta posts again when unanswered): kept once.
	deliver(peer.SyncPayloads(waPhoneID, meta.SyncHistory))
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND options->>'mirrored' = 'history'`, acme); n != 3 {
		t.Errorf("%d history messages after a second delivery", n)
	}

	// An echo of a message the business sent from the app.
	deliver([]metatest.Payload{metatest.HookEcho(waPhoneID, waDisplay, ben[1:], "wamid.echo1", "See you Sunday")})
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND options->>'mirrored' = 'echo' AND recipient = $2`, acme, ben) == 1
	})
	// A contact's own message is announced; none of the mirrored ones were.
	deliver([]metatest.Payload{metatest.HookTextMessage(waPhoneID, waDisplay, ana[1:], "wamid.live1", "Thanks!")})
	waitFor(t, func() bool { return rcv.event("message.inbound", "text", "Thanks!") != nil })
	rcv.mu.Lock()
	inbound := 0
	for _, ev := range rcv.events {
		if ev["event"] == "message.inbound" {
			inbound++
		}
	}
	rcv.mu.Unlock()
	if inbound != 1 {
		t.Errorf("%d message.inbound events, want 1: mirrored messages were announced", inbound)
	}

	// Another project's number: nothing stored.
	other := newProject(t, in, v1alpha1.ProjectSpec{})
	in.createObjects(t, labelledSecret(other, "meta", map[string]string{"accessToken": metatest.Token, "appSecret": metatest.AppSecret}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "meta"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderMeta, BaseURL: peer.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "meta"},
			Meta: &v1alpha1.MetaSettings{AppID: metatest.AppID}}})
	providerReady(t, in, other, "meta")
	otherHook := in.url + "/callbacks/meta/" + other + "/meta"
	if code, err := metatest.WebhookPost(ctx, otherHook, []byte(metatest.AppSecret), metatest.HookEcho(waPhoneID, waDisplay, ana[1:], "wamid.echo2", "x")); err != nil || code != 200 {
		t.Fatalf("webhook = %d %v", code, err)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE provider_message_id = 'wamid.echo2'`); n != 0 {
		t.Errorf("another project's number's echo was stored %d times", n)
	}

	// Test keys: the sandbox completes a sync at once, and uses up nothing of live's.
	r = in.post("/v1/senders/wa/whatsapp-sync/history", test, ``)
	if r.status != 200 || r.body["sync"].(map[string]any)["history"].(map[string]any)["status"] != "completed" {
		t.Errorf("sandbox history sync = %d %v", r.status, r.body)
	}
	if len(peer.SyncRequests()) != 2 {
		t.Errorf("a test key's sync reached Meta: %v", peer.SyncRequests())
	}
}
