package app_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// numberPrices prices US local numbers at monthly dollars a month, and every other number at
// 4.00 a month and 2.50 up front, in project's namespace.
func numberPrices(t *testing.T, in *instance, project, monthly string) {
	t.Helper()
	in.createObjects(t, &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "prices"}, Spec: v1alpha1.PriceListSpec{
		Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+1", Price: "0.01"}},
		NumberPrices: []v1alpha1.NumberPrice{{Country: "US", Type: "local", Monthly: v1alpha1.USDAmount(monthly)},
			{Country: "*", Type: "*", Monthly: "4.00", Upfront: "2.50"}}}})
}

// ownedNumber is GET /v1/phone-numbers/{id}'s phoneNumber.
func ownedNumber(t *testing.T, in *instance, key, id string) map[string]any {
	t.Helper()
	r := in.get("/v1/phone-numbers/"+id, key)
	if r.status != 200 {
		t.Fatalf("GET number %s = %d %v", id, r.status, r.body)
	}
	return r.body["phoneNumber"].(map[string]any)
}

// TestBuyNumbers: a live key buys a number from the project's twilio account (402 while the
// balance cannot pay the first month, then charged), the number's webhooks point at the
// installation, its PhoneNumber holds it, it is renamed and given to a sender, receives an SMS
// through the peer's signed callback, cannot be released while a sender has it, and is released
// at Twilio when deleted. Test keys buy the sandbox's numbers for nothing. Bad purchases change
// nothing.
func TestBuyNumbers(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted())
	acme, live := twilioProject(t, in, peer, rcv)
	test := newKey(t, in, acme, apikey.Test)
	ctx := context.Background()
	numberPrices(t, in, acme, "5.00") // more than the free credit the project starts with
	waitFor(t, func() bool {
		r := in.get("/v1/phone-numbers/available?countryCode=US", live)
		return r.status == 200 && len(r.body["items"].([]any)) > 0
	})
	purchases := func() int {
		return in.count(`SELECT count(*) FROM phone_numbers WHERE project = $1 AND state <> 'failed'`, acme)
	}

	// Nothing to pay with: 402, nothing bought.
	start := balanceOf(t, in, live)
	r := in.post("/v1/phone-numbers", live, `{"phoneNumber":"+14155550102","name":"Primary Line"}`)
	if r.status != 402 || r.body["code"] != "insufficient_balance" || len(peer.Bought()) != 0 || purchases() != 0 {
		t.Fatalf("purchase without money (balance %.4f) = %d %v; bought %v", start, r.status, r.body, peer.Bought())
	}

	credit(t, in, acme, "10")
	r = in.post("/v1/phone-numbers", live, `{"phoneNumber":"+14155550102","name":"Primary Line"}`)
	if r.status != 201 {
		t.Fatalf("purchase = %d %v", r.status, r.body)
	}
	n := r.body["phoneNumber"].(map[string]any)
	id := n["id"].(string)
	pricing := n["pricing"].(map[string]any)
	if id != "pn-14155550102" || n["phoneNumber"] != "+14155550102" || n["name"] != "Primary Line" || pricing["monthlyCost"] != 500.0 ||
		pricing["monthlyPrice"] != 5.0 || pricing["upfrontCost"] != 0.0 || n["nextRenewalDate"] == nil {
		t.Errorf("bought number = %v", n)
	}
	if got := balanceOf(t, in, live); !near(got, start+10-5) {
		t.Errorf("balance after the purchase = %.4f, want %.4f", got, start+10-5)
	}
	bought := peer.Bought()
	hooks := in.url + "/callbacks/twilio/" + acme + "/twilio/"
	if len(bought) != 1 || bought[0].PhoneNumber != "+14155550102" || bought[0].SMSURL != hooks+"inbound" || bought[0].VoiceURL != hooks+"voice" ||
		bought[0].StatusCallback != hooks+"call-status" || bought[0].FriendlyName != "Primary Line" {
		t.Fatalf("bought at Twilio: %+v", bought)
	}
	waitFor(t, func() bool { return ownedNumber(t, in, live, id)["status"] == "active" })
	var pn v1alpha1.PhoneNumber
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id}, &pn); err != nil {
		t.Fatal(err)
	}
	if pn.Status.Ownership != v1alpha1.OwnershipProviderAccount || pn.Spec.Provider != "twilio" || pn.Status.Purchase == nil ||
		pn.Status.Purchase.MonthlyPrice != "5.000000" || pn.Annotations[v1alpha1.PhoneNumberSIDAnnotation] != bought[0].SID ||
		!slices.Contains(pn.Finalizers, v1alpha1.PhoneNumberReleaseFinalizer) {
		t.Errorf("PhoneNumber = %+v %+v", pn.ObjectMeta, pn.Status)
	}
	list := in.get("/v1/phone-numbers?status=active", live)
	if items := list.body["items"].([]any); list.status != 200 || len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Errorf("active numbers = %d %v", list.status, list.body)
	}
	if items := in.get("/v1/phone-numbers?status=suspended", live).body["items"].([]any); len(items) != 0 {
		t.Errorf("suspended numbers = %v", items)
	}

	// Bad purchases: nothing bought, nothing charged.
	before := balanceOf(t, in, live)
	for _, c := range []struct {
		body   string
		status int
		field  string
	}{
		{`{"phoneNumber":"+14155550102"}`, 409, ""},            // this project's already
		{`{"phoneNumber":"+14155550999"}`, 400, "phoneNumber"}, // not for sale
		{`{"phoneNumber":"4155550103"}`, 400, "phoneNumber"},   // not E.164
		{`{"name":"x"}`, 400, "phoneNumber"},
		{`{"phoneNumber":"+4930900100"}`, 400, "phoneNumber"}, // DE local: a bundle the project lacks
		{`{"phoneNumber":"+14155550103","name":"` + strings.Repeat("n", 65) + `"}`, 400, "name"},
	} {
		r := in.post("/v1/phone-numbers", live, c.body)
		if r.status != c.status || (c.field != "" && !hasFieldError(r.body, c.field)) {
			t.Errorf("POST %s = %d %v, want %d on %q", c.body, r.status, r.body, c.status, c.field)
		}
	}
	if got := balanceOf(t, in, live); got != before || len(peer.Bought()) != 1 || purchases() != 1 {
		t.Errorf("bad purchases changed something: balance %.4f → %.4f, bought %d, purchases %d", before, got, len(peer.Bought()), purchases())
	}

	// Renamed and given to the sender main, it receives an SMS through Twilio's callback.
	r = in.patch("/v1/phone-numbers/"+id, live, `{"name":"Support","senderId":"main"}`)
	if r.status != 200 || r.body["phoneNumber"].(map[string]any)["name"] != "Support" {
		t.Fatalf("PATCH = %d %v", r.status, r.body)
	}
	if snd := in.get("/v1/senders/main", live); snd.body["phoneNumber"] != "+14155550102" {
		t.Fatalf("sender main after the assignment: %v", snd.body)
	}
	waitFor(t, func() bool { return ownedNumber(t, in, live, id)["senderId"] == "main" })
	// The sender's SMS is on again once its controller saw the number held.
	waitFor(t, func() bool {
		chans, _ := in.get("/v1/senders/main", live).body["channels"].([]any)
		return slices.Contains(chans, any("sms"))
	})
	if code, _, err := peer.SendInbound(ctx, bought[0].SMSURL, "+15551230009", "+14155550102", "Hello there"); err != nil || code != 200 {
		t.Fatalf("inbound SMS = %d %v", code, err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound' AND sender = 'main'`, acme) == 1
	})

	// A sender has it: not released; the sender takes calls on it: not taken away.
	if r := in.delete("/v1/phone-numbers/"+id, live); r.status != 409 {
		t.Errorf("release of an assigned number = %d %v", r.status, r.body)
	}
	if r := in.patch("/v1/phone-numbers/"+id, live, `{"senderId":null}`); r.status != 400 || !hasFieldError(r.body, "senderId") {
		t.Errorf("unassign from a sender with voice = %d %v", r.status, r.body)
	}
	if r := in.patch("/v1/senders/main", live, `{"phoneNumber":"+15005550006"}`); r.status != 200 {
		t.Fatalf("sender back to its test number = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { _, has := ownedNumber(t, in, live, id)["senderId"]; return !has })
	if r := in.delete("/v1/phone-numbers/"+id, live); r.status != 204 {
		t.Fatalf("release = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return len(peer.Bought()) == 0 })
	waitFor(t, func() bool { return in.get("/v1/phone-numbers/"+id, live).status == 404 })
	if in.count(`SELECT count(*) FROM phone_numbers WHERE project = $1 AND state = 'released'`, acme) != 1 {
		t.Error("the released number's renewals did not stop")
	}

	// kubectl delete of a PhoneNumber annotated keep-number: gone from the project, kept in the
	// account.
	r = in.post("/v1/phone-numbers", live, `{"phoneNumber":"+14155550103"}`)
	if r.status != 201 {
		t.Fatalf("purchase = %d %v", r.status, r.body)
	}
	kept := &v1alpha1.PhoneNumber{}
	// The controller writes the new number too: the annotation is written again on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "pn-14155550103"}, kept); err != nil {
			return err
		}
		kept.Annotations[v1alpha1.PhoneNumberKeepAnnotation] = "true"
		return in.k8s.Update(ctx, kept)
	}); err != nil {
		t.Fatal(err)
	}
	if err := in.k8s.Delete(ctx, kept); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return in.k8s.Get(ctx, client.ObjectKeyFromObject(kept), kept) != nil })
	if b := peer.Bought(); len(b) != 1 || b[0].PhoneNumber != "+14155550103" {
		t.Errorf("a kept number was released at Twilio: %+v", b)
	}

	// Test keys: the sandbox's numbers, for nothing; real ones are not theirs to buy.
	before = balanceOf(t, in, live)
	r = in.post("/v1/phone-numbers", test, `{"phoneNumber":"+15005550301"}`)
	if r.status != 201 {
		t.Fatalf("sandbox purchase = %d %v", r.status, r.body)
	}
	sandboxID := r.body["phoneNumber"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return ownedNumber(t, in, test, sandboxID)["status"] == "active" })
	if p := ownedNumber(t, in, live, sandboxID)["pricing"].(map[string]any); p["monthlyCost"] != 0.0 || balanceOf(t, in, live) != before {
		t.Errorf("a sandbox number cost %v", p)
	}
	if r := in.post("/v1/phone-numbers", test, `{"phoneNumber":"+14155550103"}`); r.status != 400 || len(peer.Bought()) != 1 {
		t.Errorf("a test key buying a real number = %d %v", r.status, r.body)
	}
	if r := in.delete("/v1/phone-numbers/"+sandboxID, test); r.status != 204 {
		t.Errorf("release of a sandbox number = %d %v", r.status, r.body)
	}

	// v2 buys and turns SMS on: the number is an address with an sms channel; v2 refusals list
	// their fields; the number is then a v1 number like any other.
	r = in.post("/v2/numbers", test, `{"phoneNumber":"+15005550302","name":"v2 line"}`)
	if r.status != 201 {
		t.Fatalf("POST /v2/numbers = %d %v", r.status, r.body)
	}
	v2n, ch := r.body["phoneNumber"].(map[string]any), r.body["channel"].(map[string]any)
	if v2n["status"] != "active" || v2n["phoneNumber"] != "+15005550302" || ch["type"] != "sms" || ch["address"] != "+15005550302" || ch["active"] != true {
		t.Errorf("v2 purchase = %v, channel %v", v2n, ch)
	}
	waitFor(t, func() bool { return ownedNumber(t, in, test, v2n["id"].(string))["senderId"] == ch["v1SenderId"] })
	if r := in.post("/v2/numbers", test, `{"name":"x"}`); r.status != 400 || !hasFieldError(r.body, "phoneNumber") {
		t.Errorf("POST /v2/numbers without a number = %d %v", r.status, r.body)
	}
	if r := in.get("/v2/numbers", test); r.status != 404 {
		t.Errorf("GET /v2/numbers = %d, want 404 (no v2 list)", r.status)
	}
	if r := in.get("/v1/phone-numbers/nope", live); r.status != 404 || r.body["code"] != "not_found" {
		t.Errorf("unknown number = %d %v", r.status, r.body)
	}
}

// TestNumberRenewals: each paid month is charged when it ends; a month the balance cannot pay
// suspends the number (status suspended, Paid and Ready False, an event) and the sender cannot
// send live from it; credit pays it on the next round and the number is active again.
func TestNumberRenewals(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted(), func(c *app.Config) {
		c.Numbers = app.NumberOptions{Month: 3 * time.Second, RenewEvery: 200 * time.Millisecond}
	})
	acme, live := twilioProject(t, in, peer, rcv)
	ctx := context.Background()
	numberPrices(t, in, acme, "1.00") // the project starts with 2.00 of free credit
	waitFor(t, func() bool {
		r := in.get("/v1/phone-numbers/available?countryCode=US", live)
		return r.status == 200 && len(r.body["items"].([]any)) > 0
	})
	r := in.post("/v1/phone-numbers", live, `{"phoneNumber":"+14155550103"}`)
	if r.status != 201 {
		t.Fatalf("purchase = %d %v", r.status, r.body)
	}
	id := r.body["phoneNumber"].(map[string]any)["id"].(string)
	// The first month and the second take the free credit; the third cannot be paid.
	waitFor(t, func() bool { return balanceOf(t, in, live) < 0.01 })
	waitFor(t, func() bool { return ownedNumber(t, in, live, id)["status"] == "suspended" })
	var pn v1alpha1.PhoneNumber
	waitFor(t, func() bool {
		_ = in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id}, &pn)
		c := meta.FindStatusCondition(pn.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonNumberSuspended
	})
	paid := meta.FindStatusCondition(pn.Status.Conditions, v1alpha1.ConditionNumberPaid)
	// The sender cannot send live from a suspended number.
	if r := in.patch("/v1/senders/main", live, `{"phoneNumber":"+14155550103"}`); r.status != 200 || len(r.body["channels"].([]any)) != 0 {
		t.Errorf("a sender with a suspended number = %d %v: its channels are off", r.status, r.body)
	}
	if paid == nil || paid.Status != metav1.ConditionFalse || paid.Reason != v1alpha1.ReasonNumberRenewalUnpaid {
		t.Errorf("Paid = %+v", paid)
	}
	var events corev1.EventList
	waitFor(t, func() bool {
		_ = in.k8s.List(ctx, &events, client.InNamespace(acme))
		for _, e := range events.Items {
			if e.InvolvedObject.Name == id && e.Reason == "Suspended" {
				return true
			}
		}
		return false
	})
	if got := balanceOf(t, in, live); !near(got, 0) {
		t.Errorf("balance = %.4f: a suspended month was charged", got)
	}
	// Credit pays the month, and the number comes back.
	credit(t, in, acme, "5")
	waitFor(t, func() bool { return ownedNumber(t, in, live, id)["status"] == "active" })
	if got := balanceOf(t, in, live); got > 4.01 {
		t.Errorf("balance after the resumed month = %.4f", got)
	}
	if n := in.count(`SELECT count(*) FROM ledger_entries WHERE project = $1 AND kind = 'charge' AND message_id LIKE 'pnb_%'`, acme); n < 3 {
		t.Errorf("%d months charged, want at least 3", n)
	}
}

func near(a, b float64) bool { return a-b < 0.0001 && b-a < 0.0001 }

// hasFieldError tells whether an error answer names field among its invalid fields.
func hasFieldError(body map[string]any, field string) bool {
	return slices.Contains(fieldPaths(response{body: body}), field)
}

// TestUnansweredPurchases: a purchase Twilio does not answer is 503 with its first month
// charged, and is settled by asking the account: not bought, the money comes back; bought after
// all, the number is the project's.
func TestUnansweredPurchases(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted(), func(c *app.Config) {
		c.Numbers = app.NumberOptions{RenewEvery: 200 * time.Millisecond, SettleAfter: time.Second}
	})
	acme, live := twilioProject(t, in, peer, rcv)
	numberPrices(t, in, acme, "1.00")
	waitFor(t, func() bool {
		r := in.get("/v1/phone-numbers/available?countryCode=US", live)
		return r.status == 200 && len(r.body["items"].([]any)) > 0
	})
	buy := "/2010-04-01/Accounts/" + twiliotest.AccountSID + "/IncomingPhoneNumbers.json"
	start := balanceOf(t, in, live)

	peer.FailNext(buy, 500, 20500, "Internal Server Error")
	if r := in.post("/v1/phone-numbers", live, `{"phoneNumber":"+14155550100"}`); r.status != 503 || r.body["code"] != "provider_unavailable" {
		t.Fatalf("an unanswered purchase = %d %v", r.status, r.body)
	}
	if got := balanceOf(t, in, live); !near(got, start-1) {
		t.Errorf("balance while the purchase is unsettled = %.4f, want %.4f", got, start-1)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM phone_numbers WHERE project = $1 AND state = 'failed'`, acme) == 1
	})
	if got := balanceOf(t, in, live); !near(got, start) || len(peer.Bought()) != 0 {
		t.Errorf("after settling a purchase not made: balance %.4f (want %.4f), bought %v", got, start, peer.Bought())
	}

	// Twilio bought it, and its answer was lost.
	peer.FailNext(buy, 500, 20500, "Internal Server Error")
	if r := in.post("/v1/phone-numbers", live, `{"phoneNumber":"+14155550101"}`); r.status != 503 {
		t.Fatalf("an unanswered purchase = %d %v", r.status, r.body)
	}
	peer.AddIncomingNumber("+14155550101")
	waitFor(t, func() bool {
		r := in.get("/v1/phone-numbers/pn-14155550101", live)
		return r.status == 200 && r.body["phoneNumber"].(map[string]any)["status"] == "active"
	})
	if got := balanceOf(t, in, live); !near(got, start-1) {
		t.Errorf("balance after settling a purchase made = %.4f, want %.4f", got, start-1)
	}
}

// TestBuyNumbersWithBundles: a number whose country's regulation asks for a bundle is refused,
// naming what is missing, until the project has the records; then the purchase (charged) waits,
// pending, for the bundle made of its address, document and details, which Twilio's review
// approves: the number is bought with it and the records are verified. A rejected bundle fails
// its purchase (refunded) and rejects its document with the reason.
func TestBuyNumbersWithBundles(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted(), func(c *app.Config) {
		c.Numbers = app.NumberOptions{RenewEvery: 200 * time.Millisecond}
	})
	acme, live := twilioProject(t, in, peer, rcv)
	numberPrices(t, in, acme, "1.00")
	credit(t, in, acme, "20")
	waitFor(t, func() bool {
		r := in.get("/v1/phone-numbers/available?countryCode=US", live)
		return r.status == 200 && len(r.body["items"].([]any)) > 0
	})
	start := balanceOf(t, in, live)

	r := in.post("/v1/phone-numbers", live, `{"phoneNumber":"+4930900100"}`)
	if r.status != 400 || !hasFieldError(r.body, "phoneNumber") {
		t.Fatalf("a DE number without records = %d %v", r.status, r.body)
	}
	for _, want := range []string{"an address in DE", "business_registration", "business_website"} {
		if msg := fieldErrors(r)[0].(map[string]any)["message"].(string); !strings.Contains(msg, want) {
			t.Errorf("the refusal does not name %q: %s", want, msg)
		}
	}
	if balanceOf(t, in, live) != start || len(peer.Bundles()) != 0 {
		t.Error("a refused purchase charged or submitted something")
	}

	// The records.
	addr := in.post("/v1/addresses", live, `{"countryCode":"DE","locality":"Berlin","postalCode":"10117","streetAddress":"Friedrichstr. 1","businessName":"Acme GmbH"}`)
	if addr.status != 201 {
		t.Fatalf("address = %d %v", addr.status, addr.body)
	}
	document := func(typ string) string {
		t.Helper()
		pdf := []byte("%PDF-1.7\n" + strings.Repeat("x", 2048))
		up := upload(in, "POST", uploadURL(t, in, live), "application/pdf", pdf)
		r := in.post("/v1/documents", live, `{"documentType":"`+typ+`","name":"`+typ+`","fileSize":`+strconv.Itoa(len(pdf))+
			`,"mimeType":"application/pdf","storageId":"`+up.body["storageId"].(string)+`"}`)
		if r.status != 201 {
			t.Fatalf("document = %d %v", r.status, r.body)
		}
		return r.body["document"].(map[string]any)["id"].(string)
	}
	excerpt := document("business_registration")

	r = in.post("/v1/phone-numbers", live, `{"phoneNumber":"+4930900100","name":"Berlin","details":{"business_website":"https://acme.example"}}`)
	if r.status != 201 || r.body["phoneNumber"].(map[string]any)["status"] != "pending" {
		t.Fatalf("a DE purchase = %d %v", r.status, r.body)
	}
	id := r.body["phoneNumber"].(map[string]any)["id"].(string)
	if got := balanceOf(t, in, live); !near(got, start-6.5) {
		t.Errorf("balance while the bundle is reviewed = %.4f, want %.4f", got, start-6.5)
	}
	bundles := peer.Bundles()
	if len(bundles) != 1 || bundles[0].ISOCountry != "DE" || bundles[0].EndUserType != "business" {
		t.Fatalf("bundles submitted: %+v", bundles)
	}
	if items := in.get("/v1/phone-numbers?status=pending", live).body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Errorf("pending numbers: %v", items)
	}
	waitFor(t, func() bool { return ownedNumber(t, in, live, id)["status"] == "active" })
	if n := ownedNumber(t, in, live, id); n["name"] != "Berlin" || n["phoneNumber"] != "+4930900100" {
		t.Errorf("the bought number = %v", n)
	}
	var bought *twiliotest.IncomingNumber
	for _, b := range peer.Bought() {
		if b.PhoneNumber == "+4930900100" {
			bought = &b
		}
	}
	if bought == nil || bought.BundleSID != bundles[0].SID {
		t.Fatalf("bought at Twilio: %+v (bundle %s)", peer.Bought(), bundles[0].SID)
	}
	if a := in.get("/v1/addresses/"+addr.body["address"].(map[string]any)["id"].(string), live).body["address"].(map[string]any); a["status"] != "verified" {
		t.Errorf("the bundle's address = %v", a)
	}
	if d := in.get("/v1/documents/"+excerpt, live).body["document"].(map[string]any); d["status"] != "verified" {
		t.Errorf("the bundle's document = %v", d)
	}
	if r := in.delete("/v1/documents/"+excerpt, live); r.status != 409 {
		t.Errorf("DELETE a verified document = %d", r.status)
	}

	// A rejected bundle: the purchase fails, refunded; the document is rejected.
	peer.RejectBundles("The passport scan is not readable")
	passport := document("passport")
	before := balanceOf(t, in, live)
	r = in.post("/v1/phone-numbers", live, `{"phoneNumber":"+447700900100","details":{"first_name":"Ana","last_name":"Lee"}}`)
	if r.status != 201 || r.body["phoneNumber"].(map[string]any)["status"] != "pending" {
		t.Fatalf("a GB purchase = %d %v", r.status, r.body)
	}
	gb := r.body["phoneNumber"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return in.get("/v1/phone-numbers/"+gb, live).status == 404 })
	if got := balanceOf(t, in, live); !near(got, before) {
		t.Errorf("balance after a rejected bundle = %.4f, want %.4f", got, before)
	}
	d := in.get("/v1/documents/"+passport, live).body["document"].(map[string]any)
	if d["status"] != "rejected" || !strings.Contains(d["rejectionReason"].(string), "not readable") {
		t.Errorf("the rejected bundle's document = %v", d)
	}
}
