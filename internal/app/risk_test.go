package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/admission"
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
	now := metav1.Now()
	updateProject(t, in, acme, func(s *v1alpha1.ProjectSpec) { s.LiftSuspensionsBefore = &now })
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

// TestHoldsDecidedByProjectFields: a Project's refuseHoldsBefore fails the sends held until then
// with RISK_REJECTED, and approveHoldsBefore sends them, as `switchboard review` would; holds
// made after the field's time wait.
func TestHoldsDecidedByProjectFields(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) { c.HoldExpiryEvery = 100 * time.Millisecond })
	ctx := context.Background()
	acme, key := sendingProject(t, in, nil, apikey.Test)
	if err := in.k8s.Create(ctx, &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		Rules: []v1alpha1.RiskRule{{Name: "held", Expression: `message.text.startsWith("HOLD")`, Outcome: "hold"}}}}); err != nil {
		t.Fatal(err)
	}
	send := func(text string) string {
		t.Helper()
		r := in.post("/v2/messages", key, `{"to":"+447700900123","channel":"sms","text":"`+text+`"}`)
		if r.status != 202 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		id := r.body["message"].(map[string]any)["id"].(string)
		waitFor(t, func() bool {
			return in.get("/v2/messages/"+id, key).body["message"].(map[string]any)["riskHold"] == true
		})
		return id
	}
	get := func(id string) map[string]any {
		return in.get("/v2/messages/"+id, key).body["message"].(map[string]any)
	}
	set := func(change func(*v1alpha1.ProjectSpec)) { t.Helper(); updateProject(t, in, acme, change) }
	waitFor(t, func() bool { // the policy is in the cache once a send is held
		r := in.post("/v2/messages", key, `{"to":"+447700900123","channel":"sms","text":"HOLD probe"}`)
		id := r.body["message"].(map[string]any)["id"].(string)
		time.Sleep(200 * time.Millisecond)
		return get(id)["riskHold"] == true
	})

	refused := send("HOLD one")
	time.Sleep(1100 * time.Millisecond) // resource times are whole seconds
	cut := metav1.NewTime(time.Now().Truncate(time.Second).Add(-time.Second))
	waiting := send("HOLD two")
	set(func(s *v1alpha1.ProjectSpec) { s.RefuseHoldsBefore = &cut })
	waitFor(t, func() bool { return get(refused)["status"] == "failed" })
	if m := get(refused); m["errorCode"] != "RISK_REJECTED" {
		t.Errorf("refused by the field = %v", m)
	}
	time.Sleep(300 * time.Millisecond)
	if m := get(waiting); m["status"] != "queued" || m["riskHold"] != true {
		t.Errorf("a hold after the field's time = %v", m)
	}
	var decidedBy string
	if err := in.db.QueryRow(ctx, `SELECT decided_by FROM risk_holds WHERE message_id = $1`, refused).Scan(&decidedBy); err != nil ||
		decidedBy != "Project "+acme+" spec.refuseHoldsBefore" {
		t.Errorf("decided by %q, %v", decidedBy, err)
	}

	later := metav1.NewTime(time.Now().Add(time.Second))
	set(func(s *v1alpha1.ProjectSpec) { s.ApproveHoldsBefore = &later })
	waitFor(t, func() bool { return get(waiting)["status"] == "delivered" })
}

// TestRiskPolicyAdmission: with --webhook-cert-dir the manager serves the RiskPolicy admission
// webhook, and the API server refuses a policy whose rules do not compile, naming the rule's
// field and CEL's reason; a policy that compiles is stored.
func TestRiskPolicyAdmission(t *testing.T) {
	dir := t.TempDir()
	caPEM := servingCert(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	in := start(t, func(c *app.Config) { c.WebhookCertDir, c.WebhookPort = dir, port })
	ctx := context.Background()

	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, admission.RiskPolicyPath)
	none, fail := admissionv1.SideEffectClassNone, admissionv1.Fail
	// Only this test's namespace is sent to the webhook: the other tests share the API server.
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	cfg := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "switchboard-" + acme},
		Webhooks: []admissionv1.ValidatingWebhook{{Name: "riskpolicies.messaging.switchboard.io", AdmissionReviewVersions: []string{"v1"},
			SideEffects: &none, FailurePolicy: &fail,
			ClientConfig:      admissionv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": acme}},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule: admissionv1.Rule{APIGroups: []string{"messaging.switchboard.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"riskpolicies"}}}}}}}
	if err := in.k8s.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.k8s.Delete(context.Background(), cfg) })

	broken := &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		Rules: []v1alpha1.RiskRule{{Name: "ok", Expression: "true", Outcome: "hold"}, {Name: "broken", Expression: `message.text.contains(`, Outcome: "hold"}}}}
	// The API server takes a moment to call a new webhook configuration: probe with names of
	// their own (and delete a probe that got through) until it does.
	waitFor(t, func() bool {
		probe := broken.DeepCopy()
		probe.Name = ""
		probe.GenerateName = "probe-"
		err := in.k8s.Create(ctx, probe)
		if err == nil {
			_ = in.k8s.Delete(ctx, probe)
			return false
		}
		return strings.Contains(err.Error(), "spec.rules[1].expression") && strings.Contains(err.Error(), "Syntax error")
	})
	if err := in.k8s.Create(ctx, broken.DeepCopy()); err == nil || !strings.Contains(err.Error(), "spec.rules[1].expression") {
		t.Fatalf("a policy whose rules do not compile = %v", err)
	}
	var list v1alpha1.RiskPolicyList
	if err := in.k8s.List(ctx, &list, client.InNamespace(acme)); err != nil || len(list.Items) != 0 {
		t.Fatalf("refused policy stored: %v %v", list.Items, err)
	}
	broken.Spec.Rules = broken.Spec.Rules[:1]
	if err := in.k8s.Create(ctx, broken); err != nil {
		t.Fatalf("a policy that compiles = %v", err)
	}
}

// servingCert writes a self-signed certificate for 127.0.0.1 into dir as tls.crt and tls.key,
// and returns it in PEM (it is its own CA).
func servingCert(t *testing.T, dir string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return crt
}
