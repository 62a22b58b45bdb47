package app_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/webrisk/webrisktest"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
)

// TestURLVerification: URLs submitted are decided at once (a shortener rejected, the
// RiskPolicy's lists, Web Risk through the installation's webrisk Provider: approved or
// malicious), a lookup is made once per URL for the installation, test keys get the sandbox's
// verdicts, a rejected URL is escalated and decided by an operator; a live SMS with a safe URL
// goes, one with a malicious URL fails (refunded), one whose URL cannot be looked up waits
// (riskHold) until the operator approves the URL. Bad input changes nothing.
func TestURLVerification(t *testing.T) {
	peer := webrisktest.NewServer(t)
	system := "sbsys-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	in := start(t, fastSandbox, installationIn(system), func(c *app.Config) { c.HoldExpiryEvery = 100 * time.Millisecond })
	ctx := context.Background()
	in.createObjects(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: system}},
		labelledSecret(system, "webrisk", map[string]string{"apiKey": webrisktest.APIKey}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "webrisk"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderWebRisk, BaseURL: peer.URL, SecretRef: &v1alpha1.ProviderSecretRef{Name: "webrisk"}}})
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	in.createObjects(t, &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		Lists: map[string][]string{"blockedDomains": {"blocked.example"}, "allowedDomains": {"trusted.example"}}}},
		&v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"},
			Spec: v1alpha1.PriceListSpec{FreeCredit: "1.00", Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+", Price: "0.01"}}}})
	live := liveSandboxSender(t, in, acme, apikey.Live)
	test := newKey(t, in, acme, apikey.Test)
	waitFor(t, func() bool {
		var p v1alpha1.Provider
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: system, Name: "webrisk"}, &p) == nil && p.IsReady()
	})

	probes := len(peer.Lookups()) // the Provider's check of its key
	submit := func(key, u string, status int) map[string]any {
		t.Helper()
		r := in.post("/v1/urls", key, `{"url":"`+u+`"}`)
		if r.status != status {
			t.Fatalf("POST %s = %d %v, want %d", u, r.status, r.body, status)
		}
		return r.body["url"].(map[string]any)
	}
	for _, c := range []struct{ url, status, approval, domain string }{
		{"HTTPS://Shop.Example.com/offer#top", "approved", "auto_web_risk", "example.com"},
		{"https://bit.ly/abc", "rejected", "auto_web_risk", "bit.ly"},
		{"https://login.malware.test/x", "malicious", "auto_web_risk", "malware.test"},
		{"https://www.blocked.example/", "rejected", "manual", "blocked.example"},
		{"https://trusted.example/a", "approved", "manual", "trusted.example"},
	} {
		u := submit(live, c.url, 201)
		if u["status"] != c.status || u["approvalType"] != c.approval || u["domain"] != c.domain {
			t.Errorf("%s = %v", c.url, u)
		}
	}
	if u := submit(live, "https://shop.example.com/offer", 200); u["status"] != "approved" {
		t.Errorf("submitted again: %v", u)
	}
	lookups := len(peer.Lookups())
	if lookups-probes != 2 { // shop.example.com and malware.test: shorteners and lists need none
		t.Errorf("%d lookups: %v", lookups, peer.Lookups())
	}
	for _, bad := range []string{`{"url":"ftp://example.com/x"}`, `{"url":"not a url"}`, `{}`} {
		if r := in.post("/v1/urls", live, bad); r.status != 400 || fieldPaths(r)[0] != "url" {
			t.Errorf("POST %s = %d %v", bad, r.status, r.body)
		}
	}

	// Test keys: the sandbox's verdicts, kept apart from live's.
	if u := submit(test, "https://x.malicious.test/", 201); u["status"] != "malicious" {
		t.Errorf("sandbox malicious = %v", u)
	}
	if u := submit(test, "https://a.pending.test/", 201); u["status"] != "pending" {
		t.Errorf("sandbox pending = %v", u)
	}
	if got := in.get("/v1/urls", test).body["items"].([]any); len(got) != 2 {
		t.Errorf("test key's URLs: %v", got)
	}
	if len(peer.Lookups()) != lookups {
		t.Error("a test key's URL was looked up")
	}

	// Lists, reads and escalation.
	rejected := in.get("/v1/urls?status=rejected", live).body["items"].([]any)
	if len(rejected) != 2 {
		t.Fatalf("rejected URLs: %v", rejected)
	}
	shortID := ""
	for _, u := range rejected {
		if u.(map[string]any)["domain"] == "bit.ly" {
			shortID = u.(map[string]any)["id"].(string)
		}
	}
	if r := in.post("/v1/urls/"+shortID+"/escalate", live, `{}`); r.status != 400 || fieldPaths(r)[0] != "reason" {
		t.Errorf("escalate without a reason = %d %v", r.status, r.body)
	}
	r := in.post("/v1/urls/"+shortID+"/escalate", live, `{"reason":"our own shortener"}`)
	if r.status != 200 || r.body["url"].(map[string]any)["status"] != "escalated" || r.body["message"] == "" {
		t.Fatalf("escalate = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/urls/"+shortID+"/escalate", live, `{"reason":"again"}`); r.status != 400 {
		t.Errorf("escalate an escalated URL = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/urls/nope", live); r.status != 404 {
		t.Errorf("unknown URL = %d", r.status)
	}
	if r := in.get("/v1/urls/"+shortID, test); r.status != 404 {
		t.Errorf("a live URL read with a test key = %d", r.status)
	}
	operator := &urlcheck.Service{Pool: in.db}
	if _, err := operator.Review(ctx, shortID, true, "ops", ""); err != nil {
		t.Fatal(err)
	}
	if u := in.get("/v1/urls/"+shortID, live).body["url"].(map[string]any); u["status"] != "approved" || u["approvalType"] != "manual" {
		t.Errorf("after the operator's approval: %v", u)
	}

	// The gate on live sends.
	send := func(text string) string {
		t.Helper()
		r := in.post("/v2/messages", live, `{"to":"+447700900123","channel":"sms","text":"`+text+`"}`)
		if r.status != 202 {
			t.Fatalf("send %q = %d %v", text, r.status, r.body)
		}
		return r.body["message"].(map[string]any)["id"].(string)
	}
	get := func(id string) map[string]any {
		r := in.get("/v2/messages/"+id, live)
		m, ok := r.body["message"].(map[string]any)
		if !ok {
			t.Fatalf("GET message %s = %d %v", id, r.status, r.body)
		}
		return m
	}
	safe := send("Your order: https://shop.example.com/orders/1")
	bad := send("Log in at https://account.malware.test/login")
	waitFor(t, func() bool { return get(safe)["status"] == "delivered" })
	waitFor(t, func() bool { return get(bad)["status"] == "failed" })
	peer.FailNext(503)
	waiting := send("New arrivals at https://new.example.org/spring")
	if m := get(bad); m["errorCode"] != urlcheck.ErrURLMalicious || m["charged"] != 0.0 {
		t.Errorf("a message with a malicious URL = %v", m)
	}
	waitFor(t, func() bool { return get(waiting)["riskHold"] == true })
	var pendingID string
	if err := in.poolRow(`SELECT id FROM verified_urls WHERE project = $1 AND host = 'new.example.org'`, acme).Scan(&pendingID); err != nil {
		t.Fatal(err)
	}
	if u := in.get("/v1/urls/"+pendingID, live).body["url"].(map[string]any); u["status"] != "pending" {
		t.Errorf("the URL whose lookup failed = %v", u)
	}
	if _, err := operator.Review(ctx, pendingID, true, "ops", ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { m := get(waiting); return m["status"] == "delivered" && m["riskHold"] == false })
	// Test-mode sends are not gated.
	r = in.post("/v2/messages", test, `{"to":"+447700900123","channel":"sms","text":"See https://x.malicious.test/"}`)
	if r.status != 202 {
		t.Fatalf("test send = %d %v", r.status, r.body)
	}
	id := r.body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool {
		return in.get("/v2/messages/"+id, test).body["message"].(map[string]any)["status"] == "delivered"
	})
}
