package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// quickCircuits reads Providers' circuit breakers into their status every 100 ms.
func quickCircuits(c *app.Config) { c.CircuitStatusEvery = 100 * time.Millisecond }

// A sender with two SMS Providers: failover takes the first, least-cost the cheaper one for the
// destination; when the first refuses connections its messages go through the second in the same
// dispatch, none reaches both, its circuit opens (and shows on the Provider), and once it is back a
// probe closes it; a refusal about the message fails it without trying the second.
func TestRoutesAcrossProviders(t *testing.T) {
	first, second := twiliotest.NewServer(t), twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted(), quickCircuits)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	two := int32(2)
	openFor := metav1.Duration{Duration: time.Second}
	objects := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "twilio", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "carrier-a"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: first.URL, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"},
			CircuitBreaker: &v1alpha1.CircuitBreaker{Failures: &two, OpenFor: &openFor}}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "carrier-b"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: second.URL, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
		&v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"}, Spec: v1alpha1.PriceListSpec{
			Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+", Price: "0.05"}},
			ProviderCosts: []v1alpha1.ProviderCost{
				{Provider: "carrier-a", Channel: "sms", Prefix: "+", Cost: "0.01"},
				{Provider: "carrier-a", Channel: "sms", Prefix: "+44", Cost: "0.04"},
				{Provider: "carrier-b", Channel: "sms", Prefix: "+44", Cost: "0.03"},
			}}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "Main", Default: true, PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true},
			Routes: []v1alpha1.ChannelRoute{
				{Channel: v1alpha1.ChannelSMS, Providers: []v1alpha1.RouteProvider{{Name: "carrier-a"}, {Name: "carrier-b"}}},
				{Channel: v1alpha1.ChannelSMS, Prefixes: []string{"+44"}, Strategy: v1alpha1.StrategyLeastCost,
					Providers: []v1alpha1.RouteProvider{{Name: "carrier-a"}, {Name: "carrier-b"}}},
			}}},
	}
	for _, o := range objects {
		if err := in.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	key := newKey(t, in, acme, apikey.Live)
	a, b := acme+"/carrier-a", acme+"/carrier-b"
	var snd v1alpha1.Sender
	waitFor(t, func() bool {
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "main"}, &snd) == nil && snd.IsReady() && len(snd.Status.Routes) == 2
	})
	// The status shows both routes, resolved.
	var routes []string
	for _, r := range snd.Status.Routes {
		routes = append(routes, fmt.Sprintf("%v %s %s", r.Prefixes, r.Strategy, strings.Join(r.Providers, ",")))
	}
	if want := []string{"[] failover " + a + "," + b, "[+44] leastCost " + a + "," + b}; !slices.Equal(routes, want) {
		t.Fatalf("status routes = %q, want %q", routes, want)
	}

	// sent sends text to to and waits for its final status; it returns the message as v2 shows it.
	sent := func(to, text, status string) map[string]any {
		t.Helper()
		r := in.post("/v2/messages", key, fmt.Sprintf(`{"to":%q,"text":%q}`, to, text))
		if r.status != 202 {
			t.Fatalf("send to %s = %d %v", to, r.status, r.body)
		}
		return waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), status)
	}
	through := func(m map[string]any, provider string, attempted ...string) {
		t.Helper()
		var got []string
		for _, p := range m["attemptedProviders"].([]any) {
			got = append(got, p.(string))
		}
		if m["provider"] != provider || !slices.Equal(got, attempted) {
			t.Errorf("message %s to %s went through %v after %v; want %s after %v", m["id"], m["to"], m["provider"], got, provider, attempted)
		}
	}
	bodies := func(p *twiliotest.Server) []string {
		var out []string
		for _, m := range p.Messages() {
			out = append(out, m.Body)
		}
		return out
	}

	// Failover takes the first; least-cost the cheaper for +44, which is the second.
	through(sent("+15005550100", "us-1", "delivered"), a, a)
	through(sent("+447700900123", "uk-1", "delivered"), b, b)

	// The first refuses connections: each message goes through the second in the same dispatch.
	first.Down()
	for i := range 3 {
		m := sent(fmt.Sprintf("+1500555020%d", i), fmt.Sprintf("outage-%d", i), "delivered")
		if i < 2 {
			through(m, b, a, b)
		} else {
			// Two failures in a row opened the first's circuit: it is tried after the second.
			through(m, b, b)
		}
	}
	var p v1alpha1.Provider
	waitFor(t, func() bool {
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "carrier-a"}, &p) == nil && p.Status.Circuit == "open"
	})
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionCircuitClosed); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("CircuitClosed = %+v, want False", c)
	}

	// Back up and past openFor: a message probes the first, which takes it; the circuit closes.
	first.Up()
	time.Sleep(openFor.Duration + 1100*time.Millisecond) // and past the workers' one-second view
	through(sent("+15005550300", "after", "delivered"), a, a)
	waitFor(t, func() bool {
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "carrier-a"}, &p) == nil && p.Status.Circuit == "closed"
	})

	// A refusal about the message fails it at once: the second is not asked.
	first.Fail("+15005550400", 21211, 400)
	m := sent("+15005550400", "bad-number", "failed")
	through(m, a, a)
	if m["errorCode"] != "INVALID_RECIPIENT" {
		t.Errorf("errorCode = %v, want INVALID_RECIPIENT", m["errorCode"])
	}

	// No message reached both Providers, and each reached the one its message names.
	if got, want := bodies(first), []string{"us-1", "after"}; !slices.Equal(got, want) {
		t.Errorf("the first Provider took %q, want %q", got, want)
	}
	if got, want := bodies(second), []string{"uk-1", "outage-0", "outage-1", "outage-2"}; !slices.Equal(got, want) {
		t.Errorf("the second Provider took %q, want %q", got, want)
	}
}

// A Provider whose messagesPerSecond holds for every send (pace: all) paces single sends from
// one address, across workers: six messages sent at once reach the provider at least 1/rate
// apart; the pace they keep is the one broadcasts from the address share.
func TestPacedSingleSends(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted())
	ctx := context.Background()
	acme, key := twilioProject(t, in, peer, rcv)
	var p v1alpha1.Provider
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "twilio"}, &p); err != nil {
		t.Fatal(err)
	}
	rate := int32(2)
	p.Spec.MessagesPerSecond, p.Spec.Pace = &rate, v1alpha1.PaceAll
	if err := in.k8s.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return in.k8s.Get(ctx, client.ObjectKeyFromObject(&p), &p) == nil && p.Status.ObservedGeneration == p.Generation
	})
	const n = 6
	for i := range n {
		if r := in.post("/v1/messages", key, fmt.Sprintf(`{"to":"+1500555060%d","text":"paced %d"}`, i, i)); r.status != 200 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
	}
	waitFor(t, func() bool { return len(peer.Messages()) == n })
	got := peer.Messages()
	slices.SortFunc(got, func(a, b twiliotest.Message) int { return a.Received.Compare(b.Received) })
	// Slots are 1/rate apart from the first: the last is at least (n-1)/rate after it (less a
	// little for the moments between taking a slot and calling).
	if span, least := got[n-1].Received.Sub(got[0].Received), time.Duration(n-1)*time.Second/time.Duration(rate)-200*time.Millisecond; span < least {
		t.Errorf("%d messages at %d a second reached the provider within %v, want at least %v", n, rate, span, least)
	}
	if pace := in.count(`SELECT count(*) FROM broadcast_paces WHERE key = $1`, acme+"/twilio/+15005550006"); pace != 1 {
		t.Errorf("the address's pace rows = %d, want 1 (shared with its broadcasts)", pace)
	}
}
