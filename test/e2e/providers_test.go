package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/transport/telegram/telegramtest"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// receiver collects webhook deliveries.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	events []map[string]any
}

func newReceiver(t *testing.T) *receiver {
	rcv := &receiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &ev)
		rcv.mu.Lock()
		rcv.events = append(rcv.events, ev)
		rcv.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

// find returns the data of the first event named name for which match holds.
func (r *receiver) find(name string, match func(data map[string]any) bool) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if data, _ := ev["data"].(map[string]any); ev["event"] == name && match(data) {
			return data
		}
	}
	return nil
}

// api calls the dev system's REST API.
type api struct {
	t   *testing.T
	url string
}

func (a api) do(method, path, key, body string, header ...string) (int, map[string]any) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// waitMessage waits until message id has status and returns it (v2's shape).
func (a api) waitMessage(key, id, status string) map[string]any {
	a.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body := a.do(http.MethodGet, "/v2/messages/"+id, key, "")
		m, _ := body["message"].(map[string]any)
		if m["status"] == status {
			return m
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("message %s did not reach %s within 60s: %v", id, status, m)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// registerTenDLC registers a brand and a campaign with a live key through the Twilio peer, which
// approves both, and waits until they are.
func (a api) registerTenDLC(key string, twilio *twiliotest.Server) {
	a.t.Helper()
	call := func(path, body, field string) map[string]any {
		a.t.Helper()
		status, resp := a.do(http.MethodPost, path, key, body)
		if status/100 != 2 {
			a.t.Fatalf("POST %s = %d %v", path, status, resp)
		}
		return resp[field].(map[string]any)
	}
	brand := call("/v1/10dlc/brands", `{"displayName":"Acme","companyName":"Acme Inc","entityType":"PRIVATE_PROFIT",
		"ein":"12-3456789","vertical":"TECHNOLOGY","email":"ops@acme.example","phone":"+14155550100","street":"1 Main St",
		"city":"San Francisco","state":"CA","postalCode":"94105","country":"US","firstName":"Ada","lastName":"Lovelace"}`, "brand")["id"].(string)
	call("/v1/10dlc/brands/"+brand+"/submit", "", "brand")
	reg := twilio.Registrations()
	twilio.DecideBrand(reg.Brands[len(reg.Brands)-1].SID, "APPROVED", "VERIFIED", 80, "")
	if b := call("/v1/10dlc/brands/"+brand+"/sync", "", "brand"); b["status"] != "verified" {
		a.t.Fatalf("brand = %v", b)
	}
	campaign := call("/v1/10dlc/campaigns", `{"brandId":"`+brand+`","name":"Codes","useCase":"2FA",
		"description":"One-time codes for Acme customers who sign in to their accounts.",
		"sampleMessages":["Your Acme sign-in code is 123456. It expires in 10 minutes."],
		"messageFlow":"Customers give their number when they create an Acme account and confirm it.",
		"affiliateMarketing":false,"ageGated":false,"directLending":false,"embeddedLink":false,"embeddedPhone":false,
		"numberPooling":false,"subscriberHelp":false,"subscriberOptIn":true,"subscriberOptOut":true}`, "campaign")["id"].(string)
	call("/v1/10dlc/campaigns/"+campaign+"/submit", "", "campaign")
	reg = twilio.Registrations()
	twilio.DecideCampaign(reg.Campaigns[len(reg.Campaigns)-1].SID, "VERIFIED", "")
	if c := call("/v1/10dlc/campaigns/"+campaign+"/sync", "", "campaign"); c["status"] != "approved" {
		a.t.Fatalf("campaign = %v", c)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLiveDeliveryThroughProviders runs the built binary against local peers of Twilio and
// Telegram: a live key sends an SMS that the peer's signed callbacks move to delivered, an
// inbound SMS and a Telegram update each raise message.inbound, a forged callback changes
// nothing, and a provider's 500 storm ends, after its retries, in PROVIDER_UNAVAILABLE.
func TestLiveDeliveryThroughProviders(t *testing.T) {
	twilio := twiliotest.NewServer(t)
	bots := telegramtest.NewServer(t)
	rcv := newReceiver(t)
	d := startDev(t, "--telegram-api-url", bots.URL, "--dispatch-attempts", "3")
	a := api{t: t, url: d.env["SWITCHBOARD_URL"]}
	ctx := context.Background()

	key := d.liveKey(t)

	// The Twilio account as a Provider, and a sender on it, as kubectl apply would make them.
	k8s := d.kube(t)
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "twilio",
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "twilio"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: twilio.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "live"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "Live", Transport: v1alpha1.TransportProviders, PhoneNumber: "+15005550007",
			SMS:     &v1alpha1.Activation{Active: true},
			Webhook: &v1alpha1.SenderWebhook{URL: rcv.URL + "/hook"}}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the Provider and the Sender are Ready", func() bool {
		var p v1alpha1.Provider
		var s v1alpha1.Sender
		return k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "twilio"}, &p) == nil && p.IsReady() &&
			k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "live"}, &s) == nil && s.IsReady() && s.Status.WebhookSecret != nil
	})

	// SMS to +1 needs the project's live 10DLC registration, which goes through Twilio.
	if status, body := a.do(http.MethodPost, "/v1/messages", key, `{"to":"+15005550100","text":"x"}`, "Service-Sender", "live"); status != http.StatusForbidden || body["code"] != "ten_dlc_required" {
		t.Fatalf("+1 SMS before registration = %d %v", status, body)
	}
	a.registerTenDLC(key, twilio)

	// A live SMS: Twilio takes it, its signed callbacks move it to delivered, the webhooks arrive.
	status, body := a.do(http.MethodPost, "/v1/messages", key, `{"to":"+15005550100","text":"Your code is 4321"}`, "Service-Sender", "live")
	if status != http.StatusOK {
		t.Fatalf("send = %d %v", status, body)
	}
	id := body["message"].(map[string]any)["id"].(string)
	m := a.waitMessage(key, id, "delivered")
	if got := twilio.Messages(); len(got) != 1 || got[0].Body != "Your code is 4321" || got[0].SID != m["providerMessageId"] {
		t.Fatalf("Twilio received %+v; message %v", got, m)
	}
	waitUntil(t, "message.delivered reaches the webhook", func() bool {
		return rcv.find("message.delivered", func(d map[string]any) bool { return d["messageId"] == id }) != nil
	})

	// A forged status callback is refused and changes nothing.
	callback := a.url + "/callbacks/twilio/default/twilio/status"
	form := url.Values{"MessageSid": {m["providerMessageId"].(string)}, "MessageStatus": {"failed"}, "ErrorCode": {"30003"}}
	req, _ := http.NewRequest(http.MethodPost, callback, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", twiliotest.Sign("not-the-token", callback, form))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("forged callback = %d, want 403", resp.StatusCode)
	}
	if m := a.waitMessage(key, id, "delivered"); m["errorCode"] != nil {
		t.Errorf("the forged callback changed the message: %v", m)
	}

	// An inbound SMS at the messaging webhook raises message.inbound.
	code, _, err := twilio.SendInbound(ctx, a.url+"/callbacks/twilio/default/twilio/inbound", "+15005550130", "+15005550007", "Thanks!")
	if err != nil || code != http.StatusOK {
		t.Fatalf("inbound SMS = %d %v", code, err)
	}
	waitUntil(t, "message.inbound for the SMS", func() bool {
		return rcv.find("message.inbound", func(d map[string]any) bool { return d["from"] == "+15005550130" && d["text"] == "Thanks!" }) != nil
	})

	// A Telegram bot: attaching sets its webhook; an update raises message.inbound.
	if status, body := a.do(http.MethodPost, "/v1/senders/live/telegram", key, `{"botToken":"`+telegramtest.Token+`"}`); status != http.StatusOK {
		t.Fatalf("attach bot = %d %v", status, body)
	}
	if hook := bots.Webhook(); !strings.HasPrefix(hook.URL, a.url+"/callbacks/telegram/default/live/") {
		t.Fatalf("bot webhook = %+v", hook)
	}
	if code, err := bots.Deliver(ctx, bots.Message(777000111, "Hello bot")); err != nil || code != http.StatusOK {
		t.Fatalf("deliver update = %d %v", code, err)
	}
	waitUntil(t, "message.inbound for the update", func() bool {
		return rcv.find("message.inbound", func(d map[string]any) bool { return d["from"] == "777000111" && d["channel"] == "telegram" }) != nil
	})

	// A 500 storm: the message is tried --dispatch-attempts times, then fails with a code.
	twilio.Storm(100, http.StatusInternalServerError)
	status, body = a.do(http.MethodPost, "/v2/messages", key, `{"from":"+15005550007","to":"+15005550101","text":"Hi"}`)
	if status != http.StatusAccepted {
		t.Fatalf("send in the storm = %d %v", status, body)
	}
	m = a.waitMessage(key, body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "PROVIDER_UNAVAILABLE" {
		t.Errorf("after the storm = %v", m)
	}
}
