package app_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// publicAtListener makes the instance's own address its public URL: the providers' peers call
// back to it.
func publicAtListener(c *app.Config) { c.PublicURL = "http://" + c.Listener.Addr().String() }

// fewAttempts bounds a message's calls to its provider to 3, so a storm runs out quickly.
func fewAttempts(c *app.Config) { c.DispatchAttempts = 3 }

// twilioProject makes a project whose default Provider is the Twilio peer, with a sender on
// sms and voice at +15005550006 whose webhook goes to rcv, and a live key.
func twilioProject(t testing.TB, in *instance, peer *twiliotest.Server, rcv *hookReceiver) (string, string) {
	t.Helper()
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "twilio",
		Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}}
	provider := &v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "twilio"},
		Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderTwilio, BaseURL: peer.URL, Default: true,
			SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}}
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, PhoneNumber: "+15005550006",
		SMS: &v1alpha1.Activation{Active: true}, Voice: &v1alpha1.Enablement{Enabled: true},
		Webhook: &v1alpha1.SenderWebhook{URL: rcv.URL + "/hook"}}}
	for _, o := range []client.Object{creds, provider, snd} {
		if err := in.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	key := newKey(t, in, acme, apikey.Live)
	waitFor(t, func() bool {
		var p v1alpha1.Provider
		var s v1alpha1.Sender
		return in.k8s.Get(ctx, client.ObjectKeyFromObject(provider), &p) == nil && p.IsReady() &&
			in.k8s.Get(ctx, client.ObjectKeyFromObject(snd), &s) == nil && s.IsReady() && s.Status.WebhookSecret != nil
	})
	return acme, key
}

// waitStatus waits for message id to reach status and returns it as v2 shows it.
func waitStatus(t testing.TB, in *instance, key, id, status string) map[string]any {
	t.Helper()
	var m map[string]any
	waitFor(t, func() bool {
		m, _ = in.get("/v2/messages/"+id, key).body["message"].(map[string]any)
		return m["status"] == status
	})
	return m
}

func TestLiveSMSThroughTwilio(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted())
	acme, key := twilioProject(t, in, peer, rcv)

	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Your code is 1234"}`)
	msg, _ := r.body["message"].(map[string]any)
	if r.status != 200 || msg["channel"] != "sms" {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	id := msg["id"].(string)
	got := waitStatus(t, in, key, id, "delivered")
	sent := peer.Messages()
	if len(sent) != 1 || sent[0].To != "+15005550100" || sent[0].From != "+15005550006" || sent[0].Body != "Your code is 1234" ||
		got["providerMessageId"] != sent[0].SID {
		t.Fatalf("Twilio received %+v; message %v", sent, got)
	}
	// The callback names the message, so a report that overtakes the commit of sent still finds it.
	want := "http://" + strings.TrimPrefix(in.url, "http://") + "/callbacks/twilio/" + acme + "/twilio/status?m=" + id
	if sent[0].StatusCallback != want {
		t.Errorf("StatusCallback = %q, want %q", sent[0].StatusCallback, want)
	}
	waitFor(t, func() bool {
		names := rcv.names(id)
		return slices.Contains(names, "message.queued") && slices.Contains(names, "message.sent") && slices.Contains(names, "message.delivered")
	})

	// A callback Twilio did not sign, or signed with another token, changes nothing.
	delivered := in.count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'delivered'`, id)
	form := url.Values{"MessageSid": {sent[0].SID}, "MessageStatus": {"failed"}, "ErrorCode": {"30003"}}
	for name, c := range map[string]struct {
		signature string
		want      int
	}{
		"unsigned":         {"", http.StatusUnauthorized},
		"another token":    {twiliotest.Sign("0000000000000000000000000000000", want, form), http.StatusForbidden},
		"another URL":      {twiliotest.Sign(twiliotest.AuthToken, want+"?x=1", form), http.StatusForbidden},
		"unknown provider": {twiliotest.Sign(twiliotest.AuthToken, want, form), http.StatusNotFound},
	} {
		target := want
		if name == "unknown provider" {
			target = strings.Replace(want, "/twilio/status", "/nobody/status", 1)
		}
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.signature != "" {
			req.Header.Set("X-Twilio-Signature", c.signature)
		}
		if resp := in.doRequest(req); resp.status != c.want {
			t.Errorf("%s callback = %d, want %d", name, resp.status, c.want)
		}
	}
	if in.count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'delivered'`, id) != delivered {
		t.Errorf("a forged callback moved the message")
	}
	// A signed callback for a message Switchboard never sent is acknowledged and ignored.
	stranger := url.Values{"MessageSid": {"SM00000000000000000000000000000000"}, "MessageStatus": {"delivered"}}
	req, _ := http.NewRequest(http.MethodPost, want, strings.NewReader(stranger.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", twiliotest.Sign(twiliotest.AuthToken, want, stranger))
	if resp := in.doRequest(req); resp.status != http.StatusOK {
		t.Errorf("callback for an unknown message = %d, want 200", resp.status)
	}
}

func TestLiveVoiceThroughTwilio(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted())
	_, key := twilioProject(t, in, peer, rcv)

	r := in.post("/v1/messages", key, `{"to":"+33612345678","channel":"voice","text":"Votre code est 1234"}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "delivered")
	calls := peer.Calls()
	if len(calls) != 1 || calls[0].To != "+33612345678" || !strings.Contains(calls[0].Twiml, `language="fr-FR"`) ||
		!strings.Contains(calls[0].Twiml, "Votre code est 1234") || !strings.Contains(calls[0].StatusCallback, "/calls?m=msg_") {
		t.Fatalf("Twilio received calls %+v", calls)
	}

	// A destination the account may not call fails with its code.
	peer.Fail("+2348012345678", 21215, http.StatusBadRequest)
	r = in.post("/v2/messages", key, `{"to":"+2348012345678","channel":"voice","text":"Hello","voiceLanguage":"en-GB"}`)
	m := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "VOICE_ROUTE_UNAVAILABLE" || m["errorDetails"].(map[string]any)["providerCode"] != "21215" {
		t.Errorf("call without a route = %v", m)
	}

	// A busy line fails the message with its code.
	peer.CallOutcome("+15005550199", "busy")
	r = in.post("/v2/messages", key, `{"to":"+15005550199","channel":"voice","text":"Hello","voiceLanguage":"en-GB"}`)
	m = waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "VOICE_BUSY" {
		t.Errorf("busy call = %v", m)
	}
}

func TestTwilioRefusalsAndRetries(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, fewAttempts, rcv.trusted())
	_, key := twilioProject(t, in, peer, rcv)

	// A 4xx fails at once with Switchboard's code and Twilio's own.
	peer.Fail("+15005550101", 21211, http.StatusBadRequest)
	r := in.post("/v2/messages", key, `{"to":"+15005550101","text":"Hi"}`)
	m := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "INVALID_RECIPIENT" || m["errorDetails"].(map[string]any)["providerCode"] != "21211" {
		t.Errorf("refused = %v", m)
	}

	// A short 500 storm is ridden out: the message is sent once Twilio answers again.
	peer.Storm(1, http.StatusInternalServerError)
	r = in.post("/v2/messages", key, `{"to":"+15005550102","text":"Hi"}`)
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "delivered")

	// A storm longer than the attempts ends in PROVIDER_UNAVAILABLE after exactly 3 calls.
	before := len(peer.Messages())
	peer.Storm(100, http.StatusInternalServerError)
	r = in.post("/v2/messages", key, `{"to":"+15005550103","text":"Hi"}`)
	id := r.body["message"].(map[string]any)["id"].(string)
	m = waitStatus(t, in, key, id, "failed")
	if m["errorCode"] != "PROVIDER_UNAVAILABLE" || len(peer.Messages()) != before {
		t.Errorf("storm = %v; Twilio accepted %d messages meanwhile", m, len(peer.Messages())-before)
	}
	if n := in.count(`SELECT dispatch_attempts FROM messages WHERE id = $1`, id); n != 3 {
		t.Errorf("%d calls to Twilio, want 3", n)
	}
	peer.Storm(0, 0)

	// Twilio's opt-out answer is remembered: the next send fails without calling Twilio.
	peer.Fail("+15005550104", 21610, http.StatusBadRequest)
	r = in.post("/v1/messages", key, `{"to":"+15005550104","text":"Hi"}`)
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed")
	before = len(peer.Messages())
	peer.Fail("+15005550104", 0, 0)
	r = in.post("/v1/messages", key, `{"to":"+15005550104","text":"Hi again"}`)
	m = waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "RECIPIENT_UNSUBSCRIBED" || len(peer.Messages()) != before {
		t.Errorf("after the opt-out = %v; Twilio was called %d times", m, len(peer.Messages())-before)
	}
}

func TestInboundSMSThroughTwilio(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted())
	acme, key := twilioProject(t, in, peer, rcv)
	webhook := in.url + "/callbacks/twilio/" + acme + "/twilio/inbound"
	ctx := context.Background()

	status, body, err := peer.SendInbound(ctx, webhook, "+15005550120", "+15005550006", "Is my order ready?")
	if err != nil || status != http.StatusOK || !strings.Contains(body, "<Response>") {
		t.Fatalf("inbound = %d %q %v", status, body, err)
	}
	var inbound map[string]any
	waitFor(t, func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		for _, ev := range rcv.events {
			if ev["event"] == "message.inbound" {
				inbound = ev["data"].(map[string]any)
				return true
			}
		}
		return false
	})
	if inbound["from"] != "+15005550120" || inbound["text"] != "Is my order ready?" || inbound["channel"] != "sms" ||
		inbound["providerTimestamp"] != nil {
		t.Errorf("message.inbound = %v", inbound)
	}
	if n := in.count(`SELECT count(*) FROM conversations WHERE project = $1 AND contact_identifier = '+15005550120'`, acme); n != 1 {
		t.Errorf("%d conversations for the contact", n)
	}

	// STOP stops the number's sends to them until START.
	if status, _, err := peer.SendInbound(ctx, webhook, "+15005550120", "+15005550006", "stop"); err != nil || status != http.StatusOK {
		t.Fatalf("STOP = %d %v", status, err)
	}
	before := len(peer.Messages())
	r := in.post("/v1/messages", key, `{"to":"+15005550120","text":"Ready!"}`)
	if m := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed"); m["errorCode"] != "RECIPIENT_UNSUBSCRIBED" {
		t.Errorf("after STOP = %v", m)
	}
	if len(peer.Messages()) != before {
		t.Errorf("Twilio was called after STOP")
	}
	if status, _, err := peer.SendInbound(ctx, webhook, "+15005550120", "+15005550006", "START"); err != nil || status != http.StatusOK {
		t.Fatalf("START = %d %v", status, err)
	}
	r = in.post("/v1/messages", key, `{"to":"+15005550120","text":"Ready!"}`)
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "delivered")

	// A forged inbound message stores nothing.
	messages := in.count(`SELECT count(*) FROM messages WHERE project = $1`, acme)
	form := url.Values{"MessageSid": {"SM11111111111111111111111111111111"}, "From": {"+15005550121"}, "To": {"+15005550006"}, "Body": {"hi"}}
	req, _ := http.NewRequest(http.MethodPost, webhook, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", "bm9wZQ==")
	if resp := in.doRequest(req); resp.status != http.StatusForbidden {
		t.Errorf("forged inbound = %d, want 403", resp.status)
	}
	if in.count(`SELECT count(*) FROM messages WHERE project = $1`, acme) != messages {
		t.Errorf("a forged inbound message was stored")
	}
}

func TestLiveSendsNeedAProvider(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, rcv.trusted())
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true}}}
	if err := in.k8s.Create(ctx, snd); err != nil {
		t.Fatal(err)
	}
	live, test := newKey(t, in, acme, apikey.Live), newKey(t, in, acme, apikey.Test)
	waitFor(t, func() bool {
		chans, _ := in.get("/v1/senders/main", live).body["channels"].([]any) // 404 until the cache has the sender
		return len(chans) == 1
	})

	// No Provider serves sms: refused, nothing stored; a test key still sends (the sandbox).
	before := in.count("SELECT count(*) FROM messages")
	if r := in.post("/v1/messages", live, `{"to":"+15005550100","text":"Hi"}`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("v1 without a provider = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/messages", live, `{"to":"+15005550100","text":"Hi"}`); r.status != 409 || r.body["code"] != "no_channel" {
		t.Errorf("v2 without a provider = %d %v", r.status, r.body)
	}
	if after := in.count("SELECT count(*) FROM messages"); after != before {
		t.Errorf("refused sends stored %d messages", after-before)
	}
	if r := in.post("/v1/messages", test, `{"to":"+15005550100","text":"Hi"}`); r.status != 200 {
		t.Errorf("test key = %d %v", r.status, r.body)
	}

	// A Provider whose Secret is missing is not Ready, says why, and fails sends with a code.
	provider := &v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "twilio"},
		Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderTwilio, BaseURL: "http://127.0.0.1:1", Default: true,
			SecretRef: &v1alpha1.ProviderSecretRef{Name: "missing"}}}
	if err := in.k8s.Create(ctx, provider); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		var p v1alpha1.Provider
		_ = in.k8s.Get(ctx, client.ObjectKeyFromObject(provider), &p)
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonSecretNotFound
	})
	r := in.post("/v1/messages", live, `{"to":"+15005550100","text":"Hi"}`)
	if r.status != 200 {
		t.Fatalf("send with a provider = %d %v", r.status, r.body)
	}
	m := waitStatus(t, in, live, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "PROVIDER_NOT_READY" || !strings.Contains(m["errorMessage"].(string), "missing") {
		t.Errorf("send through a provider without its Secret = %v", m)
	}

	// Credentials the provider refuses: CredentialsRejected, and sends fail without calling it.
	peer := twiliotest.NewServer(t)
	if err := in.k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "missing",
		Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": "00000000000000000000000000000000"}}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"spec":{"baseURL":"` + peer.URL + `"}}`)
	if err := in.k8s.Patch(ctx, provider, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		var p v1alpha1.Provider
		_ = in.k8s.Get(ctx, client.ObjectKeyFromObject(provider), &p)
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonCredentialsRejected
	})
	r = in.post("/v1/messages", live, `{"to":"+15005550100","text":"Hi"}`)
	m = waitStatus(t, in, live, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "PROVIDER_NOT_READY" || len(peer.Messages()) != 0 {
		t.Errorf("send through refused credentials = %v; Twilio took %d messages", m, len(peer.Messages()))
	}
}
