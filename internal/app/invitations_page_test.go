package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

// The client the connection tests invite: one Page, and a WABA with a Brazilian number.
const (
	clientPageID   = "300000000000001"
	clientPageName = "Ana's Bakery"
	clientWABA     = "200000000000009"
	clientPhoneID  = "100000000000099"
	clientDisplay  = "+55 11 99999-0000"
	clientVerified = "Ana Bakery"
)

// browser is a headless Chromium (Debian's, `make browser`), a phone-sized window, in lang.
func browser(t *testing.T, lang string) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run `make browser` (apt-get install chromium)")
	}
	// What Chromium prints (and chromedp's errors) is shown when the test fails: a browser that
	// cannot start or hangs says why there.
	var output syncBuffer
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(420, 860), chromedp.Flag("lang", lang), chromedp.CombinedOutput(&output))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(func(f string, a ...any) { fmt.Fprintf(&output, "chromedp: "+f+"\n", a...) }))
	// A guard against a hung browser for the whole test, not a speed limit: a loaded CI machine
	// has taken most of two minutes over one sign-in.
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chromium (%s) printed:\n%s", lang, output.String())
		}
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
		Headers: network.Headers{"Accept-Language": lang}}); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// syncBuffer is a buffer Chromium's output goroutine and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// screenshot keeps the page as docs/invitations/<name>.png when SWITCHBOARD_SCREENSHOTS names
// the directory (the docs' pictures are made so; a normal run writes nothing).
func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("SWITCHBOARD_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// onboardingProject is a project whose meta Provider is the peer's app, set up for Embedded
// Signup and Facebook Login, with its invitations webhook going to rcv.
func onboardingProject(t *testing.T, in *instance, peer *metatest.Server, rcv *hookReceiver, appSecret string) (string, string) {
	t.Helper()
	acme := newProject(t, in, v1alpha1.ProjectSpec{DisplayName: "Acme Agency"})
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "meta", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accessToken": metatest.Token, "appSecret": appSecret, "verifyToken": "let-me-in"}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "meta"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderMeta, BaseURL: peer.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "meta"},
			Meta: &v1alpha1.MetaSettings{AppID: metatest.AppID, EmbeddedSignupConfigID: "987654321012345",
				DialogURL: peer.URL, SDKURL: peer.URL + metatest.SDKPath}}},
	} {
		if err := in.k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	key := newKey(t, in, acme, apikey.Live)
	if r := in.post("/v1/invitations/webhook", key, `{"url":"`+rcv.URL+`/invitations"}`); r.status != 201 {
		t.Fatalf("invitations webhook = %d %v", r.status, r.body)
	}
	return acme, key
}

// invite creates an invitation and returns its id and link.
func invite(t *testing.T, in *instance, key, body string) (string, string) {
	t.Helper()
	r := in.post("/v1/invitations", key, body)
	if r.status != 201 {
		t.Fatalf("invite %s = %d %v", body, r.status, r.body)
	}
	inv := r.body["invitation"].(map[string]any)
	return inv["id"].(string), inv["url"].(string)
}

// stored reads an invitation's resource.
func stored(t *testing.T, in *instance, project, id string) v1alpha1.Invitation {
	t.Helper()
	var inv v1alpha1.Invitation
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: project, Name: id}, &inv); err != nil {
		t.Fatal(err)
	}
	return inv
}

// eventsOf are an invitation's events as "previous→current reason".
func eventsOf(rcv *hookReceiver, id string) []string {
	var out []string
	for _, ev := range rcv.invitationEvents(id) {
		s := ev["previousStatus"].(string) + "→" + ev["currentStatus"].(string)
		if r, ok := ev["failureReason"].(string); ok {
			s += " " + r
		}
		out = append(out, s)
	}
	return out
}

// openSignup clicks Connect on the WhatsApp page ctx shows and returns the Embedded Signup
// popup it opens.
func openSignup(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	popups := chromedp.WaitNewTarget(ctx, func(i *target.Info) bool { return strings.Contains(i.URL, "/dialog/oauth") })
	if err := chromedp.Do(ctx, chromedp.WaitEnabled(chromedp.CSS("#connect")), chromedp.Click(chromedp.CSS("#connect"))); err != nil {
		t.Fatal(err)
	}
	var id target.ID
	select {
	case id = <-popups:
	case <-time.After(30 * time.Second):
		t.Fatal("Connect opened no Embedded Signup popup within 30 s")
	}
	popup, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(id))
	t.Cleanup(cancel)
	return popup
}

// pageState is the state the page shows.
func pageState(ctx context.Context) (string, error) {
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS("#state"))); err != nil {
		return "", err
	}
	a, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#state"), "data-state"))
	return a.Value, err
}

func waitPageState(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := pageState(ctx)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("the page shows %q (%v), want %q: %s", got, err, want, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestConnectionPagesInChromium drives Debian's Chromium through the connection page against
// the Meta peer: a Messenger Page connected (consent, pick, completion), a WhatsApp number
// through Embedded Signup's popup, cancel, a declined permission, retry, abandonment, no Page,
// a failed code exchange, a replayed state, and the pages of a cancelled, expired and unknown
// link. It checks the stored states, the events, the Senders and their Secrets.
func TestConnectionPagesInChromium(t *testing.T) {
	peer := metatest.NewServer(t, metatest.Options{})
	peer.SetDialogUser(metatest.DialogUser{Pages: []metatest.DialogPage{{ID: clientPageID, Name: clientPageName}}, WABAID: clientWABA,
		PhoneNumbers: []metatest.PhoneNumber{{ID: clientPhoneID, Display: clientDisplay, WABAID: clientWABA, VerifiedName: clientVerified}}})
	rcv := newHookReceiver(t)
	// A sign-in under way fails as abandoned after a minute here: the flows below take seconds
	// (more on a loaded machine), and the abandonment's own test moves its start back instead.
	in := start(t, rcv.trusted(), publicAtListener, func(c *app.Config) { c.InvitationAbandonAfter = time.Minute })
	acme, key := onboardingProject(t, in, peer, rcv, metatest.AppSecret)
	ctx := browser(t, "en")
	var firstSender, waSender string // the senders the first connections made
	ctxEs := browser(t, "es")

	t.Run("messenger: consent, pick the Page, completed", func(t *testing.T) {
		id, link := invite(t, in, key, `{"connectionType":"messenger","clientName":"Ana","clientEmail":"ana@bakery.example"}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
		if err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "pending")
		screenshot(t, ctx, "ready")
		if !strings.Contains(title, "Messenger") || stored(t, in, acme, id).Status.ViewedAt == nil {
			t.Errorf("title %q, viewedAt %v", title, stored(t, in, acme, id).Status.ViewedAt)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		if st := stored(t, in, acme, id); st.Stored() != v1alpha1.InvitationInProgress {
			t.Errorf("after start: %s", st.Stored())
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#continue")), chromedp.WaitVisible(chromedp.CSS("#use-page"))); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "pick-page")
		pages, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#pages")))
		if err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#use-page"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "completed")
		screenshot(t, ctx, "completed")
		if !strings.Contains(pages, clientPageName) {
			t.Errorf("pages offered: %q", pages)
		}
		inv := stored(t, in, acme, id)
		if inv.Status.Sender != id || inv.Status.ConnectedAccount == nil || inv.Status.ConnectedAccount.ID != clientPageID ||
			inv.Status.ConnectedAccount.Name != clientPageName || inv.Status.CompletedAt == nil {
			t.Errorf("completed invitation = %+v", inv.Status)
		}
		var snd v1alpha1.Sender
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: id}, &snd); err != nil {
			t.Fatal(err)
		}
		m := snd.Spec.Messenger
		if m == nil || m.AccountID != clientPageID || !m.Active || m.CredentialsRef == nil || snd.Spec.DisplayName != "Ana" {
			t.Fatalf("sender = %+v", snd.Spec)
		}
		var secret corev1.Secret
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: m.CredentialsRef.Name}, &secret); err != nil ||
			len(secret.Data[m.CredentialsRef.Key]) == 0 || secret.Labels[v1alpha1.SecretLabel] != "true" {
			t.Errorf("secret = %v %v", secret.Labels, err)
		}
		firstSender = id
		if subs := peer.PageSubscriptions(clientPageID); !slices.Contains(subs, "messages") {
			t.Errorf("page subscriptions = %v", subs)
		}
		waitFor(t, func() bool { return len(eventsOf(rcv, id)) == 2 })
		if got := eventsOf(rcv, id); !slices.Equal(got, []string{"pending→in_progress", "in_progress→completed"}) {
			t.Errorf("events = %v", got)
		}
		ev := rcv.invitationEvents(id)[1]
		if ev["senderId"] != id || ev["connectedAccount"].(map[string]any)["id"] != clientPageID || ev["clientEmail"] != "ana@bakery.example" {
			t.Errorf("completed event = %v", ev)
		}
		// The sender sends through the Page (its channel is on).
		waitFor(t, func() bool {
			r := in.get("/v1/senders/"+id, key)
			chans, _ := r.body["channels"].([]any)
			return slices.Contains(chans, any("messenger"))
		})
	})

	t.Run("whatsapp: Embedded Signup in its popup, completed", func(t *testing.T) {
		id, link := invite(t, in, key, `{"clientName":"Ana","allowedPhoneCountries":["BR"]}`)
		if err := chromedp.Do(ctxEs, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctxEs, "pending")
		screenshot(t, ctxEs, "ready-whatsapp-es")
		popup := openSignup(t, ctxEs)
		if err := chromedp.Do(popup, chromedp.WaitVisible(chromedp.CSS("#phone")), chromedp.SetValue(chromedp.CSS("#phone"), clientPhoneID), chromedp.Click(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctxEs, "completed")
		screenshot(t, ctxEs, "completed-whatsapp-es")
		waSender = id
		inv := stored(t, in, acme, id)
		if inv.Status.WABAAccountID != clientWABA || inv.Status.ConnectedAccount == nil || inv.Status.ConnectedAccount.ID != clientPhoneID {
			t.Errorf("completed invitation = %+v", inv.Status)
		}
		var snd v1alpha1.Sender
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: id}, &snd); err != nil {
			t.Fatal(err)
		}
		wa := snd.Spec.WhatsApp
		if wa == nil || wa.AccountID != clientPhoneID || wa.BusinessAccountID != clientWABA || wa.DisplayPhoneNumber != clientDisplay || !wa.Active {
			t.Fatalf("sender = %+v", snd.Spec)
		}
		var secret corev1.Secret
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: wa.CredentialsRef.Name}, &secret); err != nil {
			t.Fatal(err)
		}
		pin, registered := peer.Registered(clientPhoneID)
		if !registered || string(secret.Data["pin"]) != pin || len(secret.Data["accessToken"]) == 0 || !peer.WABASubscribed(clientWABA) {
			t.Errorf("registered %v (pin kept %v), subscribed %v", registered, string(secret.Data["pin"]) == pin, peer.WABASubscribed(clientWABA))
		}
		waitFor(t, func() bool { return len(eventsOf(rcv, id)) == 2 })
		if ev := rcv.invitationEvents(id)[1]; ev["wabaAccountId"] != clientWABA || ev["senderId"] != id {
			t.Errorf("completed event = %v", ev)
		}
	})

	t.Run("the senders made send with the client's credentials", func(t *testing.T) {
		ctx := context.Background()
		hook := in.url + "/callbacks/meta/" + acme + "/meta"
		for _, c := range []struct {
			channel, sender, account, user string
			inbound                        metatest.Payload
		}{
			{"whatsapp", waSender, clientPhoneID, "+15551230001", metatest.HookTextMessage(clientPhoneID, clientDisplay, "15551230001", "wamid.inv1", "Hola")},
			{"messenger", firstSender, clientPageID, "7100000000000001", metatest.HookMessengerText(clientPageID, "7100000000000001", "m_inv1", "Hi")},
		} {
			if code, err := metatest.WebhookPost(ctx, hook, []byte(metatest.AppSecret), c.inbound); err != nil || code != 200 {
				t.Fatalf("%s inbound = %d %v", c.channel, code, err)
			}
			waitFor(t, func() bool {
				return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound' AND sender = $2 AND channel = $3`,
					acme, c.sender, c.channel) == 1
			})
			r := sendAs(in, key, c.sender, `{"to":"`+c.user+`","channel":"`+c.channel+`","text":"Welcome!"}`)
			if r.status != 200 {
				t.Fatalf("%s send = %d %v", c.channel, r.status, r.body)
			}
			waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "sent")
			var secret corev1.Secret
			if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: c.sender + "-" + c.channel}, &secret); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, m := range peer.Messages() {
				if (m.PhoneNumberID == c.account || m.PageID == c.account) && m.Token == string(secret.Data["accessToken"]) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no message went from %s with the client's token", c.channel, c.account)
			}
		}
	})

	t.Run("whatsapp: resent and connected again, the number keeps its PIN", func(t *testing.T) {
		before, _ := peer.Registered(clientPhoneID)
		inv := stored(t, in, acme, waSender)
		inv.Spec.ResendRequestedAt = &metav1.Time{Time: time.Now().Add(time.Second)}
		if err := in.k8s.Update(context.Background(), &inv); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { inv := stored(t, in, acme, waSender); return inv.Stored() == v1alpha1.InvitationPending })
		if err := chromedp.Do(ctx, chromedp.Navigate(in.get("/v1/invitations/"+waSender, key).body["invitation"].(map[string]any)["url"].(string))); err != nil {
			t.Fatal(err)
		}
		popup := openSignup(t, ctx)
		if err := chromedp.Do(popup, chromedp.WaitVisible(chromedp.CSS("#phone")), chromedp.SetValue(chromedp.CSS("#phone"), clientPhoneID),
			chromedp.Click(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "completed")
		if after, ok := peer.Registered(clientPhoneID); !ok || after != before {
			t.Errorf("PIN %q, then %q", before, after)
		}
		waitFor(t, func() bool { return len(eventsOf(rcv, waSender)) == 5 })
		if got := eventsOf(rcv, waSender)[2:]; !slices.Equal(got, []string{"completed→pending", "pending→in_progress", "in_progress→completed"}) {
			t.Errorf("events after the resend = %v", got)
		}
	})

	t.Run("whatsapp: a pre-assigned number is connected instead of the client's own", func(t *testing.T) {
		const preVerified, preDisplay = "900000000000001", "+55 11 4000-1234"
		peer.AddPreVerifiedPhone(preVerified, preDisplay)
		id, link := invite(t, in, key, `{"phoneNumberId":"`+preVerified+`","allowedPhoneCountries":["BR"]}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		if body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#state"))); err != nil || !strings.Contains(body, preVerified) {
			t.Errorf("the page does not say the number is provided: %q %v", body, err)
		}
		popup := openSignup(t, ctx)
		if err := chromedp.Do(popup, chromedp.WaitVisible(chromedp.CSS("#phone")), chromedp.SetValue(chromedp.CSS("#phone"), preVerified),
			chromedp.Click(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "completed")
		var snd v1alpha1.Sender
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: id}, &snd); err != nil {
			t.Fatal(err)
		}
		wa := snd.Spec.WhatsApp
		if wa == nil || wa.DisplayPhoneNumber != preDisplay || wa.AccountID == preVerified || wa.AccountID == clientPhoneID {
			t.Fatalf("sender's WhatsApp = %+v", wa)
		}
		if _, ok := peer.Registered(wa.AccountID); !ok {
			t.Errorf("the provided number %s was not registered", wa.AccountID)
		}
	})

	t.Run("whatsapp: a number from a country the invitation does not allow fails", func(t *testing.T) {
		id, link := invite(t, in, key, `{"allowedPhoneCountries":["MX","AR"]}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		popup := openSignup(t, ctx)
		if err := chromedp.Do(popup, chromedp.WaitVisible(chromedp.CSS("#phone")), chromedp.SetValue(chromedp.CSS("#phone"), clientPhoneID),
			chromedp.Click(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "failed")
		if inv := stored(t, in, acme, id); inv.Status.FailureReason != "phone_country_not_allowed" || inv.Status.Sender != "" {
			t.Errorf("invitation = %+v", inv.Status)
		}
	})

	t.Run("messenger: cancel, then a declined permission, then retry to completion", func(t *testing.T) {
		id, link := invite(t, in, key, `{"connectionType":"messenger"}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#cancel")), chromedp.Click(chromedp.CSS("#cancel"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "failed")
		screenshot(t, ctx, "failed")
		if reason, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#failure"), "data-reason")); err != nil ||
			reason.Value != v1alpha1.FailureSocialCancelled {
			t.Errorf("reason shown = %q %v", reason.Value, err)
		}
		// Retry, and decline pages_messaging.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue")),
			chromedp.Click(chromedp.CSS(`input[name=permission][value=pages_messaging]`)), chromedp.Click(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "failed")
		if inv := stored(t, in, acme, id); inv.Status.FailureReason != v1alpha1.FailureSocialNotAuthorized {
			t.Errorf("after declining = %+v", inv.Status)
		}
		// Retry again, all granted.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue")), chromedp.Click(chromedp.CSS("#continue")),
			chromedp.WaitVisible(chromedp.CSS("#use-page")), chromedp.Click(chromedp.CSS("#use-page"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "completed")
		waitFor(t, func() bool { return len(eventsOf(rcv, id)) == 6 })
		if got := eventsOf(rcv, id); !slices.Equal(got, []string{"pending→in_progress", "in_progress→failed social_cancelled",
			"failed→in_progress", "in_progress→failed social_not_authorized", "failed→in_progress", "in_progress→completed"}) {
			t.Errorf("events = %v", got)
		}
	})

	t.Run("whatsapp: the dialog cancelled fails with social_cancelled", func(t *testing.T) {
		id, link := invite(t, in, key, `{}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		popup := openSignup(t, ctx)
		if err := chromedp.Do(popup, chromedp.WaitVisible(chromedp.CSS("#cancel")), chromedp.Click(chromedp.CSS("#cancel"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "failed")
		if inv := stored(t, in, acme, id); inv.Status.FailureReason != v1alpha1.FailureSocialCancelled {
			t.Errorf("invitation = %+v", inv.Status)
		}
	})

	t.Run("abandoned: leaving the page during Embedded Signup fails with signup_abandoned", func(t *testing.T) {
		id, link := invite(t, in, key, `{}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		popup := openSignup(t, ctx)
		if err := chromedp.Do(popup, chromedp.WaitVisible(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { inv := stored(t, in, acme, id); return inv.Stored() == v1alpha1.InvitationInProgress })
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return stored(t, in, acme, id).Status.FailureReason == v1alpha1.FailureSignupAbandoned })
	})

	t.Run("abandoned: a Facebook Login left open fails with signup_abandoned", func(t *testing.T) {
		id, link := invite(t, in, key, `{"connectionType":"messenger"}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		// The minute passes: the sign-in began two minutes ago.
		waitFor(t, func() bool { inv := stored(t, in, acme, id); return inv.Stored() == v1alpha1.InvitationInProgress })
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			inv := stored(t, in, acme, id)
			inv.Status.StartedAt = &metav1.Time{Time: time.Now().Add(-2 * time.Minute)}
			return in.k8s.Status().Update(context.Background(), &inv)
		}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return stored(t, in, acme, id).Status.FailureReason == v1alpha1.FailureSignupAbandoned })
		if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "failed")
	})

	t.Run("a replayed sign-in changes nothing", func(t *testing.T) {
		id, link := invite(t, in, key, `{"connectionType":"messenger"}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue")),
			chromedp.Click(chromedp.CSS("#continue")), chromedp.WaitVisible(chromedp.CSS("#use-page"))); err != nil {
			t.Fatal(err)
		}
		callback, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		before := stored(t, in, acme, id)
		resp, err := http.Get(callback)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if after := stored(t, in, acme, id); resp.StatusCode != 400 || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("replayed callback = %d; invitation changed: %v", resp.StatusCode, after.ResourceVersion != before.ResourceVersion)
		}
	})

	t.Run("a sign-in finishes only in the browser that started it", func(t *testing.T) {
		id, link := invite(t, in, key, `{"connectionType":"messenger"}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		// The nonce's cookie: the page's paths only, out of scripts' reach, sent back by
		// Facebook's redirect, for as long as a sign-in lives.
		jar, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{in.url + "/invitations/oauth/callback"}})
		if err != nil {
			t.Fatal(err)
		}
		var nonce *network.Cookie
		for _, c := range jar.Cookies {
			if c.Name == "switchboard_signin" {
				nonce = c
			}
		}
		if nonce == nil || !nonce.HTTPOnly || nonce.SameSite != network.CookieSameSiteLax || nonce.Path != "/invitations/" ||
			nonce.Session || time.Until(time.Unix(int64(nonce.Expires), 0)) > 31*time.Minute {
			t.Fatalf("the sign-in's cookie = %+v", nonce)
		}
		dialog, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		// The form Continue would post, for the callback URL Facebook would send this browser to.
		form, err := chromedp.Run(ctx, chromedp.Evaluate[string](`new URLSearchParams(new FormData(document.querySelector("form"))).toString()`))
		if err != nil {
			t.Fatal(err)
		}
		action, err := chromedp.Run(ctx, chromedp.Evaluate[string](`new URL(document.querySelector("form").getAttribute("action"), location.href).href`))
		if err != nil {
			t.Fatal(err)
		}
		before := stored(t, in, acme, id)

		// Someone else's browser (its own profile: no cookie of the client's) is given the link
		// of the client's Facebook dialog, and signs in with its Pages.
		other := browser(t, "en")
		if err := chromedp.Do(other, chromedp.Navigate(dialog), chromedp.WaitVisible(chromedp.CSS("#continue")), chromedp.Click(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, other, "otherBrowser")
		screenshot(t, other, "other-browser")
		restart, err := chromedp.Run(other, chromedp.AttributeValue(chromedp.CSS("#restart"), "href"))
		if err != nil || !strings.HasSuffix(link, restart.Value) {
			t.Errorf("start again links to %q (%v), the invitation is %s", restart.Value, err, link)
		}
		// And the callback URL of the client's own sign-in.
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Post(action, "application/x-www-form-urlencoded", strings.NewReader(form+"&action=continue"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		callback := resp.Header.Get("Location")
		if !strings.HasPrefix(callback, in.url+"/invitations/oauth/callback?") {
			t.Fatalf("the dialog answered %d, to %q", resp.StatusCode, callback)
		}
		if err := chromedp.Do(other, chromedp.Navigate(callback)); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, other, "otherBrowser")
		if after := stored(t, in, acme, id); after.ResourceVersion != before.ResourceVersion || after.Stored() != v1alpha1.InvitationInProgress {
			t.Errorf("another browser's callback changed the invitation: %s, %+v", after.Stored(), after.Status)
		}

		// The client's browser still finishes: the state was not taken.
		if err := chromedp.Do(ctx, chromedp.Navigate(callback), chromedp.WaitVisible(chromedp.CSS("#use-page"))); err != nil {
			t.Fatal(err)
		}
		signIn, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`input[name=signIn]`)))
		if err != nil {
			t.Fatal(err)
		}
		// Another browser posting the pick of the client's sign-in takes nothing.
		if err := chromedp.Do(other, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, other, "in_progress")
		if _, err := chromedp.Run(other, chromedp.Evaluate[bool](`(function () {
			var f = document.createElement("form");
			f.method = "post";
			f.action = location.pathname + "/page";
			[["signIn", `+"`"+signIn+"`"+`], ["page", "`+clientPageID+`"]].forEach(function (kv) {
				var i = document.createElement("input");
				i.type = "hidden"; i.name = kv[0]; i.value = kv[1];
				f.appendChild(i);
			});
			document.body.appendChild(f);
			f.submit();
			return true;
		})()`)); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, other, "otherBrowser")
		if after := stored(t, in, acme, id); after.ResourceVersion != before.ResourceVersion {
			t.Errorf("another browser's pick changed the invitation: %s, %+v", after.Stored(), after.Status)
		}

		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#use-page"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "completed")
		if inv := stored(t, in, acme, id); inv.Status.ConnectedAccount == nil || inv.Status.ConnectedAccount.ID != clientPageID {
			t.Errorf("completed invitation = %+v", inv.Status)
		}
		jar, err = chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{in.url + "/invitations/oauth/callback"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range jar.Cookies {
			if c.Name == "switchboard_signin" {
				t.Errorf("the sign-in's cookie outlived it: %+v", c)
			}
		}
	})

	t.Run("no Page fails with provider_no_pages", func(t *testing.T) {
		peer.SetDialogUser(metatest.DialogUser{WABAID: clientWABA})
		defer peer.SetDialogUser(metatest.DialogUser{Pages: []metatest.DialogPage{{ID: clientPageID, Name: clientPageName}}, WABAID: clientWABA,
			PhoneNumbers: []metatest.PhoneNumber{{ID: clientPhoneID, Display: clientDisplay, WABAID: clientWABA, VerifiedName: clientVerified}}})
		id, link := invite(t, in, key, `{"connectionType":"messenger"}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue")), chromedp.Click(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "failed")
		if inv := stored(t, in, acme, id); inv.Status.FailureReason != v1alpha1.FailureProviderNoPages {
			t.Errorf("invitation = %+v", inv.Status)
		}
	})

	t.Run("a code exchange that fails is internal_error", func(t *testing.T) {
		_, badKey := onboardingProject(t, in, peer, rcv, "not-the-app-secret")
		id, link := invite(t, in, badKey, `{"connectionType":"messenger"}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue")),
			chromedp.Click(chromedp.CSS("#continue"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "failed")
		r := in.get("/v1/invitations/"+id, badKey).body["invitation"].(map[string]any)
		if r["status"] != "failed" || r["failureReason"] != v1alpha1.FailureInternalError {
			t.Errorf("invitation = %v", r)
		}
	})

	t.Run("a Page connected by another project moves there", func(t *testing.T) {
		other, otherKey := onboardingProject(t, in, peer, rcv, metatest.AppSecret)
		id, link := invite(t, in, otherKey, `{"connectionType":"messenger"}`)
		if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.CSS("#connect")), chromedp.WaitVisible(chromedp.CSS("#continue")),
			chromedp.Click(chromedp.CSS("#continue")), chromedp.WaitVisible(chromedp.CSS("#use-page")), chromedp.Click(chromedp.CSS("#use-page"))); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "completed")
		var moved v1alpha1.Sender
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: other, Name: id}, &moved); err != nil || moved.Spec.Messenger == nil {
			t.Fatalf("the new sender = %+v %v", moved.Spec, err)
		}
		var old v1alpha1.Sender
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: firstSender}, &old); err != nil || old.Spec.Messenger != nil {
			t.Errorf("the old sender kept the Page: %+v %v", old.Spec.Messenger, err)
		}
		waitFor(t, func() bool {
			var events corev1.EventList
			if err := in.k8s.List(context.Background(), &events, client.InNamespace(acme)); err != nil {
				return false
			}
			for _, e := range events.Items {
				if e.Reason == "MessengerPageMoved" && e.InvolvedObject.Name == firstSender && strings.Contains(e.Message, other) {
					return true
				}
			}
			return false
		})
	})

	t.Run("cancelled, expired and unknown links", func(t *testing.T) {
		id, link := invite(t, in, key, `{}`)
		in.post("/v1/invitations/"+id+"/cancel", key, "")
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusGone {
			t.Errorf("cancelled link = %d", resp.StatusCode)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctx, "cancelled")
		screenshot(t, ctx, "cancelled")
		// Starting a cancelled invitation changes nothing.
		if r, err := http.Post(link+"/start", "application/x-www-form-urlencoded", nil); err != nil {
			t.Fatal(err)
		} else {
			r.Body.Close()
		}
		if inv := stored(t, in, acme, id); inv.Stored() != v1alpha1.InvitationCancelled {
			t.Errorf("a cancelled invitation moved to %s", inv.Stored())
		}

		id, link = invite(t, in, key, `{}`)
		inv := stored(t, in, acme, id)
		inv.Status.ExpiresAt = &metav1.Time{Time: time.Now().Add(-time.Minute)}
		if err := in.k8s.Status().Update(context.Background(), &inv); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			r, err := http.Get(link)
			if err != nil {
				return false
			}
			r.Body.Close()
			return r.StatusCode == http.StatusGone
		})
		if err := chromedp.Do(ctxEs, chromedp.Navigate(link)); err != nil {
			t.Fatal(err)
		}
		waitPageState(t, ctxEs, "expired")
		screenshot(t, ctxEs, "expired-es")

		unknown := link[:strings.LastIndex(link, "/")+1] + "Zm9yZ2VkLXRva2VuLXRoYXQtbm8taW52aXRhdGlvbi1oYXM"
		r, err := http.Get(unknown)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("unknown link = %d", r.StatusCode)
		}
	})
}
