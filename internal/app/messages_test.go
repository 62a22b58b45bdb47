package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// hookReceiver is a loopback HTTPS webhook receiver that keeps the events it gets.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	events []map[string]any
	// onEvent, when set, sees every event as it arrives.
	onEvent func(map[string]any)
}

func newHookReceiver(t testing.TB) *hookReceiver {
	h := &hookReceiver{}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev map[string]any
		_ = json.Unmarshal(b, &ev)
		if h.onEvent != nil {
			h.onEvent(ev)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.Close)
	return h
}

// trusted lets the instance's webhook deliveries reach this receiver.
func (h *hookReceiver) trusted() option {
	return deliveringTo(h.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs)
}

func (h *hookReceiver) names(messageID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		if data, _ := ev["data"].(map[string]any); data["messageId"] == messageID {
			out = append(out, ev["event"].(string))
		}
	}
	return out
}

// sendingProject makes a project with a default sandbox sender (sms, email, whatsapp on) whose
// webhook goes to rcv (ready to deliver when it returns), and a key of env.
func sendingProject(t testing.TB, in *instance, rcv *hookReceiver, env apikey.Environment) (string, string) {
	t.Helper()
	return sendingProjectOf(t, in, v1alpha1.ProjectSpec{}, rcv, env)
}

// sendingProjectOf is sendingProject with the Project's spec (registered for 10DLC, as newProject).
func sendingProjectOf(t testing.TB, in *instance, spec v1alpha1.ProjectSpec, rcv *hookReceiver, env apikey.Environment) (string, string) {
	t.Helper()
	return projectWithSender(t, in, newProject(t, in, spec), rcv, env)
}

// unregisteredProject is sendingProjectOf without 10DLC registrations.
func unregisteredProject(t testing.TB, in *instance, spec v1alpha1.ProjectSpec, rcv *hookReceiver, env apikey.Environment) (string, string) {
	t.Helper()
	return projectWithSender(t, in, newUnregisteredProject(t, in, spec), rcv, env)
}

// projectWithSender gives project acme its default sandbox sender and a key of env.
func projectWithSender(t testing.TB, in *instance, acme string, rcv *hookReceiver, env apikey.Environment) (string, string) {
	t.Helper()
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true},
		Email:    &v1alpha1.EmailSettings{Address: "hello@acme.example"},
		WhatsApp: &v1alpha1.ConnectedAccount{AccountID: "wa-1", DisplayPhoneNumber: "+15005550006", Active: true},
	}}
	if rcv != nil {
		snd.Spec.Webhook = &v1alpha1.SenderWebhook{URL: rcv.URL + "/hook"}
	}
	if err := in.k8s.Create(context.Background(), snd); err != nil {
		t.Fatal(err)
	}
	key := newKey(t, in, acme, env)
	waitFor(t, func() bool {
		r := in.get("/v1/senders/main", key)
		chans, _ := r.body["channels"].([]any)
		return r.status == 200 && len(chans) == 3
	})
	if rcv != nil { // events are delivered once the webhook has its signing secret
		waitFor(t, func() bool {
			var s v1alpha1.Sender
			return in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "main"}, &s) == nil && s.Status.WebhookSecret != nil
		})
	}
	return acme, key
}

func TestSendTextThroughTheSandbox(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	acme, key := sendingProject(t, in, rcv, apikey.Test)

	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hello","metadata":{"order":"42"}}`)
	msg, _ := r.body["message"].(map[string]any)
	if r.status != 200 || msg["status"] != "queued" || msg["channel"] != "sms" || msg["senderId"] != "main" || msg["from"] != "+15005550006" {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	id := msg["id"].(string)
	waitFor(t, func() bool {
		return in.get("/v1/messages/"+id, key).body["message"].(map[string]any)["status"] == "delivered"
	})
	got := in.get("/v1/messages/"+id, key).body["message"].(map[string]any)
	if !strings.HasPrefix(fmt.Sprint(got["providerMessageId"]), "sbx_") || got["metadata"].(map[string]any)["order"] != "42" {
		t.Errorf("delivered message %v", got)
	}
	// The sender's status carries its traffic from Postgres.
	waitFor(t, func() bool {
		var snd v1alpha1.Sender
		_ = in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "main"}, &snd)
		a := snd.Status.Activity
		return a != nil && a.LastMessageID == id && a.Outbound24h == 1 && a.LastMessageAt != nil
	})

	// Each step's event reaches the webhook (deliveries are separate jobs, so in any order).
	waitFor(t, func() bool { return len(rcv.names(id)) == 3 })
	names := rcv.names(id)
	sort.Strings(names)
	if strings.Join(names, ",") != "message.delivered,message.queued,message.sent" {
		t.Errorf("events %v", names)
	}

	// Email routes by the recipient; whatsapp is read after delivered.
	r = in.post("/v1/messages", key, `{"to":"someone@example.com","text":"Hi","subject":"Hello"}`)
	if m := r.body["message"].(map[string]any); r.status != 200 || m["channel"] != "email" || m["from"] != "hello@acme.example" {
		t.Fatalf("email = %d %v", r.status, r.body)
	}
	openWindow(t, in, key, "+15005550100")
	r = in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hi","channel":"whatsapp"}`)
	wa := r.body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool {
		return in.get("/v1/messages/"+wa, key).body["message"].(map[string]any)["status"] == "read"
	})

	// A magic recipient fails with its error code, and says so in message.failed.
	r = in.post("/v1/messages", key, `{"to":"+15005550001","text":"Hi"}`)
	failed := r.body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool {
		return in.get("/v1/messages/"+failed, key).body["message"].(map[string]any)["status"] == "failed"
	})
	if m := in.get("/v1/messages/"+failed, key).body["message"].(map[string]any); m["errorCode"] != "RISK_BLOCKED" {
		t.Errorf("failed message %v", m)
	}
	waitFor(t, func() bool { n := rcv.names(failed); sort.Strings(n); return len(n) == 2 && n[0] == "message.failed" })
}

func TestIdempotentSends(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test)

	first := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Once","idempotencyKey":"order-1"}`)
	again := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Once","idempotencyKey":"order-1"}`)
	if first.status != 200 {
		t.Fatalf("first send = %d %v", first.status, first.body)
	}
	original := first.body["message"].(map[string]any)["id"]
	if again.status != 409 || again.header.Get("X-Should-Retry") != "false" ||
		again.body["details"].(map[string]any)["message"].(map[string]any)["id"] != original {
		t.Fatalf("retry = %d %v", again.status, again.body)
	}
	// The header works as the body field does.
	req, _ := http.NewRequest("POST", in.url+"/v1/messages", strings.NewReader(`{"to":"+15005550100","text":"Once"}`))
	req.Header.Set("Authorization", key)
	req.Header.Set("Idempotency-Key", "order-1")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 409 {
		t.Fatalf("header retry = %v %v", resp, err)
	}

	// 50 at once with one key: one message.
	var wg sync.WaitGroup
	statuses := make(chan int, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", in.url+"/v1/messages", strings.NewReader(`{"to":"+15005550100","text":"Race","idempotencyKey":"race"}`))
			req.Header.Set("Authorization", key)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				statuses <- resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[200] != 1 || count[409] != 49 {
		t.Fatalf("50 concurrent sends with one key: %v", count)
	}
	if n := in.count("SELECT count(*) FROM messages WHERE body = 'Race'"); n != 1 {
		t.Fatalf("%d messages for one key", n)
	}
}

func TestBadSendsChangeNothing(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	readOnly := newKey(t, in, acme, apikey.Test, "messages:read")
	for name, c := range map[string]struct {
		body   string
		status int
		fields int
	}{
		"missing to":            {`{"text":"x"}`, 400, 1},
		"16 digits":             {`{"to":"+1234567890123456","text":"x"}`, 400, 1},
		"email without subject": {`{"to":"a@example.com","text":"x"}`, 400, 1},
		"subject of 999":        {`{"to":"a@example.com","text":"x","subject":"` + strings.Repeat("s", 999) + `"}`, 400, 1},
		"unknown channel":       {`{"to":"+15005550100","text":"x","channel":"pigeon"}`, 400, 1},
		"unknown type":          {`{"to":"+15005550100","text":"x","messageType":"hologram"}`, 400, 1},
		"no text":               {`{"to":"+15005550100"}`, 400, 1},
		"email to sms":          {`{"to":"a@example.com","text":"x","subject":"s","channel":"sms"}`, 400, 1},
		"inactive channel":      {`{"to":"+15005550100","text":"x","channel":"voice"}`, 400, 1},
		"everything at once":    {`{"to":"nope","text":"` + strings.Repeat("t", 4097) + `","channel":"pigeon","messageType":"hologram"}`, 400, 4},
		"wrong types":           {`{"to":5,"text":true,"metadata":{"a":1}}`, 400, 3},
		"unknown sender":        {`{"to":"+15005550100","text":"x"}`, 400, 1},
	} {
		req, _ := http.NewRequest("POST", in.url+"/v1/messages", strings.NewReader(c.body))
		req.Header.Set("Authorization", key)
		if name == "unknown sender" {
			req.Header.Set("Service-Sender", "nobody")
		}
		r := in.doRequest(req)
		if r.status != c.status || len(fieldErrors(r)) != c.fields {
			t.Errorf("%s: %d %v, want %d with %d field errors", name, r.status, r.body, c.status, c.fields)
		}
	}
	if r := in.post("/v1/messages", readOnly, `{"to":"+15005550100","text":"x"}`); r.status != 403 {
		t.Errorf("a read-only key sends: %d", r.status)
	}
	if n := in.count("SELECT count(*) FROM messages"); n != 0 {
		t.Errorf("bad sends stored %d messages", n)
	}
	if n := in.count("SELECT count(*) FROM river_job WHERE kind = 'message.dispatch'"); n != 0 {
		t.Errorf("bad sends enqueued %d dispatches", n)
	}
}

func TestTestAndLiveTrafficAreApart(t *testing.T) {
	in := start(t, fastSandbox)
	acme, testKey := sendingProject(t, in, nil, apikey.Test)
	liveKey := newKey(t, in, acme, apikey.Live)
	id := in.post("/v1/messages", testKey, `{"to":"+15005550100","text":"sandbox"}`).body["message"].(map[string]any)["id"].(string)
	if r := in.get("/v1/messages/"+id, liveKey); r.status != 404 {
		t.Errorf("a live key reads a test message: %d", r.status)
	}
	if r := in.get("/v1/messages", liveKey); len(r.body["items"].([]any)) != 0 {
		t.Errorf("a live key lists test messages: %v", r.body["items"])
	}
	for i := 0; i < 4; i++ {
		in.post("/v1/messages", testKey, fmt.Sprintf(`{"to":"+1500555010%d","text":"n%d"}`, i, i))
	}
	seen, cursor := 0, ""
	for page := 0; page < 10; page++ {
		r := in.get("/v1/messages?limit=2&cursor="+cursor, testKey)
		seen += len(r.body["items"].([]any))
		if cursor, _ = r.body["nextCursor"].(string); cursor == "" {
			break
		}
	}
	if seen != 5 {
		t.Errorf("pages held %d messages, want 5", seen)
	}
	if r := in.get("/v1/messages?to=%2B15005550102", testKey); len(r.body["items"].([]any)) != 1 {
		t.Errorf("filter by to: %v", r.body)
	}
	// A + sent unencoded in the query (it reads as a space) is still the number.
	if r := in.get("/v1/messages?to=+15005550102", testKey); len(r.body["items"].([]any)) != 1 {
		t.Errorf("filter by an unencoded +: %v", r.body)
	}
}

func TestMessageStatusEventCarriesEveryChange(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	acme, key := sendingProject(t, in, nil, apikey.Test)
	// A webhook that asks for message.status only (retrying while the controller writes status).
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var snd v1alpha1.Sender
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "main"}, &snd); err != nil {
			return err
		}
		snd.Spec.Webhook = &v1alpha1.SenderWebhook{URL: rcv.URL + "/hook", Events: []v1alpha1.WebhookEvent{"message.status"}}
		return in.k8s.Update(context.Background(), &snd)
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		var s v1alpha1.Sender
		return in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "main"}, &s) == nil && s.Status.WebhookSecret != nil
	})
	id := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hi"}`).body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return len(rcv.names(id)) == 3 })
	for _, n := range rcv.names(id) {
		if n != "message.status" {
			t.Errorf("a message.status-only webhook got %s", n)
		}
	}
	rcv.mu.Lock()
	var statuses []string
	for _, ev := range rcv.events {
		if data, _ := ev["data"].(map[string]any); data["messageId"] == id {
			statuses = append(statuses, data["status"].(string))
		}
	}
	rcv.mu.Unlock()
	sort.Strings(statuses)
	if strings.Join(statuses, ",") != "delivered,queued,sent" {
		t.Errorf("message.status carried %v, want queued, sent and delivered", statuses)
	}
}

func TestRichMessages(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test)
	openWindow(t, in, key, "+15005550100")
	tplID := approvedTemplate(t, in, key)

	for name, body := range map[string]string{
		"image":    `{"to":"+15005550100","messageType":"image","text":"Our new shop","content":{"mediaUrl":"https://cdn.acme.example/shop.jpg"}}`,
		"location": `{"to":"+15005550100","messageType":"location","content":{"latitude":52.52,"longitude":13.405,"locationName":"Berlin"}}`,
		"buttons":  `{"to":"+15005550100","messageType":"buttons","text":"Confirm?","content":{"buttons":[{"id":"y","title":"Yes"},{"id":"n","title":"No"}]}}`,
		"list":     `{"to":"+15005550100","messageType":"list","text":"Pick","content":{"listButton":"Options","sections":[{"title":"A","rows":[{"id":"1","title":"One"}]}]}}`,
		"template": `{"to":"+15005550100","messageType":"template","content":{"templateId":"` + tplID + `","templateVariables":{"1":"Ada"}}}`,
	} {
		r := in.post("/v1/messages", key, body)
		m, _ := r.body["message"].(map[string]any)
		if r.status != 200 || m["channel"] != "whatsapp" || m["content"] == nil {
			t.Errorf("%s: %d %v, want it routed to whatsapp with its content", name, r.status, r.body)
		}
	}

	before := in.count("SELECT count(*) FROM messages")
	for name, c := range map[string]struct {
		body   string
		fields int
	}{
		"four buttons":           {`{"to":"+15005550100","messageType":"buttons","text":"x","content":{"buttons":[{"id":"1","title":"a"},{"id":"2","title":"b"},{"id":"3","title":"c"},{"id":"4","title":"d"}]}}`, 1},
		"location, no latitude":  {`{"to":"+15005550100","messageType":"location","content":{"longitude":13.4}}`, 1},
		"template, no id":        {`{"to":"+15005550100","messageType":"template","content":{}}`, 1},
		"image without media":    {`{"to":"+15005550100","messageType":"image"}`, 1},
		"reaction, nothing":      {`{"to":"+15005550100","messageType":"reaction","content":{}}`, 2},
		"cta without url":        {`{"to":"+15005550100","messageType":"cta_url","text":"Go","content":{"ctaDisplayText":"Open"}}`, 1},
		"list, empty section":    {`{"to":"+15005550100","messageType":"list","text":"x","content":{"listButton":"b","sections":[{"title":"A","rows":[]}]}}`, 1},
		"image on sms abroad":    {`{"to":"+447700900100","messageType":"image","channel":"sms","content":{"mediaUrl":"https://cdn.acme.example/a.jpg"}}`, 1},
		"content of wrong types": {`{"to":"+15005550100","messageType":"location","content":{"latitude":"north","longitude":13.4}}`, 1},
	} {
		r := in.post("/v1/messages", key, c.body)
		if r.status != 400 || len(fieldErrors(r)) != c.fields {
			t.Errorf("%s: %d %v, want 400 with %d field errors", name, r.status, r.body, c.fields)
		}
	}
	if after := in.count("SELECT count(*) FROM messages"); after != before {
		t.Errorf("refused sends stored %d messages", after-before)
	}
}

func TestSendOptions(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test)
	r := in.post("/v1/messages", key, `{"to":"ada@example.com","subject":"Hi","text":"Plain","htmlBody":"<p>Rich</p>","replyTo":"help@acme.example"}`)
	if r.status != 200 {
		t.Fatalf("email with options = %d %v", r.status, r.body)
	}
	id := r.body["message"].(map[string]any)["id"].(string)
	if n := in.count(`SELECT count(*) FROM messages WHERE id = $1 AND options->>'htmlBody' = '<p>Rich</p>'
		AND options->>'replyTo' = 'help@acme.example' AND (options->>'fallbackEnabled')::boolean`, id); n != 1 {
		t.Errorf("options not stored as sent (fallback on by default)")
	}
	openWindow(t, in, key, "+15005550100")
	r = in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hi","channel":"whatsapp","fallbackEnabled":false,"voiceLanguage":"pt-BR"}`)
	id = r.body["message"].(map[string]any)["id"].(string)
	if n := in.count(`SELECT count(*) FROM messages WHERE id = $1 AND NOT (options->>'fallbackEnabled')::boolean AND options->>'voiceLanguage' = 'pt-BR'`, id); n != 1 {
		t.Errorf("fallbackEnabled false not stored")
	}
	for name, body := range map[string]string{
		"replyTo not an address": `{"to":"ada@example.com","subject":"Hi","text":"x","replyTo":"nope"}`,
		"htmlBody on sms":        `{"to":"+15005550100","text":"x","htmlBody":"<p>x</p>"}`,
		"bad language":           `{"to":"+15005550100","text":"x","voiceLanguage":"english please"}`,
	} {
		if r := in.post("/v1/messages", key, body); r.status != 400 || len(fieldErrors(r)) != 1 {
			t.Errorf("%s: %d %v", name, r.status, r.body)
		}
	}
}

func TestSandboxCatchesUpLostSteps(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	id := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hi"}`).body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return messageOf(in, key, id)["status"] == "delivered" })

	// Messages whose next step's timer went with a process that stopped a minute ago: the
	// sandbox's own (sbx_ ids) are caught up, whatsapp through to read; another transport's wait
	// for its provider.
	for _, m := range []struct{ id, channel, provider string }{
		{"msg_lost_sms", "sms", "sbx_lost1"}, {"msg_lost_wa", "whatsapp", "sbx_lost2"}, {"msg_provider", "sms", "SM0123"},
	} {
		if n := in.count(`WITH i AS (INSERT INTO messages (id, project, test_mode, sender, direction, channel, message_type, status,
			recipient, originator, provider_message_id, created_at, updated_at)
			VALUES ($1, $2, true, 'main', 'outbound', $3, 'text', 'sent', '+15005550100', '+15005550006', $4,
			now() - interval '1 minute', now() - interval '1 minute') RETURNING 1) SELECT count(*) FROM i`, m.id, acme, m.channel, m.provider); n != 1 {
			t.Fatal("insert a lost message")
		}
	}
	waitFor(t, func() bool {
		return messageOf(in, key, "msg_lost_sms")["status"] == "delivered" && messageOf(in, key, "msg_lost_wa")["status"] == "read"
	})
	if got := messageOf(in, key, "msg_provider")["status"]; got != "sent" {
		t.Errorf("the sandbox moved another transport's message to %v", got)
	}
}

func TestSandboxMagicRecipients(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test)
	openWindow(t, in, key, "+15005550009")
	sent := map[string]string{}
	for body, code := range map[string]string{
		`{"to":"+15005550001","text":"x"}`:                                              "RISK_BLOCKED",
		`{"to":"+15005550002","text":"x"}`:                                              "SENDING_SUSPENDED",
		`{"to":"+15005550003","text":"x"}`:                                              "TEN_DLC_REQUIRED",
		`{"to":"+15005550010","text":"x"}`:                                              "RISK_REJECTED",
		`{"to":"+15005550011","text":"x"}`:                                              "RISK_REVIEW_EXPIRED",
		`{"to":"malformed@sandbox.switchboard.io","subject":"s","text":"x"}`:            "EMAIL_INVALID_RECIPIENT",
		`{"to":"suppressed@sandbox.switchboard.io","subject":"s","text":"x"}`:           "EMAIL_RECIPIENT_SUPPRESSED",
		`{"to":"nobody@nomx.sandbox.switchboard.io","subject":"s","text":"x"}`:          "EMAIL_DOMAIN_NOT_FOUND",
		`{"to":"+15005550009","text":"x","channel":"whatsapp","fallbackEnabled":false}`: "WHATSAPP_UNDELIVERABLE",
	} {
		r := in.post("/v1/messages", key, body)
		if r.status != 200 {
			t.Fatalf("%s = %d %v", body, r.status, r.body)
		}
		sent[r.body["message"].(map[string]any)["id"].(string)] = code
	}
	for id, code := range sent {
		waitFor(t, func() bool { return messageOf(in, key, id)["status"] == "failed" })
		if m := messageOf(in, key, id); m["errorCode"] != code || m["errorMessage"] == "" {
			t.Errorf("%s to %v failed with %v, want %s", id, m["to"], m["errorCode"], code)
		}
	}
	// Any other recipient is delivered.
	id := in.post("/v1/messages", key, `{"to":"+15005550012","text":"x"}`).body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return messageOf(in, key, id)["status"] == "delivered" })
}

// A channel named by the send carries the types its transport can: MMS to +1 numbers, rich
// types on Telegram but no template, which is refused naming the channel.
func TestChannelsCarryTheirTypes(t *testing.T) {
	in := start(t, fastSandbox)
	key := deskProject(t, in)

	for name, body := range map[string]string{
		"mms to +1":         `{"to":"+15005550100","channel":"sms","messageType":"image","text":"Receipt","content":{"mediaUrl":"https://cdn.acme.example/r.jpg"}}`,
		"telegram buttons":  `{"to":"447700900103","channel":"telegram","messageType":"buttons","text":"Pick","content":{"buttons":[{"id":"y","title":"Yes"}]}}`,
		"telegram location": `{"to":"447700900103","channel":"telegram","messageType":"location","content":{"latitude":52.5,"longitude":13.4}}`,
	} {
		r := in.post("/v1/messages", key, body)
		if m, _ := r.body["message"].(map[string]any); r.status != 200 || m["status"] != "queued" {
			t.Errorf("%s: %d %v", name, r.status, r.body)
		}
	}
	// Telegram has no templates of its own: it sends the template's telegramBody, filled in.
	tplID := approvedTemplate(t, in, key)
	r := in.post("/v1/messages", key, `{"to":"447700900103","channel":"telegram","messageType":"template","content":{"templateId":"`+tplID+`","templateVariables":{"1":"Ada"}}}`)
	if m, _ := r.body["message"].(map[string]any); r.status != 200 || m["text"] != "Hey Ada!" || m["messageType"] != "text" {
		t.Errorf("telegram template = %d %v, want its telegramBody as text", r.status, r.body)
	}
}

// deskProject makes a project whose default sender "desk" has sms at +15005550006 and the
// Telegram bot @acme_bot (simulated), and returns a test key.
func deskProject(t testing.TB, in *instance) string {
	t.Helper()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	if err := in.k8s.Create(context.Background(), &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "desk"},
		Spec: v1alpha1.SenderSpec{DisplayName: "Desk", Default: true, PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true},
			Telegram: &v1alpha1.ConnectedAccount{AccountID: "123456789", DisplayName: "acme_bot", Active: true}}}); err != nil {
		t.Fatal(err)
	}
	key := newKey(t, in, acme, apikey.Test)
	waitFor(t, func() bool {
		chans, _ := in.get("/v1/senders/desk", key).body["channels"].([]any) // 404 until the cache has the sender
		return len(chans) == 2
	})
	return key
}
