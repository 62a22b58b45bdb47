package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/risk"
	"github.com/switchboard-io/switchboard/pkg/webhook"
)

// TestRiskReview: a RiskPolicy's rules approve a plain SMS, hold one with a shortened link
// (queued, riskHold) until an operator approves it, refuse a gambling one (RISK_REJECTED, its
// charge returned) and block a phishing domain outright (RISK_BLOCKED); a hold nobody decides
// fails with RISK_REVIEW_EXPIRED when its window closes; WhatsApp is not reviewed.
func TestRiskReview(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) { c.HoldExpiryEvery = 100 * time.Millisecond })
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	window := metav1.Duration{Duration: time.Hour}
	if err := in.k8s.Create(ctx, &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		ReviewWindow: &window,
		Lists:        map[string][]string{"gambling": {"casino", "jackpot"}, "phishing": {"evil.example"}},
		Rules: []v1alpha1.RiskRule{
			{Name: "shortened", Expression: `message.shortenedLinks > 0`, Outcome: "hold", Reason: "a shortened link"},
			{Name: "gambling", Expression: `message.words.exists(w, w in lists.gambling)`, Outcome: "refuse", Reason: "gambling"},
			{Name: "phishing", Expression: `message.domains.exists(d, d in lists.phishing)`, Outcome: "block", Reason: "a phishing domain"},
			{Name: "slow-review", Expression: `message.text.startsWith("EXPIRE")`, Outcome: "hold"},
		}}}); err != nil {
		t.Fatal(err)
	}
	if err := in.k8s.Create(ctx, &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"},
		Spec: v1alpha1.PriceListSpec{FreeCredit: "1.00", Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+", Price: "0.01"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := in.k8s.Create(ctx, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
		SMS:      &v1alpha1.Activation{Active: true},
		WhatsApp: &v1alpha1.ConnectedAccount{AccountID: "wa", DisplayPhoneNumber: "+15005550006", Active: true}}}); err != nil {
		t.Fatal(err)
	}
	live := newKey(t, in, acme, apikey.Live)
	waitFor(t, func() bool { return in.get("/v1/senders/main", live).status == 200 })
	send := func(text string) string {
		t.Helper()
		r := in.post("/v2/messages", live, `{"to":"+447700900123","channel":"sms","text":"`+text+`"}`)
		if r.status != 202 {
			t.Fatalf("send %q = %d %v", text, r.status, r.body)
		}
		return r.body["message"].(map[string]any)["id"].(string)
	}
	get := func(id string) map[string]any {
		return in.get("/v2/messages/"+id, live).body["message"].(map[string]any)
	}

	plain := send("Your code is 1234")
	held := send("Track your parcel at bit.ly/abc")
	refused := send("Win the JACKPOT tonight")
	blocked := send("Log in at https://evil.example/login")
	waitFor(t, func() bool { return get(plain)["status"] == "delivered" })
	waitFor(t, func() bool { m := get(refused); return m["status"] == "failed" })
	if m := get(refused); m["errorCode"] != "RISK_REJECTED" || m["charged"] != 0.0 {
		t.Fatalf("refused = %v", m)
	}
	waitFor(t, func() bool { return get(blocked)["status"] == "failed" })
	if m := get(blocked); m["errorCode"] != "RISK_BLOCKED" {
		t.Fatalf("blocked = %v", m)
	}
	waitFor(t, func() bool { return get(held)["riskHold"] == true })
	time.Sleep(300 * time.Millisecond)
	if m := get(held); m["status"] != "queued" {
		t.Fatalf("held = %v", m)
	}
	// The refused and blocked sends' charges came back: 1.00 - 4 × 0.01 + 2 × 0.01.
	if r := in.get("/v1/balance", live); r.body["balance"] != 98.0 {
		t.Fatalf("balance = %v", r.body)
	}

	// The operator approves it, as `switchboard review approve` does: it is sent.
	queue, err := river.NewClient(riverpgxv5.New(in.db), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	operator := message.NewService(in.db, in.k8s, delivery.NewService(in.k8s), queue, nil, nil)
	holds, err := operator.OpenHolds(ctx, acme, 10)
	if err != nil || len(holds) != 1 || holds[0].MessageID != held || holds[0].Rule != "shortened" {
		t.Fatalf("holds = %+v, %v", holds, err)
	}
	if err := operator.DecideHold(ctx, held, true, "test"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { m := get(held); return m["status"] == "delivered" && m["riskHold"] == false })
	if err := operator.DecideHold(ctx, held, false, "test"); err == nil {
		t.Fatal("a second decision on one hold was taken")
	}

	// A hold nobody decides expires with the window (here shortened to a moment).
	window.Duration = time.Second
	var rp v1alpha1.RiskPolicy
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "rules"}, &rp); err != nil {
		t.Fatal(err)
	}
	rp.Spec.ReviewWindow = &window
	if err := in.k8s.Update(ctx, &rp); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the informer cache takes the new window
	expiring := send("EXPIRE me")
	waitFor(t, func() bool { return get(expiring)["errorCode"] == "RISK_REVIEW_EXPIRED" })

	// WhatsApp is not reviewed (only sms, sms_oneway, email and voice are).
	test := newKey(t, in, acme, apikey.Test)
	receive(t, in, test, `{"from":"+447700900123","channel":"whatsapp","text":"hi"}`)
	r := in.post("/v2/messages", test, `{"to":"+447700900123","channel":"whatsapp","text":"Track it at bit.ly/abc"}`)
	if r.status != 202 {
		t.Fatalf("whatsapp = %d %v", r.status, r.body)
	}
	wa := r.body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool {
		m := in.get("/v2/messages/"+wa, test).body["message"].(map[string]any)
		return m["status"] == "delivered" || m["status"] == "read"
	})
}

// TestSuspension: the policy's second refusal within its window suspends the project's test
// traffic: its held message fails with SENDING_SUSPENDED, new test sends get 403
// sending_suspended with details.dashboardUrl, live sends go on; lifting it lets it send again.
func TestSuspension(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) { c.SupportURL = "https://support.example/suspended" })
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	within := metav1.Duration{Duration: time.Hour}
	if err := in.k8s.Create(ctx, &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		Suspension: &v1alpha1.RiskSuspension{Refusals: 2, Within: &within},
		Rules: []v1alpha1.RiskRule{
			{Name: "casino", Expression: `message.words.exists(w, w == "casino")`, Outcome: "refuse"},
			{Name: "shortened", Expression: `message.shortenedLinks > 0`, Outcome: "hold"},
		}}}); err != nil {
		t.Fatal(err)
	}
	if err := in.k8s.Create(ctx, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
		SMS: &v1alpha1.Activation{Active: true}}}); err != nil {
		t.Fatal(err)
	}
	test, live := newKey(t, in, acme, apikey.Test), newKey(t, in, acme, apikey.Live)
	waitFor(t, func() bool { return in.get("/v1/senders/main", test).status == 200 })
	send := func(key, text string) (int, map[string]any) {
		r := in.post("/v2/messages", key, `{"to":"+447700900123","channel":"sms","text":"`+text+`"}`)
		return r.status, r.body
	}
	status := func(key, id string) map[string]any {
		return in.get("/v2/messages/"+id, key).body["message"].(map[string]any)
	}
	_, b := send(test, "See bit.ly/abc")
	held := b["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return status(test, held)["riskHold"] == true })
	for range 2 {
		_, b := send(test, "Casino night")
		id := b["message"].(map[string]any)["id"].(string)
		waitFor(t, func() bool { return status(test, id)["errorCode"] == "RISK_REJECTED" })
	}
	waitFor(t, func() bool { return status(test, held)["errorCode"] == "SENDING_SUSPENDED" })
	var code int
	waitFor(t, func() bool { code, b = send(test, "Hello"); return code == 403 })
	details, _ := b["details"].(map[string]any)
	if b["code"] != "sending_suspended" || details["dashboardUrl"] != "https://support.example/suspended" {
		t.Fatalf("a send while suspended = %d %v", code, b)
	}
	if code, b := send(live, "Hello from live"); code != 202 {
		t.Fatalf("a live send while test traffic is suspended = %d %v", code, b)
	}

	// The operator lifts it, as `switchboard project unsuspend` does.
	queue, err := river.NewClient(riverpgxv5.New(in.db), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	operator := message.NewService(in.db, in.k8s, delivery.NewService(in.k8s), queue, nil, nil)
	if n, err := operator.LiftSuspension(ctx, acme, "test"); err != nil || n != 1 {
		t.Fatalf("lift = %d, %v", n, err)
	}
	waitFor(t, func() bool { code, _ := send(test, "Hello again"); return code == 202 })

	// The refusals dealt with do not count again: one more refusal does not suspend, two do;
	// the Project's liftSuspensionsBefore lifts it as the CLI does.
	refuse := func() {
		_, b := send(test, "Casino night")
		id := b["message"].(map[string]any)["id"].(string)
		waitFor(t, func() bool { return status(test, id)["errorCode"] == "RISK_REJECTED" })
	}
	refuse()
	time.Sleep(1100 * time.Millisecond) // past the replicas' cache of the suspension state
	if code, b := send(test, "Still fine"); code != 202 {
		t.Fatalf("after one new refusal = %d %v", code, b)
	}
	refuse()
	waitFor(t, func() bool { code, _ := send(test, "Hello"); return code == 403 })
	var p v1alpha1.Project
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "project"}, &p); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Spec.LiftSuspensionsBefore = &now
	if err := in.k8s.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { code, _ := send(test, "Back again"); return code == 202 })
}

// TestExternalReviewer: with reviewer external, each reviewed send is POSTed to the
// installation's moderation service, signed like webhooks; its decision is carried out, and a
// service that does not answer within the timeout holds the send.
func TestExternalReviewer(t *testing.T) {
	secret := []byte("moderation-secret")
	var mu sync.Mutex
	var seen []risk.ExternalRequest
	mod := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(r.Header.Get(webhook.SignatureHeader), body, secret, time.Minute, time.Now()); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var req risk.ExternalRequest
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		switch {
		case strings.Contains(req.Message.Text, "slow"):
			time.Sleep(2 * time.Second)
		case strings.Contains(req.Message.Text, "lottery"):
			_, _ = w.Write([]byte(`{"decision":"refuse","reason":"lottery scam"}`))
		default:
			_, _ = w.Write([]byte(`{"decision":"approve"}`))
		}
	}))
	t.Cleanup(mod.Close)

	in := start(t, fastSandbox)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	timeout := metav1.Duration{Duration: 500 * time.Millisecond}
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "moderation", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			Data: map[string][]byte{"key": secret}},
		&v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "external"}, Spec: v1alpha1.RiskPolicySpec{
			Reviewer: "external", External: &v1alpha1.ExternalReviewer{URL: mod.URL, Timeout: &timeout,
				SecretRef: &v1alpha1.SecretKeyRef{Name: "moderation", Key: "key"}}}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "Main", Default: true, PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true}}},
	} {
		if err := in.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	key := newKey(t, in, acme, apikey.Test)
	waitFor(t, func() bool { return in.get("/v1/senders/main", key).status == 200 })
	send := func(text string) string {
		r := in.post("/v2/messages", key, `{"to":"+34600000000","channel":"sms","text":"`+text+`"}`)
		if r.status != 202 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		return r.body["message"].(map[string]any)["id"].(string)
	}
	get := func(id string) map[string]any {
		return in.get("/v2/messages/"+id, key).body["message"].(map[string]any)
	}
	ok, scam, slow := send("Your code is 1234 at https://acme.example/login"), send("You won the lottery"), send("slow one")
	waitFor(t, func() bool { return get(ok)["status"] == "delivered" })
	waitFor(t, func() bool { return get(scam)["errorCode"] == "RISK_REJECTED" })
	if m := get(scam); !strings.Contains(fmt.Sprint(m["errorMessage"]), "lottery scam") {
		t.Fatalf("refused = %v", m)
	}
	waitFor(t, func() bool { return get(slow)["riskHold"] == true })
	mu.Lock()
	defer mu.Unlock()
	var first *risk.ExternalRequest
	for i := range seen {
		if seen[i].MessageID == ok {
			first = &seen[i]
		}
	}
	if first == nil || first.Project.ID != acme || first.Message.RecipientCountry != "ES" || len(first.Message.Links) != 1 ||
		first.Message.Links[0].Domain != "acme.example" {
		t.Fatalf("the service was asked %+v", first)
	}
}
