package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/account"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/tendlc"
)

// credit tops project's balance up by usd dollars, as `switchboard balance credit` does.
func credit(t testing.TB, in *instance, project, usd string) {
	t.Helper()
	amount, err := billing.ParseUSD(v1alpha1.USDAmount(usd))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := billing.Credit(context.Background(), in.db, billing.Account{Project: project}, amount, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// smsPrices prices SMS to +1 at price dollars in project's namespace.
func smsPrices(t testing.TB, in *instance, project, price string) {
	t.Helper()
	if err := in.k8s.Create(context.Background(), &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "prices"},
		Spec: v1alpha1.PriceListSpec{Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+1", Price: v1alpha1.USDAmount(price)}}}}); err != nil {
		t.Fatal(err)
	}
}

// liveSandboxSender gives project a default sender whose live sends go through the sandbox
// (as an installation without provider accounts), with SMS on, and returns a key of env.
func liveSandboxSender(t testing.TB, in *instance, project string, env apikey.Environment) string {
	t.Helper()
	if err := in.k8s.Create(context.Background(), &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "main"},
		Spec: v1alpha1.SenderSpec{DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
			SMS: &v1alpha1.Activation{Active: true}}}); err != nil {
		t.Fatal(err)
	}
	key := newKey(t, in, project, env)
	waitFor(t, func() bool { return in.get("/v1/senders/main", key).status == 200 })
	return key
}

// TestTestKeysCannotMintLiveAccess: a test key makes sub-accounts with test keys only: no credit
// limit, no live key, no change of a credit limit or status, no deactivation, no revocation of a
// live key; each refusal is 403 and changes nothing.
func TestTestKeysCannotMintLiveAccess(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{Plan: v1alpha1.PlanPaid})
	test, live := newKey(t, in, acme, apikey.Test), newKey(t, in, acme, apikey.Live)
	credit(t, in, acme, "100")

	// The probe of the review: a billion cents of credit from the test key.
	if r := in.post("/v1/sub-accounts", test, `{"name":"x","creditLimit":1000000000}`); r.status != 403 || r.body["code"] != "forbidden" {
		t.Fatalf("test key, creditLimit = %d %v; want 403", r.status, r.body)
	}
	var namespaces corev1.NamespaceList
	if err := in.k8s.List(context.Background(), &namespaces, client.MatchingLabels{account.ParentLabel: acme}); err != nil || len(namespaces.Items) != 0 {
		t.Fatalf("a refused create left %d namespaces (%v)", len(namespaces.Items), err)
	}
	r := in.post("/v1/sub-accounts", test, `{"name":"x"}`)
	if r.status != 201 || !strings.HasPrefix(r.body["subAccount"].(map[string]any)["apiKey"].(string), "svc_test_") {
		t.Fatalf("test key, no credit = %d %v; want 201 with a test key", r.status, r.body)
	}
	id := r.body["subAccount"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return in.get("/v1/sub-accounts/"+id, test).status == 200 })

	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/sub-accounts/" + id + "/api-keys", `{"name":"prod","environment":"live"}`},
		{"PATCH", "/v1/sub-accounts/" + id, `{"creditLimit":100}`},
		{"PATCH", "/v1/sub-accounts/" + id, `{"creditLimit":null}`},
		{"PATCH", "/v1/sub-accounts/" + id, `{"status":"inactive"}`},
		{"DELETE", "/v1/sub-accounts/" + id, ``},
	} {
		r := in.do(c.method, c.path, test, strings.NewReader(c.body))
		if r.status != 403 || r.body["code"] != "forbidden" {
			t.Errorf("test key %s %s %s = %d %v; want 403", c.method, c.path, c.body, r.status, r.body)
		}
	}
	r = in.get("/v1/sub-accounts/"+id+"/api-keys", test)
	if items := r.body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["environment"] != "test" {
		t.Fatalf("keys after the refusals = %v", r.body)
	}
	if r := in.get("/v1/sub-accounts/"+id, test); r.body["subAccount"].(map[string]any)["status"] != "active" {
		t.Fatalf("sub-account after the refusals = %v", r.body)
	}
	// A test key still makes and revokes test keys; a live key's is the live key's to revoke.
	if r := in.post("/v1/sub-accounts/"+id+"/api-keys", test, `{"name":"ci"}`); r.status != 201 || r.body["apiKey"].(map[string]any)["environment"] != "test" {
		t.Fatalf("test key for a sub-account = %d %v", r.status, r.body)
	}
	r = in.post("/v1/sub-accounts/"+id+"/api-keys", live, `{"name":"prod","environment":"live"}`)
	if r.status != 201 {
		t.Fatalf("live key for a sub-account = %d %v", r.status, r.body)
	}
	liveKeyID := r.body["apiKey"].(map[string]any)["id"].(string)
	if r := in.do("DELETE", "/v1/sub-accounts/"+id+"/api-keys/"+liveKeyID, test, nil); r.status != 403 {
		t.Fatalf("test key revoking a live key = %d %v", r.status, r.body)
	}
	if r := in.do("DELETE", "/v1/sub-accounts/"+id+"/api-keys/"+liveKeyID, live, nil); r.status != 204 {
		t.Fatalf("live key revoking a live key = %d %v", r.status, r.body)
	}
}

// TestRestrictTestKeys: with spec.restrictTestKeys a test key sends, keeps its own contacts and
// reads, and every change to what live traffic shares (senders, the v2 webhook, templates,
// sub-accounts, invitations) is 403 and changes nothing; a live key still makes them.
func TestRestrictTestKeys(t *testing.T) {
	in := start(t, fastSandbox)
	acme, test := sendingProjectOf(t, in, v1alpha1.ProjectSpec{RestrictTestKeys: true}, nil, apikey.Test)
	live := newKey(t, in, acme, apikey.Live)
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v2/webhook", `{"url":"https://attacker.example/hook","events":["message.inbound"]}`},
		{"POST", "/v1/senders", `{"name":"other"}`},
		{"PATCH", "/v1/senders/main", `{"webhookUrl":"https://attacker.example/hook"}`},
		{"DELETE", "/v1/senders/main", ``},
		{"POST", "/v1/templates", `{"name":"t","language":"en","body":"Hi"}`},
		{"POST", "/v1/sub-accounts", `{"name":"x"}`},
		{"POST", "/v1/invitations", `{}`},
	} {
		r := in.do(c.method, c.path, test, strings.NewReader(c.body))
		if r.status != 403 || r.body["code"] != "forbidden" {
			t.Errorf("restricted test key %s %s = %d %v; want 403", c.method, c.path, r.status, r.body)
		}
	}
	if r := in.get("/v2/webhook", live); r.body["webhook"] != nil {
		t.Errorf("the refused webhook is there: %v", r.body)
	}
	if r := in.get("/v1/senders/main", live); r.status != 200 || r.body["webhook"] != nil && r.body["webhook"].(map[string]any)["url"] != nil {
		t.Errorf("the refused sender change is there: %d %v", r.status, r.body)
	}
	// Sending and reading go on.
	r := in.post("/v1/messages", test, `{"to":"+15005550100","text":"hi"}`)
	if r.status != 200 {
		t.Fatalf("restricted test key send = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/messages/"+r.body["message"].(map[string]any)["id"].(string), test); r.status != 200 {
		t.Fatalf("restricted test key read = %d", r.status)
	}
	if r := in.do("PUT", "/v2/webhook", live, strings.NewReader(`{"url":"https://hooks.acme.example/v2","events":["message.inbound"]}`)); r.status != 201 {
		t.Fatalf("live key webhook = %d %v", r.status, r.body)
	}
}

// TestSandboxApprovalIsNotLive: a template the sandbox approved (a test key's submission) goes
// out with test keys only: a live send is 400 template_not_approved and stores nothing.
func TestSandboxApprovalIsNotLive(t *testing.T) {
	in := start(t, fastSandbox)
	acme, test := sendingProject(t, in, nil, apikey.Test)
	live := newKey(t, in, acme, apikey.Live)
	id := approvedTemplate(t, in, test)
	body := `{"to":"+15005550100","channel":"whatsapp","messageType":"template","content":{"templateId":"` + id + `","templateVariables":{"1":"Ada"}}}`
	if r := in.post("/v1/messages", test, body); r.status != 200 {
		t.Fatalf("test send of a sandbox-approved template = %d %v", r.status, r.body)
	}
	r := in.post("/v1/messages", live, body)
	if r.status != 400 || r.body["code"] != "template_not_approved" {
		t.Fatalf("live send of a sandbox-approved template = %d %v; want 400 template_not_approved", r.status, r.body)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND NOT test_mode`, acme); n != 0 {
		t.Fatalf("%d live messages stored", n)
	}
}

// TestNarrowKeysReadNoPersonalData: invitations (the client's email, phone, live link) and 10DLC
// brands (tax id, address) need a full-access key to read.
func TestNarrowKeysReadNoPersonalData(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	full, narrow := newKey(t, in, acme, apikey.Live), newKey(t, in, acme, apikey.Live, "messages:send", "messages:read", "contacts:read", "templates:read")
	r := in.post("/v1/invitations", full, `{"clientName":"Ada","clientEmail":"ada@client.example","clientPhone":"+15005550100"}`)
	if r.status != 201 {
		t.Fatalf("invitation = %d %v", r.status, r.body)
	}
	inv := r.body["invitation"].(map[string]any)["id"].(string)
	for _, path := range []string{"/v1/invitations", "/v1/invitations/" + inv, "/v1/10dlc/brands", "/v1/10dlc/brands/anything"} {
		if r := in.get(path, narrow); r.status != 403 || strings.Contains(string(r.raw), "ada@client.example") {
			t.Errorf("narrow key GET %s = %d %s; want 403", path, r.status, r.raw)
		}
	}
	waitFor(t, func() bool { return in.get("/v1/invitations/"+inv, full).status == 200 })
	if r := in.get("/v1/10dlc/brands", full); r.status != 200 {
		t.Errorf("full key brands = %d", r.status)
	}
}

// TestSubAccountsSpendTheirParentsMoney: a parent is liable for its sub-accounts: a credit limit
// is at most what the parent's balance pays; a sub-account's spending past its own balance is
// taken from the parent's, up to its credit limit; money for the sub-account pays the parent back
// first; the parent's daily ceiling and suspension cover its sub-accounts together; its
// spec.maxSubAccounts caps how many it makes.
func TestSubAccountsSpendTheirParentsMoney(t *testing.T) {
	in := start(t, fastSandbox)
	ctx := context.Background()
	seven := int64(7)
	two := int32(2)
	acme := newProject(t, in, v1alpha1.ProjectSpec{Plan: v1alpha1.PlanPaid, DailyLimits: &v1alpha1.DailyLimits{SMS: &seven}, MaxSubAccounts: &two})
	parentKey := liveSandboxSender(t, in, acme, apikey.Live)
	smsPrices(t, in, acme, "0.10")

	// Nothing to pay with: no credit limit at all.
	if r := in.post("/v1/sub-accounts", parentKey, `{"name":"Client","creditLimit":1}`); r.status != 400 || r.body["code"] != "invalid_request" {
		t.Fatalf("credit limit on an empty balance = %d %v; want 400", r.status, r.body)
	}
	credit(t, in, acme, "1.00") // 100 cents
	if r := in.post("/v1/sub-accounts", parentKey, `{"name":"Client","creditLimit":101}`); r.status != 400 {
		t.Fatalf("credit limit past the balance = %d %v; want 400", r.status, r.body)
	}
	subs := make([]string, 2)
	for i, body := range []string{`{"name":"Client","creditLimit":50}`, `{"name":"Prepaid"}`} {
		r := in.post("/v1/sub-accounts", parentKey, body)
		if r.status != 201 {
			t.Fatalf("sub-account = %d %v", r.status, r.body)
		}
		subs[i] = r.body["subAccount"].(map[string]any)["id"].(string)
	}
	// The cap: a third is refused, and no namespace is made for it.
	if r := in.post("/v1/sub-accounts", parentKey, `{"name":"Third"}`); r.status != 403 || r.body["code"] != "sub_account_limit_reached" {
		t.Fatalf("third sub-account = %d %v; want 403", r.status, r.body)
	}
	var namespaces corev1.NamespaceList
	if err := in.k8s.List(ctx, &namespaces, client.MatchingLabels{account.ParentLabel: acme}); err != nil || len(namespaces.Items) != 2 {
		t.Fatalf("%d sub-account namespaces (%v), want 2", len(namespaces.Items), err)
	}
	keys := make([]string, 2)
	for i, sub := range subs {
		smsPrices(t, in, sub, "0.10")
		if err := tendlc.SeedApproved(ctx, in.db, sub, false); err != nil {
			t.Fatal(err)
		}
		keys[i] = liveSandboxSender(t, in, sub, apikey.Live)
	}
	credit(t, in, subs[1], "1.00")

	// The client spends 5 SMS of 10 cents on its parent's money, the 6th passes its limit.
	for i := range 5 {
		if r := in.post("/v1/messages", keys[0], `{"to":"+15005550100","text":"from the client"}`); r.status != 200 {
			t.Fatalf("client SMS %d = %d %v", i, r.status, r.body)
		}
	}
	if r := in.post("/v1/messages", keys[0], `{"to":"+15005550100","text":"one more"}`); r.status != 402 || r.body["code"] != "insufficient_balance" {
		t.Fatalf("client SMS past its credit limit = %d %v; want 402", r.status, r.body)
	}
	balanceOf := func(key string) any { return in.get("/v1/balance", key).body["balance"] }
	if p, c := balanceOf(parentKey), balanceOf(keys[0]); p != 50.0 || c != -50.0 {
		t.Fatalf("balances: parent %v, client %v; want 50 and -50 cents", p, c)
	}
	// The parent's ceiling of 7 SMS a day is the family's: 5 taken, the parent sends 2, then
	// neither it nor its prepaid sub-account sends an 8th.
	for i := range 2 {
		if r := in.post("/v1/messages", parentKey, `{"to":"+15005550100","text":"from the parent"}`); r.status != 200 {
			t.Fatalf("parent SMS %d = %d %v", i, r.status, r.body)
		}
	}
	for _, key := range []string{parentKey, keys[1]} {
		if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"eighth"}`); r.status != 429 || r.body["code"] != "daily_limit_exceeded" {
			t.Fatalf("8th SMS of the family = %d %v; want 429", r.status, r.body)
		}
	}
	// Money for the client pays its parent back first: 20 cents of the 50 it owes.
	credit(t, in, subs[0], "0.20")
	if p, c := balanceOf(parentKey), balanceOf(keys[0]); p != 50.0 || c != -30.0 {
		t.Fatalf("after a top-up: parent %v, client %v; want 50 (30 + 20 paid back) and -30 cents", p, c)
	}
	for _, p := range append([]string{acme}, subs...) {
		var raw, sum int64
		if err := in.poolRow(`SELECT balance_micros FROM balances WHERE project = $1`, p).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if sum, _ = db.Planned(in.db).LedgerSum(ctx, p); sum != raw {
			t.Fatalf("%s: balance %d, ledger %d", p, raw, sum)
		}
	}

	// The parent's suspension covers its sub-accounts.
	if _, err := db.Planned(in.db).Suspend(ctx, db.SuspendParams{Project: acme, TestMode: false, Reason: "test", Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r := in.post("/v1/messages", keys[1], `{"to":"+15005550100","text":"x"}`)
		return r.status == 403 && r.body["code"] == "sending_suspended"
	})
}

// TestWhatsAppFallbackPaysForItsSMS: a live WhatsApp message that falls back to SMS is a new SMS:
// with nothing in the balance it fails INSUFFICIENT_BALANCE and nothing is charged; with money it
// is priced and charged like a direct SMS, and counted on the SMS ceiling.
func TestWhatsAppFallbackPaysForItsSMS(t *testing.T) {
	in := start(t, fastSandbox)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{Plan: v1alpha1.PlanPaid})
	smsPrices(t, in, acme, "0.10")
	if err := in.k8s.Create(ctx, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"},
		Spec: v1alpha1.SenderSpec{DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
			SMS:      &v1alpha1.Activation{Active: true},
			WhatsApp: &v1alpha1.ConnectedAccount{AccountID: "wa-1", DisplayPhoneNumber: "+15005550006", Active: true}}}); err != nil {
		t.Fatal(err)
	}
	live := newKey(t, in, acme, apikey.Live)
	// A template the provider approved (its status as the provider's verdict leaves it).
	tpl := &v1alpha1.Template{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "welcome.en"},
		Spec: v1alpha1.TemplateSpec{Name: "welcome", Language: "en", Body: "Welcome!", SMSBody: "Welcome!"}}
	if err := in.k8s.Create(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	// The template controller writes its status too: the verdict is written on its latest.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := in.k8s.Get(ctx, client.ObjectKeyFromObject(tpl), tpl); err != nil {
			return err
		}
		tpl.Status = v1alpha1.TemplateStatus{State: v1alpha1.TemplateApproved, ProviderStatus: "APPROVED", TemplateName: "welcome"}
		return in.k8s.Status().Update(ctx, tpl)
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return in.get("/v1/templates/welcome.en", live).body["status"] == "approved" })
	send := func() string {
		t.Helper()
		r := in.post("/v1/messages", live, `{"to":"+15005550009","channel":"whatsapp","messageType":"template","content":{"templateId":"welcome.en"}}`)
		if r.status != 200 {
			t.Fatalf("live template send = %d %v", r.status, r.body)
		}
		return r.body["message"].(map[string]any)["id"].(string)
	}
	id := send()
	waitFor(t, func() bool { return messageOf(in, live, id)["status"] == "failed" })
	if m := messageOf(in, live, id); m["errorCode"] != "INSUFFICIENT_BALANCE" || m["channel"] != "whatsapp" {
		t.Fatalf("unpaid fallback = %v; want failed INSUFFICIENT_BALANCE on whatsapp", m)
	}
	if r := in.get("/v1/balance", live); r.body["balance"] != 0.0 || r.body["totalSpent"] != 0.0 {
		t.Fatalf("balance after an unpaid fallback = %v", r.body)
	}

	credit(t, in, acme, "1.00")
	id = send()
	waitFor(t, func() bool { return messageOf(in, live, id)["status"] == "delivered" })
	m := messageOf(in, live, id)
	if m["channel"] != "sms" || m["cost"] != 0.1 {
		t.Fatalf("paid fallback = %v; want an SMS costing 0.10", m)
	}
	if r := in.get("/v1/balance", live); r.body["balance"] != 90.0 || r.body["totalSpent"] != 10.0 {
		t.Fatalf("balance after a paid fallback = %v; want 90 cents", r.body)
	}
	if n := in.count(`SELECT coalesce(sum(used), 0)::int FROM usage_counters WHERE project = $1 AND meter = 'sms' AND period = 'day' AND NOT test_mode`, acme); n != 1 {
		t.Fatalf("SMS counted today: %d, want 1", n)
	}
}

// TestSubAccountCapHoldsUnderConcurrentCreates: eight creates at once against a cap of three,
// through two api replicas on one database: exactly three are made (the count is taken under a
// lock every replica shares), the others are 403 and leave no namespace.
func TestSubAccountCapHoldsUnderConcurrentCreates(t *testing.T) {
	url := pgtest.NewDatabase(t)
	first, second := start(t, onDatabase(url)), start(t, onDatabase(url))
	three := int32(3)
	acme := newProject(t, first, v1alpha1.ProjectSpec{MaxSubAccounts: &three})
	key := newKey(t, first, acme, apikey.Live)
	waitFor(t, func() bool { return second.get("/v1/me", key).status == 200 })
	var wg sync.WaitGroup
	var mu sync.Mutex
	made, refused := 0, 0
	for i := range 8 {
		in := first
		if i%2 == 1 {
			in = second
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := in.post("/v1/sub-accounts", key, `{"name":"client"}`)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.status == 201:
				made++
			case r.status == 403 && r.body["code"] == "sub_account_limit_reached":
				refused++
			default:
				t.Errorf("create = %d %v", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	var namespaces corev1.NamespaceList
	if err := first.k8s.List(context.Background(), &namespaces, client.MatchingLabels{account.ParentLabel: acme}); err != nil {
		t.Fatal(err)
	}
	if made != 3 || refused != 5 || len(namespaces.Items) != 3 {
		t.Fatalf("%d made, %d refused, %d namespaces; want 3, 5 and 3", made, refused, len(namespaces.Items))
	}
}
