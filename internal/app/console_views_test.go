package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// TestConsoleConversationsAndSendersInChromium: a project signed in with its key finds the
// thread of a message it sent and the answer it received, reads both in order and reaches each
// message's page; it sees its sender ready with its channels, webhook and routes, and the
// Provider they go through with its circuit breaker; another project's conversation is not
// found; the pages speak Spanish too.
func TestConsoleConversationsAndSendersInChromium(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	ctx := context.Background()
	acme, key := sendingProject(t, in, rcv, apikey.Test)
	_, rivalKey := sendingProject(t, in, nil, apikey.Test)

	// The project's default Provider (a Twilio peer): the sender's sms route goes through it.
	peer := twiliotest.NewServer(t)
	provider := &v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "twilio"},
		Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderTwilio, BaseURL: peer.URL, Default: true,
			SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}}
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "twilio", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}},
		provider,
	} {
		if err := in.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool {
		var p v1alpha1.Provider
		var s v1alpha1.Sender
		if in.k8s.Get(ctx, client.ObjectKeyFromObject(provider), &p) != nil || !p.IsReady() ||
			in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "main"}, &s) != nil || !s.IsReady() {
			return false
		}
		for _, r := range s.Status.Routes {
			if r.Channel == v1alpha1.ChannelSMS && len(r.Providers) == 1 && r.Providers[0] == acme+"/twilio" {
				return true
			}
		}
		return false
	})

	// A message sent, and the contact's answer: one thread.
	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hello from the console test"}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	sent := r.body["message"].(map[string]any)
	conv, _ := sent["conversationId"].(string)
	answer := receive(t, in, key, `{"from":"+15005550100","channel":"sms","text":"Hi back, from the contact"}`)
	if conv == "" || answer["conversationId"] != conv {
		t.Fatalf("the sent message's conversation %q, the answer's %v", conv, answer["conversationId"])
	}
	rivals, _ := receive(t, in, rivalKey, `{"from":"+15005550100","channel":"sms","text":"A rival's thread"}`)["conversationId"].(string)

	p := page{t: t, ctx: browser(t, "en")}
	p.open(in.url + "/console/conversations")
	if loc := p.location(); !strings.Contains(loc, "/console/signin") {
		t.Fatalf("not signed in, the console sent the browser to %s", loc)
	}
	if err := chromedp.Do(p.ctx, chromedp.SetValue(chromedp.CSS("#apiKey"), key)); err != nil {
		t.Fatal(err)
	}
	p.submit("form.signin button")
	if loc := p.location(); !strings.HasSuffix(loc, "/console/conversations") {
		t.Fatalf("signed in at %s", loc)
	}
	session := p.cookie("switchboard_console")

	// The list: the project's one thread, its last message, not the rival's.
	if nav := p.text("nav a[aria-current=page]"); nav != "Conversations" {
		t.Errorf("the current section: %q", nav)
	}
	list := p.text("main table")
	if strings.Count(list, "+15005550100") != 1 || !strings.Contains(list, "They wrote: Hi back, from the contact") ||
		strings.Contains(list, "rival") {
		t.Fatalf("the conversations:\n%s", list)
	}
	screenshot(t, p.ctx, "conversations")
	// Filtered by a channel it is not on, it is not listed.
	if err := chromedp.Do(p.ctx, chromedp.SetValue(chromedp.CSS("#f-channel"), "email")); err != nil {
		t.Fatal(err)
	}
	p.submit("form.filters button")
	if got := p.text("main"); !strings.Contains(got, "No conversation matches.") {
		t.Fatalf("filtered by email:\n%s", got)
	}

	// The thread: both messages, oldest first, with their direction, each linking to its page.
	p.open(in.url + "/console/conversations?channel=sms")
	p.submit("main table tbody a")
	if loc := p.location(); !strings.HasSuffix(loc, "/console/conversations/"+conv) {
		t.Fatalf("the thread's page is %s", loc)
	}
	thread := p.text("section[aria-labelledby=thread]")
	first, second := strings.Index(thread, "Hello from the console test"), strings.Index(thread, "Hi back, from the contact")
	if first < 0 || second < first || !strings.Contains(thread, "To the contact · sms") || !strings.Contains(thread, "From the contact · sms") ||
		!strings.Contains(thread, "received") {
		t.Fatalf("the thread:\n%s", thread)
	}
	if facts := p.text("section[aria-labelledby=facts]"); !strings.Contains(facts, "main · +15005550006") {
		t.Errorf("the conversation's facts:\n%s", facts)
	}
	screenshot(t, p.ctx, "conversation")
	p.submit("tr[id='" + sent["id"].(string) + "'] a")
	if loc := p.location(); !strings.HasSuffix(loc, "/console/messages/"+sent["id"].(string)) {
		t.Fatalf("the message's link led to %s", loc)
	}

	// Another project's conversation is not found; an unknown one neither.
	for _, id := range []string{rivals, "conv_nope"} {
		if r := consoleGet(t, in, session, "/console/conversations/"+id); r.StatusCode != 404 {
			t.Errorf("conversation %s: %d", id, r.StatusCode)
		}
	}

	// The senders: main ready on its three channels, its webhook on, its sms route through the
	// project's Provider, which is ready with its circuit closed.
	p.open(in.url + "/console/senders")
	snd := p.text("article#sender-main")
	for _, want := range []string{"main Ready", "Main · Default sender", "sms\tOn\t+15005550006", "whatsapp\tOn", "email\tOn\thello@acme.example",
		rcv.URL + "/hook", "Enabled", "sms · every destination · failover → " + acme + "/twilio", "From the project's default Provider"} {
		if !strings.Contains(snd, want) {
			t.Errorf("the sender lacks %q:\n%s", want, snd)
		}
	}
	providers := p.text("section[aria-labelledby=providers]")
	if !strings.Contains(providers, "twilio") || !strings.Contains(providers, "Ready") || !strings.Contains(providers, "Closed") ||
		strings.Contains(providers, twiliotest.AuthToken) || strings.Contains(snd, "secret") {
		t.Errorf("the providers:\n%s", providers)
	}
	screenshot(t, p.ctx, "senders")

	// In Spanish (kept for the session from then on).
	p.open(in.url + "/console/senders?lang=es")
	if h := p.text("h1"); h != "Remitentes" {
		t.Errorf("the Spanish senders page: %q", h)
	}
	if got := p.text("article#sender-main h2"); got != "main Listo" {
		t.Errorf("the Spanish sender: %q", got)
	}
	p.open(in.url + "/console/conversations/" + conv)
	if thread := p.text("section[aria-labelledby=thread]"); !strings.Contains(thread, "Del contacto") || !strings.Contains(thread, "Al contacto") {
		t.Errorf("the Spanish thread:\n%s", thread)
	}
}
