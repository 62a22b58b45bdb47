package app_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/tendlc"
)

// TestBalanceThroughTheAPI: with a PriceList in the project's namespace, a live SMS is priced by
// its destination, paid from the balance at accept (cost, costProvider, v2 charged) and shown
// by GET /v1/balance; the send the balance cannot pay for is 402 insufficient_balance and
// stores nothing; test traffic shows its price and pays nothing; a sub-account shows its
// credit limit.
func TestBalanceThroughTheAPI(t *testing.T) {
	in := start(t, fastSandbox)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	if err := in.k8s.Create(ctx, &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"},
		Spec: v1alpha1.PriceListSpec{FreeCredit: "0.02", Prices: []v1alpha1.Price{
			{Channel: "sms", Prefix: "+", Price: "0.05", ProviderCost: "0.04"},
			{Channel: "sms", Prefix: "+1", Price: "0.0079", ProviderCost: "0.0075"},
		}}}); err != nil {
		t.Fatal(err)
	}
	if err := in.k8s.Create(ctx, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
		SMS: &v1alpha1.Activation{Active: true}}}); err != nil {
		t.Fatal(err)
	}
	live, test := newKey(t, in, acme, apikey.Live), newKey(t, in, acme, apikey.Test)
	waitFor(t, func() bool { return in.get("/v1/senders/main", live).status == 200 })

	// A Free project opens with the price list's free credit: 2 cents.
	if r := in.get("/v1/balance", live); r.status != 200 || r.body["balance"] != 2.0 || r.body["currency"] != "USD" ||
		r.body["totalSpent"] != 0.0 || r.body["isSubAccount"] != false || r.body["creditLimit"] != nil {
		t.Fatalf("balance = %d %v", r.status, r.body)
	}
	r := in.post("/v2/messages", live, `{"to":"+15005550100","channel":"sms","text":"Your code is 1234"}`)
	m, _ := r.body["message"].(map[string]any)
	if r.status != 202 || m["cost"] != 0.0079 || m["costProvider"] != 0.0075 || m["costTotal"] != 0.0079 || m["charged"] != 0.0079 {
		t.Fatalf("live SMS = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/messages/"+m["id"].(string), live); r.body["message"].(map[string]any)["cost"] != 0.0079 {
		t.Fatalf("v1 message = %v", r.body)
	}
	// 0.79 cents a message: 2 cents pay for two, the third is refused and not stored.
	if r := in.post("/v1/messages", live, `{"to":"+15005550101","text":"second"}`); r.status != 200 {
		t.Fatalf("second = %d %v", r.status, r.body)
	}
	r = in.post("/v1/messages", live, `{"to":"+15005550102","text":"third"}`)
	if r.status != 402 || r.body["code"] != "insufficient_balance" {
		t.Fatalf("third = %d %v", r.status, r.body)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND NOT test_mode`, acme); n != 2 {
		t.Fatalf("%d live messages stored, want 2", n)
	}
	if r := in.get("/v1/balance", live); r.body["balance"] != 0.42 || r.body["totalSpent"] != 1.58 {
		t.Fatalf("balance after two = %v", r.body)
	}
	if r := in.get("/v1/me", live); r.body["project"].(map[string]any)["totalSpent"] != 1.58 {
		t.Fatalf("me = %v", r.body)
	}
	// Test traffic: its price, nothing charged, the balance untouched.
	r = in.post("/v2/messages", test, `{"to":"+447700900123","channel":"sms","text":"test"}`)
	m, _ = r.body["message"].(map[string]any)
	if r.status != 202 || m["cost"] != 0.05 || m["charged"] != 0.0 {
		t.Fatalf("test SMS = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/balance", live); r.body["balance"] != 0.42 {
		t.Fatalf("balance after a test send = %v", r.body)
	}
	// The ledger balances to the micro-dollar: the opening credit less the charges.
	if sum := in.count(`SELECT sum(CASE WHEN kind = 'charge' THEN -amount_micros ELSE amount_micros END) FROM ledger_entries WHERE project = $1`, acme); sum != 4_200 {
		t.Fatalf("ledger sum %d micro-dollars, want 4200", sum)
	}

	// A sub-account shows its credit limit and starts at zero (no free credit: it is another
	// business the parent pays for). Its credit limit is the parent's money: 1 dollar first.
	credit(t, in, acme, "1.00")
	r = in.post("/v1/sub-accounts", live, `{"name":"Client","creditLimit":100}`)
	if r.status != 201 {
		t.Fatalf("sub-account = %d %v", r.status, r.body)
	}
	id := r.body["subAccount"].(map[string]any)["id"].(string)
	if r := in.get("/v1/sub-accounts/"+id+"/balance", live); r.status != 200 || r.body["balance"] != 0.0 || r.body["creditLimit"] != 100.0 ||
		r.body["isSubAccount"] != true {
		t.Fatalf("sub-account balance = %d %v", r.status, r.body)
	}
	// It pays for its SMS on its credit: below zero, the parent's balance paying, and its parent
	// sees what it spent.
	for _, o := range []client.Object{
		&v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: id, Name: "prices"},
			Spec: v1alpha1.PriceListSpec{Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+1", Price: "0.0079"}}}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: id, Name: "main"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
			SMS: &v1alpha1.Activation{Active: true}}},
	} {
		if err := in.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	subLive := newKey(t, in, id, apikey.Live)
	waitFor(t, func() bool { return in.get("/v1/senders/main", subLive).status == 200 })
	// A sub-account is another business: it registers for 10DLC on its own (here, seeded).
	if err := tendlc.SeedApproved(ctx, in.db, id, false); err != nil {
		t.Fatal(err)
	}
	if r := in.post("/v1/messages", subLive, `{"to":"+15005550100","text":"from the client"}`); r.status != 200 {
		t.Fatalf("sub-account SMS = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/sub-accounts/"+id+"/balance", live); r.body["balance"] != -0.79 || r.body["totalSpent"] != 0.79 {
		t.Fatalf("sub-account balance after an SMS = %v", r.body)
	}
	if r := in.get("/v1/balance", live); r.body["balance"] != 99.63 {
		t.Fatalf("parent balance after its sub-account's SMS = %v, want 100.42 - 0.79 cents", r.body)
	}
	r = in.get("/v1/sub-accounts", live)
	items, _ := r.body["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["totalSpent"] != 0.79 {
		t.Fatalf("sub-accounts = %v", r.body)
	}
	if r := in.get("/v1/sub-accounts/"+id, live); r.body["subAccount"].(map[string]any)["totalSpent"] != 0.79 {
		t.Fatalf("sub-account = %v", r.body)
	}
	if r := in.get("/v1/sub-accounts/nope/balance", live); r.status != 404 {
		t.Fatalf("unknown sub-account balance = %d", r.status)
	}
}
