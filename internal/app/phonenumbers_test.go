package app_test

import (
	"context"
	"net/http"
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
	"github.com/switchboard-io/switchboard/internal/tendlc"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// numbersInstallation is an installation whose namespace (where operators assign numbers) is
// made for the test, with the shared twilio account there pointing at peer.
func numbersInstallation(t *testing.T, peer *twiliotest.Server, opts ...option) (*instance, string) {
	t.Helper()
	system := "sys-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	in := start(t, append([]option{publicAtListener, func(c *app.Config) { c.InstallationNamespace = system }}, opts...)...)
	twilioAccount(t, in, system, peer)
	return in, system
}

// twilioAccount makes the default twilio Provider of namespace ns (and ns itself when it is
// missing), an account of peer, and waits until it is Ready.
func twilioAccount(t *testing.T, in *instance, ns string, peer *twiliotest.Server) {
	t.Helper()
	ctx := context.Background()
	_ = in.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twilio", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twilio"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: peer.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
	} {
		if err := in.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if c := providerReady(t, in, ns, "twilio"); c.Status != metav1.ConditionTrue {
		t.Fatalf("Provider %s/twilio: %+v", ns, c)
	}
}

// assignNumber is the operator assigning number to project, and waits until it holds it.
func assignNumber(t *testing.T, in *instance, system, project, number string) *v1alpha1.PhoneNumber {
	t.Helper()
	pn := &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: project + "-" + strings.TrimPrefix(number, "+")},
		Spec: v1alpha1.PhoneNumberSpec{Number: number, Project: project}}
	if err := in.k8s.Create(context.Background(), pn); err != nil {
		t.Fatal(err)
	}
	waitNumberReady(t, in, pn, metav1.ConditionTrue)
	return pn
}

func waitNumberReady(t *testing.T, in *instance, pn *v1alpha1.PhoneNumber, status metav1.ConditionStatus) {
	t.Helper()
	waitFor(t, func() bool {
		if in.k8s.Get(context.Background(), client.ObjectKeyFromObject(pn), pn) != nil {
			return false
		}
		c := meta.FindStatusCondition(pn.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == status && c.ObservedGeneration == pn.Generation
	})
}

// numberOwnedOf waits until the sender's NumberOwned condition has reason, and returns it.
func numberOwnedOf(t *testing.T, in *instance, ns, name, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	waitFor(t, func() bool {
		var s v1alpha1.Sender
		if in.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s) != nil {
			return false
		}
		c = meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionNumberOwned)
		return c != nil && c.Reason == reason && c.ObservedGeneration == s.Generation
	})
	return c
}

// kubectlSender applies a live sender at number with sms on (and voice, when voice), as kubectl would.
func kubectlSender(t *testing.T, in *instance, ns, name, number string, sms, voice bool) {
	t.Helper()
	s := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.SenderSpec{
		DisplayName: name, PhoneNumber: number, Email: &v1alpha1.EmailSettings{Address: "hi@" + name + ".example"}}}
	if sms {
		s.Spec.SMS = &v1alpha1.Activation{Active: true}
	}
	if voice {
		s.Spec.Voice = &v1alpha1.Enablement{Enabled: true}
	}
	if err := in.k8s.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// sendAs is POST /v1/messages with a Service-Sender.
func (in *instance) sendAs(key, sender, body string) response {
	in.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, in.url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Service-Sender", sender)
	return in.doRequest(req)
}

// TestSenderNumbersBelongToTheirProject: project B tries to take A's number through the API, by
// kubectl, for a live send and for its 10DLC campaign; each is refused and changes nothing,
// while A uses its number, and both use the sandbox's test numbers.
func TestSenderNumbersBelongToTheirProject(t *testing.T) {
	peer := twiliotest.NewServer(t)
	in, system := numbersInstallation(t, peer)
	ctx := context.Background()
	const mine, nobodys = "+14155550311", "+14155550312"
	alpha, bravo := newProject(t, in, v1alpha1.ProjectSpec{}), newProject(t, in, v1alpha1.ProjectSpec{})
	assignNumber(t, in, system, alpha, mine)
	alphaLive := newKey(t, in, alpha, apikey.Live)
	bravoLive, bravoTest := newKey(t, in, bravo, apikey.Live), newKey(t, in, bravo, apikey.Test)
	senders := func(ns string) int {
		var list v1alpha1.SenderList
		if err := in.k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}

	// Through the API: v1 and v2, live and test keys, another project's number and nobody's.
	for name, c := range map[string]struct {
		path, key, body, field, says string
	}{
		"v1, A's number":           {"/v1/senders", bravoLive, `{"name":"Stolen","phoneNumber":"` + mine + `","enableVoice":true}`, "phoneNumber", "belongs to another project"},
		"v1, A's number, test key": {"/v1/senders", bravoTest, `{"name":"Stolen","phoneNumber":"` + mine + `"}`, "phoneNumber", "belongs to another project"},
		"v1, nobody's number":      {"/v1/senders", bravoLive, `{"name":"Stray","phoneNumber":"` + nobodys + `"}`, "phoneNumber", "is not a number of this project"},
		"v2, A's number":           {"/v2/channels", bravoLive, `{"type":"sms","address":"` + mine + `"}`, "address", "belongs to another project"},
		"v2, A's number for voice": {"/v2/channels", bravoLive, `{"type":"voice","address":"` + mine + `"}`, "address", "belongs to another project"},
	} {
		r := in.post(c.path, c.key, c.body)
		if r.status != 400 || r.body["code"] != "invalid_request" || !slices.Equal(fieldPaths(r), []string{c.field}) ||
			!strings.Contains(r.body["message"].(string), c.says) || strings.Contains(string(r.raw), alpha) {
			t.Errorf("%s = %d %s", name, r.status, r.raw)
		}
	}
	if n := senders(bravo); n != 0 {
		t.Fatalf("refused requests made %d senders", n)
	}
	// A sender of B's, on the sandbox's test number (every project's), cannot move to A's number.
	r := in.post("/v1/senders", bravoLive, `{"name":"Test line","phoneNumber":"+15005550006"}`)
	if r.status != 201 {
		t.Fatalf("a sender on the sandbox's number = %d %v", r.status, r.body)
	}
	testLine := r.body["id"].(string)
	if r := in.do(http.MethodPatch, "/v1/senders/"+testLine, bravoLive, strings.NewReader(`{"phoneNumber":"`+mine+`"}`)); r.status != 400 ||
		!slices.Equal(fieldPaths(r), []string{"phoneNumber"}) {
		t.Errorf("PATCH to A's number = %d %v", r.status, r.body)
	}
	if got := in.get("/v1/senders/"+testLine, bravoLive).body["phoneNumber"]; got != "+15005550006" {
		t.Errorf("after the refused PATCH the number is %v", got)
	}

	// A takes its own number, and sends from it through the shared account.
	r = in.post("/v1/senders", alphaLive, `{"name":"Alpha","phoneNumber":"`+mine+`"}`)
	if r.status != 201 {
		t.Fatalf("A's sender on its number = %d %v", r.status, r.body)
	}
	alphaSender := r.body["id"].(string)
	if r := in.post("/v1/senders/"+alphaSender+"/channels/sms/activate", alphaLive, ""); r.status != 200 {
		t.Fatalf("activate = %d %v", r.status, r.body)
	}
	r = in.sendAs(alphaLive, alphaSender, `{"to":"+15005550100","text":"From A"}`)
	if r.status != 200 {
		t.Fatalf("A's live send = %d %v", r.status, r.body)
	}
	waitStatus(t, in, alphaLive, r.body["message"].(map[string]any)["id"].(string), "delivered")
	if got := peer.Messages(); len(got) != 1 || got[0].From != mine {
		t.Fatalf("Twilio received %+v", got)
	}

	// B applies a sender with A's number, as kubectl would: it is refused the number's channels.
	kubectlSender(t, in, bravo, "thief", mine, true, false)
	c := numberOwnedOf(t, in, bravo, "thief", v1alpha1.ReasonNumberConflict)
	if c.Status != metav1.ConditionFalse || strings.Contains(c.Message, alpha) {
		t.Errorf("NumberOwned = %+v", c)
	}
	waitFor(t, func() bool {
		chans, _ := in.get("/v1/senders/thief", bravoLive).body["channels"].([]any)
		return len(chans) == 1 && chans[0] == "email"
	})
	stored := in.count(`SELECT count(*) FROM messages WHERE project = $1`, bravo)
	if r := in.sendAs(bravoLive, "thief", `{"to":"+15005550100","channel":"sms","text":"From A's number"}`); r.status != 400 ||
		!slices.Equal(fieldPaths(r), []string{"channel"}) || !strings.Contains(r.body["message"].(string), "belongs to another project") {
		t.Errorf("v1 live send from A's number = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/messages", bravoLive, `{"from":"`+mine+`","to":"+15005550100","channel":"sms","text":"From A's number"}`); r.status != 409 ||
		r.body["code"] != "no_channel" {
		t.Errorf("v2 live send from A's number = %d %v", r.status, r.body)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1`, bravo); n != stored || len(peer.Messages()) != 1 {
		t.Fatalf("refused sends stored %d messages; Twilio received %d", n-stored, len(peer.Messages())-1)
	}
	// Test traffic never leaves the machine: B's test key still sends from it, through the sandbox.
	if r := in.sendAs(bravoTest, "thief", `{"to":"+15005550100","channel":"sms","text":"Test"}`); r.status != 200 {
		t.Errorf("test send = %d %v", r.status, r.body)
	}

	// Nor does B put A's number in its 10DLC campaigns, in either mode; A does.
	for _, k := range []struct{ key, campaign string }{{bravoTest, "cmp_seed_test_" + bravo}, {bravoLive, "cmp_seed_live_" + bravo}} {
		if r := in.post("/v1/10dlc/campaigns/"+k.campaign+"/phone-numbers", k.key, `{"phoneNumberId":"thief"}`); r.status != 400 ||
			!slices.Equal(fieldPaths(r), []string{"phoneNumberId"}) {
			t.Errorf("10DLC assignment of A's number to %s = %d %v", k.campaign, r.status, r.body)
		}
	}
	if n := in.count(`SELECT count(*) FROM ten_dlc_assignments WHERE project = $1`, bravo); n != 0 {
		t.Errorf("%d assignments stored for B", n)
	}
	alphaTest := newKey(t, in, alpha, apikey.Test)
	if r := in.post("/v1/10dlc/campaigns/cmp_seed_test_"+alpha+"/phone-numbers", alphaTest, `{"phoneNumberId":"`+alphaSender+`"}`); r.status != 201 {
		t.Errorf("A's assignment of its number = %d %v", r.status, r.body)
	}

	// The sandbox's numbers are every project's, for test traffic.
	if r := in.post("/v1/senders/"+testLine+"/channels/sms/activate", bravoTest, ""); r.status != 200 {
		t.Fatalf("activate = %d %v", r.status, r.body)
	}
	if r := in.sendAs(bravoTest, testLine, `{"to":"+15005550100","text":"Hi"}`); r.status != 200 {
		t.Errorf("test send from the sandbox's number = %d %v", r.status, r.body)
	}
}

// TestInboundReachesTheNumbersOwnerOnly: B's sender with A's number, older than A's, and A's
// sender without SMS: an inbound SMS and a STOP to A's number reach neither B nor, until its
// sender takes SMS, A; then A alone. Through B's own Twilio account, A's number reaches no one.
func TestInboundReachesTheNumbersOwnerOnly(t *testing.T) {
	peer := twiliotest.NewServer(t)
	in, system := numbersInstallation(t, peer)
	ctx := context.Background()
	const number, contact = "+14155550321", "+15005550190"
	alpha, bravo := newProject(t, in, v1alpha1.ProjectSpec{}), newProject(t, in, v1alpha1.ProjectSpec{})
	kubectlSender(t, in, bravo, "thief", number, true, false)
	numberOwnedOf(t, in, bravo, "thief", v1alpha1.ReasonNumberNotOwned)
	time.Sleep(time.Second) // resource times are whole seconds: B's sender is the older
	assignNumber(t, in, system, alpha, number)
	kubectlSender(t, in, alpha, "owner", number, false, true)
	numberOwnedOf(t, in, alpha, "owner", v1alpha1.ReasonNumberOwned)
	numberOwnedOf(t, in, bravo, "thief", v1alpha1.ReasonNumberConflict)

	webhook := in.url + "/callbacks/twilio/" + system + "/twilio/inbound"
	inbound := func(target, body string) {
		t.Helper()
		if status, _, err := peer.SendInbound(ctx, target, contact, number, body); err != nil || status != http.StatusOK {
			t.Fatalf("inbound %q = %d %v", body, status, err)
		}
	}
	rows := func(sql, project string) int { return in.count(sql, project) }
	const received = `SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound'`
	const stopped = `SELECT count(*) FROM opt_outs WHERE project = $1`
	inbound(webhook, "Is my order ready?")
	inbound(webhook, "STOP")
	time.Sleep(300 * time.Millisecond)
	for _, p := range []string{alpha, bravo} {
		if n, m := rows(received, p), rows(stopped, p); n != 0 || m != 0 {
			t.Fatalf("with no SMS sender of the owner, project %s received %d messages and %d opt-outs", p, n, m)
		}
	}

	// A's sender takes SMS: A receives, B still nothing.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var owner v1alpha1.Sender
		if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: alpha, Name: "owner"}, &owner); err != nil {
			return err
		}
		owner.Spec.SMS = &v1alpha1.Activation{Active: true}
		return in.k8s.Update(ctx, &owner)
	}); err != nil {
		t.Fatal(err)
	}
	alphaLive := newKey(t, in, alpha, apikey.Live)
	waitFor(t, func() bool {
		chans, _ := in.get("/v1/senders/owner", alphaLive).body["channels"].([]any)
		return slices.Contains(chans, any("sms"))
	})
	inbound(webhook, "Is my order ready?")
	waitFor(t, func() bool { return rows(received, alpha) == 1 })
	inbound(webhook, "STOP")
	waitFor(t, func() bool { return rows(stopped, alpha) == 1 })
	if n, m := rows(received, bravo), rows(stopped, bravo); n != 0 || m != 0 {
		t.Fatalf("B received %d messages and %d opt-outs for A's number", n, m)
	}

	// Through B's own Twilio account (the same credentials: B claims to hold A's number), nobody.
	twilioAccount(t, in, bravo, peer)
	own := in.url + "/callbacks/twilio/" + bravo + "/twilio/inbound"
	before := rows(received, alpha)
	inbound(own, "Through B's account")
	time.Sleep(300 * time.Millisecond)
	if n, m := rows(received, bravo), rows(received, alpha); n != 0 || m != before {
		t.Fatalf("through B's account: B received %d, A %d more", n, m-before)
	}
}

// TestOwnTwilioAccountProvesANumber: a number of the project's own Twilio account is taken
// through the API, proved once by Twilio's IncomingPhoneNumbers into a PhoneNumber, and sent
// from without asking Twilio again; a number the account lacks is refused.
func TestOwnTwilioAccountProvesANumber(t *testing.T) {
	shared, own := twiliotest.NewServer(t), twiliotest.NewServer(t)
	in, _ := numbersInstallation(t, shared)
	const number, lacking = "+14155550331", "+14155550332"
	pnSid := own.AddIncomingNumber(number)
	bravo := newProject(t, in, v1alpha1.ProjectSpec{})
	twilioAccount(t, in, bravo, own)
	key := newKey(t, in, bravo, apikey.Live)

	lists := own.IncomingNumberLists()
	if r := in.post("/v1/senders", key, `{"name":"Lacking","phoneNumber":"`+lacking+`"}`); r.status != 400 ||
		!slices.Equal(fieldPaths(r), []string{"phoneNumber"}) {
		t.Errorf("a number the account lacks = %d %v", r.status, r.body)
	}
	if own.IncomingNumberLists() == lists {
		t.Errorf("the account was not asked")
	}
	r := in.post("/v2/channels", key, `{"type":"sms","address":"`+number+`"}`)
	if channel, _ := r.body["channel"].(map[string]any); r.status != 201 || channel["active"] != true {
		t.Fatalf("a number of the account = %d %v", r.status, r.body)
	}
	pn := &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: bravo, Name: v1alpha1.PhoneNumberName(number)}}
	waitNumberReady(t, in, pn, metav1.ConditionTrue)
	waitFor(t, func() bool { // the sender is written after its number's PhoneNumber
		return in.k8s.Get(context.Background(), client.ObjectKeyFromObject(pn), pn) == nil && len(pn.Status.Senders) == 1
	})
	if pn.Status.Ownership != v1alpha1.OwnershipProviderAccount || pn.Status.Account == nil || pn.Status.Account.NumberSID != pnSid ||
		pn.Status.Project != bravo {
		t.Fatalf("PhoneNumber status = %+v", pn.Status)
	}

	lists = own.IncomingNumberLists()
	for i := range 3 {
		r := in.post("/v2/messages", key, `{"from":"`+number+`","to":"+15005550100","text":"Hi `+strconv.Itoa(i)+`"}`)
		if r.status != 202 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "delivered")
	}
	if got := own.Messages(); len(got) != 3 || got[0].From != number {
		t.Fatalf("the account received %+v", got)
	}
	if n := own.IncomingNumberLists() - lists; n != 0 {
		t.Errorf("sends asked Twilio for the number %d times", n)
	}

	// A kubectl sender's claim the account refused is asked again as soon as the API sees the
	// account list the number (ported in meanwhile), not at its next check minutes later.
	kubectlSender(t, in, bravo, "early", lacking, true, false)
	numberOwnedOf(t, in, bravo, "early", v1alpha1.ReasonNumberNotOwned)
	own.AddIncomingNumber(lacking)
	if r := in.post("/v1/senders", key, `{"name":"Ported","phoneNumber":"`+lacking+`"}`); r.status != 201 {
		t.Fatalf("a number ported into the account = %d %v", r.status, r.body)
	}
	numberOwnedOf(t, in, bravo, "early", v1alpha1.ReasonNumberOwned)
}

// TestLostNumberFailsAtDispatch: a live message accepted from an owned number, then held by risk
// review while the operator moves the number to another project, fails when it is released
// rather than go out from a number its project no longer owns.
func TestLostNumberFailsAtDispatch(t *testing.T) {
	peer := twiliotest.NewServer(t)
	in, system := numbersInstallation(t, peer, func(c *app.Config) { c.HoldExpiryEvery = 100 * time.Millisecond })
	ctx := context.Background()
	const number = "+14155550341"
	alpha, bravo := newProject(t, in, v1alpha1.ProjectSpec{}), newProject(t, in, v1alpha1.ProjectSpec{})
	pn := assignNumber(t, in, system, alpha, number)
	kubectlSender(t, in, alpha, "main", number, true, false)
	numberOwnedOf(t, in, alpha, "main", v1alpha1.ReasonNumberOwned)
	if err := in.k8s.Create(ctx, &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: alpha, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		Rules: []v1alpha1.RiskRule{{Name: "held", Expression: `message.text.startsWith("HOLD")`, Outcome: "hold"}}}}); err != nil {
		t.Fatal(err)
	}
	key := newKey(t, in, alpha, apikey.Live)
	var held string
	waitFor(t, func() bool { // the policy is in the cache once a send is held
		r := in.sendAs(key, "main", `{"to":"+15005550100","text":"HOLD this"}`)
		if r.status != 200 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		held = r.body["message"].(map[string]any)["id"].(string)
		time.Sleep(200 * time.Millisecond)
		return in.get("/v2/messages/"+held, key).body["message"].(map[string]any)["riskHold"] == true
	})
	sentBefore := len(peer.Messages())

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := in.k8s.Get(ctx, client.ObjectKeyFromObject(pn), pn); err != nil {
			return err
		}
		pn.Spec.Project = bravo
		return in.k8s.Update(ctx, pn)
	}); err != nil {
		t.Fatal(err)
	}
	numberOwnedOf(t, in, alpha, "main", v1alpha1.ReasonNumberConflict)
	later := metav1.NewTime(time.Now().Add(time.Second))
	updateProject(t, in, alpha, func(s *v1alpha1.ProjectSpec) { s.ApproveHoldsBefore = &later })
	if m := waitStatus(t, in, key, held, "failed"); m["errorCode"] != "NUMBER_NOT_OWNED" {
		t.Errorf("released after the number moved = %v", m)
	}
	if n := len(peer.Messages()) - sentBefore; n != 0 {
		t.Errorf("Twilio received %d messages from the number", n)
	}
}

// TestExistingSendersKeepTheirNumbersOnUpgrade: senders that held numbers before ownership was
// checked do not break: the first project to hold a number keeps it (an assignment the operator
// sees, labelled adopted); a later project's sender with it is told of the conflict; a sender
// made after the upgrade proves its number like any other.
func TestExistingSendersKeepTheirNumbersOnUpgrade(t *testing.T) {
	ctx := context.Background()
	k8s, err := client.New(testEnv.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	const number, later = "+14155550351", "+14155550352"
	mk := func(ns, sender, num string) {
		for _, o := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "project"}},
			&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sender}, Spec: v1alpha1.SenderSpec{
				DisplayName: sender, PhoneNumber: num, SMS: &v1alpha1.Activation{Active: true}}},
		} {
			if err := k8s.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	first, second := "first-"+suffix, "second-"+suffix
	// Before the upgrade: no manager checks numbers (none runs yet).
	mk(first, "old", number)
	time.Sleep(1100 * time.Millisecond)
	mk(second, "copy", number)
	time.Sleep(1100 * time.Millisecond)

	peer := twiliotest.NewServer(t)
	in, system := numbersInstallation(t, peer)
	numberOwnedOf(t, in, first, "old", v1alpha1.ReasonNumberOwned)
	if c := numberOwnedOf(t, in, second, "copy", v1alpha1.ReasonNumberConflict); strings.Contains(c.Message, first) {
		t.Errorf("the later sender's condition names the first project: %+v", c)
	}
	// (Senders of earlier tests, in the same API server, are adopted too: only this number counts.)
	var all, adopted v1alpha1.PhoneNumberList
	if err := in.k8s.List(ctx, &all, client.InNamespace(system), client.MatchingLabels{v1alpha1.PhoneNumberAdoptedLabel: "true"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range all.Items {
		if p.Spec.Number == number {
			adopted.Items = append(adopted.Items, p)
		}
	}
	if len(adopted.Items) != 1 || adopted.Items[0].Spec.Project != first || !adopted.Items[0].IsReady() ||
		adopted.Items[0].Annotations[v1alpha1.PhoneNumberForSenderAnnotation] != first+"/old" {
		t.Fatalf("adopted = %+v", adopted.Items)
	}

	// The first project goes on sending from it; a sender made after the upgrade adopts nothing.
	key := newKey(t, in, first, apikey.Live)
	if err := tendlcSeed(in, first); err != nil {
		t.Fatal(err)
	}
	r := in.sendAs(key, "old", `{"to":"+15005550100","text":"Still here"}`)
	if r.status != 200 {
		t.Fatalf("send from the adopted number = %d %v", r.status, r.body)
	}
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "delivered")
	kubectlSender(t, in, second, "new", later, true, false)
	numberOwnedOf(t, in, second, "new", v1alpha1.ReasonNumberNotOwned)

	// Stale adopted claims are the operator's to fix: an assignment to the second project, then
	// the adopted one deleted, moves the number.
	assignNumberPending(t, in, system, second, number)
	if err := in.k8s.Delete(ctx, &adopted.Items[0]); err != nil {
		t.Fatal(err)
	}
	numberOwnedOf(t, in, second, "copy", v1alpha1.ReasonNumberOwned)
	numberOwnedOf(t, in, first, "old", v1alpha1.ReasonNumberConflict)
}

// assignNumberPending assigns number to project while another claim holds it (Conflict, until
// that one goes).
func assignNumberPending(t *testing.T, in *instance, system, project, number string) *v1alpha1.PhoneNumber {
	t.Helper()
	pn := &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: project + "-" + strings.TrimPrefix(number, "+")},
		Spec: v1alpha1.PhoneNumberSpec{Number: number, Project: project}}
	if err := in.k8s.Create(context.Background(), pn); err != nil {
		t.Fatal(err)
	}
	waitNumberReady(t, in, pn, metav1.ConditionFalse)
	return pn
}

// tendlcSeed registers project for 10DLC in both modes, as newProject does.
func tendlcSeed(in *instance, project string) error {
	for _, testMode := range []bool{true, false} {
		if err := tendlc.SeedApproved(context.Background(), in.db, project, testMode); err != nil {
			return err
		}
	}
	return nil
}
