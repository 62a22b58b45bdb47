package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
	"github.com/switchboard-io/switchboard/internal/transport/telegram/telegramtest"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// projectEndpointsRefused runs the instance as an installation does by default: only the
// installation namespace's Providers may set baseURL.
func projectEndpointsRefused(c *app.Config) { c.AllowProjectEndpoints = false }

// installationIn makes ns the installation's namespace.
func installationIn(ns string) option { return func(c *app.Config) { c.InstallationNamespace = ns } }

// createObjects creates objects, failing the test on the first error.
func (in *instance) createObjects(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := in.k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func labelledSecret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		StringData: data}
}

// messageRows is what Postgres holds of a project's messages: id, status, provider id and last
// change, one line each.
func messageRows(t *testing.T, in *instance, project string) []string {
	t.Helper()
	rows, err := in.db.Query(context.Background(), `SELECT id || ' ' || status || ' ' || coalesce(provider_message_id, '-') || ' ' || updated_at::text
		FROM messages WHERE project = $1 ORDER BY id`, project)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// A Provider's callbacks move only the messages sent through that Provider, and its inbound
// messages reach only the senders whose channel goes through it. Project A owns Providers of its
// own, whose credentials it knows; project B sends through the installation's. Whatever A signs
// names B's messages (by Switchboard's id in ?m= or by the provider's id), nothing of B moves.
func TestCallbacksTouchOnlyTheirProvidersMessages(t *testing.T) {
	twilioPeer := twiliotest.NewServer(t)
	metaPeer := metatest.NewServer(t, metatest.Options{})
	metaPeer.AddPhoneNumber(waPhoneID, waDisplay, wabaID)
	system := "sbsys-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	in := start(t, publicAtListener, projectEndpointsRefused, installationIn(system))
	ctx := context.Background()

	// The installation's accounts: every project may use them, and they may set baseURL.
	in.createObjects(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: system}},
		labelledSecret(system, "twilio", map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "twilio"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: twilioPeer.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
		labelledSecret(system, "meta", map[string]string{"accessToken": metatest.Token, "appSecret": metatest.AppSecret}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "meta"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderMeta, BaseURL: metaPeer.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "meta"},
			Meta: &v1alpha1.MetaSettings{AppID: metatest.AppID}}},
	)
	for _, name := range []string{"twilio", "meta"} {
		if c := providerReady(t, in, system, name); c.Status != metav1.ConditionTrue {
			t.Fatalf("installation Provider %s: %+v", name, c)
		}
	}

	// Project A, the attacker: its own Twilio account and Meta app (credentials it knows), and,
	// created first, a sender that claims B's WhatsApp number through its own app.
	const attackerToken, attackerAppSecret = "attacker-auth-token-000000000000", "attacker-app-secret"
	a := newProject(t, in, v1alpha1.ProjectSpec{})
	in.createObjects(t,
		labelledSecret(a, "twilio", map[string]string{"accountSid": twiliotest.AccountSID, "authToken": attackerToken}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "twilio"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: "http://127.0.0.1:1", Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
		labelledSecret(a, "meta", map[string]string{"accessToken": "attacker", "appSecret": attackerAppSecret}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "meta"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderMeta, BaseURL: "http://127.0.0.1:1", Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "meta"}}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "wa"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "Not Acme", Default: true, WhatsApp: &v1alpha1.ConnectedAccount{AccountID: waPhoneID,
				DisplayPhoneNumber: waDisplay, BusinessAccountID: wabaID, Active: true}}},
	)
	// A project's own endpoint is refused: not Ready, and never called.
	for _, name := range []string{"twilio", "meta"} {
		if c := providerReady(t, in, a, name); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonEndpointNotAllowed {
			t.Fatalf("project Provider %s with baseURL: %+v", name, c)
		}
	}
	time.Sleep(time.Second) // B's sender is the younger: a first-come choice would pick A's

	// Project B sends SMS and WhatsApp through the installation's accounts.
	b := newProject(t, in, v1alpha1.ProjectSpec{})
	in.createObjects(t, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Acme", Default: true, PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true},
		WhatsApp: &v1alpha1.ConnectedAccount{AccountID: waPhoneID, DisplayPhoneNumber: waDisplay, BusinessAccountID: wabaID, Active: true}}})
	key := newKey(t, in, b, apikey.Live)
	waitFor(t, func() bool { return in.get("/v1/senders/main", key).status == 200 })

	// The contact writes to B's number through the installation's app: it reaches B, not A's
	// sender, whose WhatsApp goes through A's own app.
	systemHook := in.url + "/callbacks/meta/" + system + "/meta"
	if code, err := metatest.WebhookPost(ctx, systemHook, []byte(metatest.AppSecret),
		metatest.HookTextMessage(waPhoneID, waDisplay, "15551230001", "wamid.in1", "Hello!")); err != nil || code != 200 {
		t.Fatalf("inbound webhook = %d %v", code, err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound'`, b) == 1
	})
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1`, a); n != 0 {
		t.Fatalf("A's sender received %d of B's messages", n)
	}

	r := in.post("/v1/messages", key, `{"to":"+15005550100","channel":"sms","text":"Your code is 1234"}`)
	if r.status != 200 {
		t.Fatalf("sms = %d %v", r.status, r.body)
	}
	sms := r.body["message"].(map[string]any)["id"].(string)
	sid := waitStatus(t, in, key, sms, "delivered")["providerMessageId"].(string)
	r = in.post("/v1/messages", key, `{"to":"+15551230001","channel":"whatsapp","text":"Hi!"}`)
	if r.status != 200 {
		t.Fatalf("whatsapp = %d %v", r.status, r.body)
	}
	wa := r.body["message"].(map[string]any)["id"].(string)
	wamid := waitStatus(t, in, key, wa, "sent")["providerMessageId"].(string)
	var through []string
	rows, err := in.db.Query(ctx, `SELECT id || ' ' || coalesce(provider, '-') FROM messages WHERE id = ANY($1) ORDER BY id`, []string{sms, wa})
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		through = append(through, s)
	}
	rows.Close()
	if want := []string{sms + " " + system + "/twilio", wa + " " + system + "/meta"}; !slices.Equal(through, want) && !slices.Equal(through, []string{want[1], want[0]}) {
		t.Fatalf("recorded Providers %v, want %v", through, want)
	}
	before := messageRows(t, in, b)

	// Twilio status callbacks, signed with A's own auth token: by Twilio's id, and by ?m=.
	twilioHook := in.url + "/callbacks/twilio/" + a + "/twilio/status"
	postTwilio := func(target string, form url.Values) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Twilio-Signature", twiliotest.Sign(attackerToken, target, form))
		return in.doRequest(req).status
	}
	for name, c := range map[string]struct {
		target string
		form   url.Values
	}{
		"B's SMS by its SID":         {twilioHook, url.Values{"MessageSid": {sid}, "MessageStatus": {"read"}}},
		"B's SMS by ?m=":             {twilioHook + "?m=" + sms, url.Values{"MessageSid": {"SM" + strings.Repeat("7", 32)}, "MessageStatus": {"read"}}},
		"B's WhatsApp by ?m=":        {twilioHook + "?m=" + wa, url.Values{"MessageSid": {"SM" + strings.Repeat("8", 32)}, "MessageStatus": {"delivered"}}},
		"B's WhatsApp by its wamid":  {twilioHook, url.Values{"MessageSid": {wamid}, "MessageStatus": {"delivered"}}},
		"B's SMS, a failure by ?m=":  {twilioHook + "?m=" + sms, url.Values{"MessageSid": {sid}, "MessageStatus": {"failed"}, "ErrorCode": {"30003"}}},
		"B's WhatsApp, a call by ?m": {in.url + "/callbacks/twilio/" + a + "/twilio/calls?m=" + wa, url.Values{"CallSid": {"CA" + strings.Repeat("9", 32)}, "CallStatus": {"completed"}}},
	} {
		if status := postTwilio(c.target, c.form); status != http.StatusOK {
			t.Errorf("%s = %d, want 200 (as for a message Switchboard does not know)", name, status)
		}
	}
	// Meta status webhooks, signed with A's app secret (Meta signs no query: ?m= proves nothing).
	attackerHook := in.url + "/callbacks/meta/" + a + "/meta"
	for name, p := range map[string]metatest.Payload{
		"B's WhatsApp delivered": metatest.HookStatus(waPhoneID, waDisplay, wamid, "15551230001", "delivered", 0),
		"B's WhatsApp failed":    metatest.HookStatus(waPhoneID, waDisplay, wamid, "15551230001", "failed", 131026),
		"B's SMS read":           metatest.HookStatus(waPhoneID, waDisplay, sid, "15005550100", "read", 0),
		"a message to B":         metatest.HookTextMessage(waPhoneID, waDisplay, "15551230002", "wamid.forged", "Send the code to me"),
	} {
		for _, target := range []string{attackerHook, attackerHook + "?m=" + wa} {
			if code, err := metatest.WebhookPost(ctx, target, []byte(attackerAppSecret), p); err != nil || code != http.StatusOK {
				t.Errorf("%s through %s = %d %v, want 200", name, target, code, err)
			}
		}
	}
	// (The message through A's app reached A's own sender: A's business, not B's.)
	if after := messageRows(t, in, b); !slices.Equal(after, before) {
		t.Fatalf("callbacks through A's Providers changed B's messages:\nbefore %v\nafter  %v", before, after)
	}

	// The same report through the Provider that sent the message moves it.
	if code, err := metatest.WebhookPost(ctx, systemHook, []byte(metatest.AppSecret),
		metatest.HookStatus(waPhoneID, waDisplay, wamid, "15551230001", "delivered", 0)); err != nil || code != 200 {
		t.Fatalf("status through the installation's app = %d %v", code, err)
	}
	waitStatus(t, in, key, wa, "delivered")
}

// apiServerReads counts the reads of named Senders and Secrets the instance makes of the API
// server itself (its informers list and watch; a Get through the cache reads nothing).
type apiServerReads struct {
	mu    sync.Mutex
	paths []string
}

func (c *apiServerReads) option(cfg *app.Config) {
	rc := rest.CopyConfig(cfg.RestConfig)
	if rc == nil {
		rc = rest.CopyConfig(testEnv.Config)
	}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && !strings.Contains(r.URL.RawQuery, "watch") &&
				(strings.Contains(r.URL.Path, "/senders/") || strings.Contains(r.URL.Path, "/secrets/")) {
				c.mu.Lock()
				c.paths = append(c.paths, r.URL.Path)
				c.mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	cfg.RestConfig = rc
}

func (c *apiServerReads) since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.paths[n:])
}

func (c *apiServerReads) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.paths)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// derivedSecret is the webhook secret token Switchboard gave bots before it made them random:
// an HMAC of the bot id under the installation's key, which anyone who could make Switchboard
// set a webhook for that bot id (through a project's own Bot API endpoint) learnt.
func derivedSecret(key []byte, botID int64) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("telegram-webhook:" + strconv.FormatInt(botID, 10)))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// A bot's webhook secret token is random, kept in its sender's Secret, and checked from the
// cache: a project's own Bot API endpoint is refused (so it cannot claim another project's bot
// id), the token derived from the bot id is refused, a bot attached before this gets a random
// token when an api process starts, and an unknown sender and a wrong token get the same answer
// without a read of the API server.
func TestTelegramWebhookSecretsAreRandomAndChecked(t *testing.T) {
	peer := telegramtest.NewServer(t)
	endpoint := telegramtest.NewServer(t) // a project's own "Bot API", which would claim any bot id
	reads := &apiServerReads{}
	database := pgtest.NewDatabase(t)
	in := start(t, onDatabase(database), publicAtListener, projectEndpointsRefused, reads.option,
		func(c *app.Config) { c.TelegramAPI = peer.URL })
	ctx := context.Background()

	// B attaches its bot; a message sent at once arrives (the cache catches up with the Secret).
	b := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, b, apikey.Live)
	id := in.post("/v1/senders", key, `{"name":"Support"}`).body["id"].(string)
	waitFor(t, func() bool { return in.get("/v1/senders/"+id, key).status == 200 })
	if r := in.post("/v1/senders/"+id+"/telegram", key, `{"botToken":"`+botToken+`"}`); r.status != 200 {
		t.Fatalf("attach = %d %v", r.status, r.body)
	}
	if status, err := peer.Deliver(ctx, peer.Message(555000111, "first")); err != nil || status != 200 {
		t.Fatalf("first update = %d %v", status, err)
	}
	hook := peer.Webhook()
	var secret corev1.Secret
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: b, Name: id + "-telegram"}, &secret); err != nil {
		t.Fatal(err)
	}
	if got := string(secret.Data[v1alpha1.TelegramWebhookSecretKey]); got != hook.SecretToken || len(got) != 43 {
		t.Fatalf("the Secret keeps %q, Telegram was given %q", got, hook.SecretToken)
	}
	installationKey, err := postgres.SharedSecret(ctx, in.db, "telegram_webhook_key", 32)
	if err != nil {
		t.Fatal(err)
	}
	derived := derivedSecret(installationKey, telegramtest.BotID)
	if hook.SecretToken == derived {
		t.Fatal("the webhook's secret token is the derived one")
	}

	// Project A's own telegram Provider names an endpoint: refused, and attaching a bot never
	// calls it (the bot id cannot be claimed, no secret handed out).
	a := newProject(t, in, v1alpha1.ProjectSpec{})
	in.createObjects(t, &v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "telegram"},
		Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderTelegram, BaseURL: endpoint.URL, Default: true}})
	c := providerReady(t, in, a, "telegram")
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonEndpointNotAllowed ||
		!strings.Contains(c.Message, "--allow-project-provider-endpoints") {
		t.Fatalf("project telegram Provider with baseURL: %+v", c)
	}
	aKey := newKey(t, in, a, apikey.Live)
	aSender := in.post("/v1/senders", aKey, `{"name":"Mallory"}`).body["id"].(string)
	waitFor(t, func() bool { return in.get("/v1/senders/"+aSender, aKey).status == 200 })
	if r := in.post("/v1/senders/"+aSender+"/telegram", aKey, `{"botToken":"987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsXX"}`); r.status != 400 {
		t.Fatalf("attach through the project's endpoint = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/channels", aKey, `{"type":"telegram","botToken":"987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsXX"}`); r.status != 400 {
		t.Fatalf("v2 attach through the project's endpoint = %d %v", r.status, r.body)
	}
	if calls := endpoint.Calls(); len(calls) != 0 {
		t.Fatalf("the project's endpoint was called: %+v", calls)
	}

	// Forged updates: the derived token, a wrong one, an unknown sender. Nothing is stored,
	// the last two answer alike, and none reads the API server.
	stored := in.count(`SELECT count(*) FROM messages WHERE project = $1`, b)
	forge := func(target, token string) response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(
			`{"update_id":1,"message":{"message_id":9,"date":1700000000,"chat":{"id":555000111,"type":"private"},"from":{"id":555000111,"is_bot":false,"first_name":"Eve"},"text":"forged"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(telegram.SecretHeader, token)
		return in.doRequest(req)
	}
	readsBefore := reads.count()
	if r := forge(hook.URL, derived); r.status != http.StatusForbidden {
		t.Errorf("the derived token = %d, want 403", r.status)
	}
	wrong := forge(hook.URL, "not-the-secret")
	unknown := forge(strings.Replace(hook.URL, "/"+id+"/", "/snd-nobody/", 1), "not-the-secret")
	noBot := forge(strings.Replace(hook.URL, "/"+b+"/"+id+"/", "/"+a+"/"+aSender+"/", 1), "not-the-secret")
	for name, r := range map[string]response{"unknown sender": unknown, "sender without a bot": noBot} {
		if r.status != wrong.status || string(r.raw) != string(wrong.raw) || r.header.Get("Content-Type") != wrong.header.Get("Content-Type") {
			t.Errorf("%s = %d %q (%s); a wrong token = %d %q (%s)", name, r.status, r.raw, r.header.Get("Content-Type"),
				wrong.status, wrong.raw, wrong.header.Get("Content-Type"))
		}
	}
	if wrong.status != http.StatusForbidden {
		t.Errorf("a wrong token = %d, want 403", wrong.status)
	}
	if got := reads.since(readsBefore); len(got) != 0 {
		t.Errorf("forged updates read the API server: %v", got)
	}
	if in.count(`SELECT count(*) FROM messages WHERE project = $1`, b) != stored {
		t.Errorf("a forged update was stored")
	}

	// A bot attached before secrets were random: its Secret has no token, and Telegram posts
	// with the derived one, which is refused. The next api process to start gives it a random
	// one; its updates arrive again.
	if err := in.k8s.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: id + "-telegram"}},
		client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/`+v1alpha1.TelegramWebhookSecretKey+`"}]`))); err != nil {
		t.Fatal(err)
	}
	if err := (telegram.Client{API: peer.URL}).SetWebhook(ctx, botToken, hook.URL, derived); err != nil {
		t.Fatal(err)
	}
	if status, err := peer.Deliver(ctx, peer.Message(555000111, "while legacy")); err != nil || status != http.StatusForbidden {
		t.Fatalf("update with the derived token = %d %v, want 403", status, err)
	}
	start(t, onDatabase(database), func(c *app.Config) {
		c.PublicURL, c.TelegramAPI = in.url, peer.URL
		c.AllowProjectEndpoints = false
	})
	waitFor(t, func() bool {
		var s corev1.Secret
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: b, Name: id + "-telegram"}, &s) == nil &&
			len(s.Data[v1alpha1.TelegramWebhookSecretKey]) > 0 && string(s.Data[v1alpha1.TelegramWebhookSecretKey]) == peer.Webhook().SecretToken
	})
	if got := peer.Webhook(); got.SecretToken == derived || got.URL != hook.URL {
		t.Fatalf("webhook after the move = %+v", got)
	}
	if status, err := peer.Deliver(ctx, peer.Message(555000111, "after the move")); err != nil || status != 200 {
		t.Fatalf("update after the move = %d %v", status, err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND body = 'after the move'`, b) == 1
	})
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND body IN ('while legacy', 'forged')`, b); n != 0 {
		t.Errorf("%d refused updates were stored", n)
	}
}
