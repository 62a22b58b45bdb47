package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

// metaDev is `switchboard dev` whose "default" namespace has the Graph API peer as its default
// meta Provider, with a live key and a webhook receiver for the senders a test adds.
type metaDev struct {
	t    *testing.T
	a    api
	key  string
	peer *metatest.Server
	rcv  *receiver
	k8s  client.Client
	// hook is the Meta app's webhook on the binary.
	hook string
}

// startMetaDev runs the binary with the peer as the meta Provider "meta" of "default", and waits
// for the Provider to be Ready (which it is only once the peer accepted its token).
func startMetaDev(t *testing.T, peer *metatest.Server) *metaDev {
	t.Helper()
	m := &metaDev{t: t, peer: peer, rcv: newReceiver(t)}
	d := startDev(t)
	m.a = api{t: t, url: d.env["SWITCHBOARD_URL"]}
	m.hook = m.a.url + "/callbacks/meta/default/meta"

	m.key = d.liveKey(t)

	m.k8s = d.kube(t)
	// The Meta app as config/samples/messaging_v1alpha1_provider_meta.yaml makes it.
	m.create(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "meta-app", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accessToken": metatest.Token, "appSecret": metatest.AppSecret, "verifyToken": "let-me-in"}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "meta"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderMeta, BaseURL: peer.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "meta-app"},
			Meta: &v1alpha1.MetaSettings{AppID: metatest.AppID}}},
	)
	ctx := context.Background()
	waitUntil(t, "the meta Provider is Ready", func() bool {
		var p v1alpha1.Provider
		return m.k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "meta"}, &p) == nil && p.IsReady()
	})
	return m
}

func (m *metaDev) create(objs ...client.Object) {
	m.t.Helper()
	for _, o := range objs {
		if err := m.k8s.Create(context.Background(), o); err != nil {
			m.t.Fatal(err)
		}
	}
}

// addSender creates a Sender of "default" on the Provider whose webhook is the receiver, and
// waits for it to be Ready with its signing secret.
func (m *metaDev) addSender(name string, spec v1alpha1.SenderSpec) {
	m.t.Helper()
	spec.Transport = v1alpha1.TransportProviders
	spec.Webhook = &v1alpha1.SenderWebhook{URL: m.rcv.URL + "/hook"}
	m.create(&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: spec})
	waitUntil(m.t, "Sender "+name+" is Ready", func() bool {
		var s v1alpha1.Sender
		return m.k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &s) == nil &&
			s.IsReady() && s.Status.WebhookSecret != nil
	})
}

// post posts p to the binary's Meta webhook signed with the app secret, as Meta does.
func (m *metaDev) post(p metatest.Payload) {
	m.t.Helper()
	if code, err := metatest.WebhookPost(context.Background(), m.hook, []byte(metatest.AppSecret), p); err != nil || code != http.StatusOK {
		m.t.Fatalf("webhook = %d %v", code, err)
	}
}

// send sends body (POST /v1/messages) from sender with the live key and returns the message id.
func (m *metaDev) send(sender, body string) string {
	m.t.Helper()
	status, out := m.a.do(http.MethodPost, "/v1/messages", m.key, body, "Service-Sender", sender)
	msg, _ := out["message"].(map[string]any)
	if status != http.StatusOK || msg["id"] == nil {
		m.t.Fatalf("send %s = %d %v", body, status, out)
	}
	return msg["id"].(string)
}

// event waits for the receiver to get the event name whose data match holds, and returns its data.
func (m *metaDev) event(name string, match func(d map[string]any) bool) map[string]any {
	m.t.Helper()
	var data map[string]any
	waitUntil(m.t, name+" reaches the webhook", func() bool { data = m.rcv.find(name, match); return data != nil })
	return data
}

// TestWhatsAppThroughTheBinary runs the built binary against the loopback Graph API as the
// meta Provider of a WhatsApp sender and proves, through its REST API and Meta's signed
// webhooks: a text in the contact's window reaches the Cloud API and moves to delivered then
// read (message.delivered and message.read at the receiver); a forged webhook is refused and
// changes nothing; an interactive list reaches the Cloud API with its rows; an image a contact
// sends from an ad raises message.inbound with the referral and its bytes are served by
// /v1/messages/{id}/media; a template made over the API is submitted to the business account,
// approved and recategorised by Meta's webhooks (one template.status_changed each), and sent
// to a contact whose window is closed, to whom free-form text is refused.
func TestWhatsAppThroughTheBinary(t *testing.T) {
	const (
		phoneID = "109876543210987"
		display = "+1 500-555-0010"
		wabaID  = "200000000000001"
		ada     = "+15551230001" // writes first, so her window is open
		bo      = "+15551230002" // never wrote: only templates reach him
		cy      = "+15551230009" // came from an ad
	)
	peer := metatest.NewServer(t, metatest.Options{})
	peer.AddPhoneNumber(phoneID, display, wabaID)
	m := startMetaDev(t, peer)
	a, key := m.a, m.key
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m.addSender("wa", v1alpha1.SenderSpec{DisplayName: "Acme WhatsApp", WhatsApp: &v1alpha1.ConnectedAccount{
		AccountID: phoneID, DisplayPhoneNumber: display, BusinessAccountID: wabaID, Active: true}})

	// Meta's subscription handshake answers the challenge only with the Secret's verify token.
	for token, want := range map[string]int{"let-me-in": http.StatusOK, "wrong": http.StatusForbidden} {
		resp, err := http.Get(m.hook + "?hub.mode=subscribe&hub.verify_token=" + token + "&hub.challenge=1158201444")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusOK && string(b) != "1158201444") {
			t.Fatalf("handshake with %q = %d %q, want %d", token, resp.StatusCode, b, want)
		}
	}

	// Ada writes first: message.inbound, and her 24-hour window opens.
	m.post(metatest.HookTextMessage(phoneID, display, ada, "wamid.in1", "Hello!"))
	hello := m.event("message.inbound", func(d map[string]any) bool { return d["providerMessageId"] == "wamid.in1" })
	if hello["from"] != ada || hello["channel"] != "whatsapp" || hello["text"] != "Hello!" || hello["senderId"] != "wa" ||
		hello["profileName"] != metatest.HookContactName {
		t.Fatalf("message.inbound = %v", hello)
	}

	// A live text to her reaches the Cloud API; Meta's signed statuses move it to delivered, then read.
	id := m.send("wa", `{"to":"`+ada+`","channel":"whatsapp","text":"Hi Ada! See https://acme.example"}`)
	msg := a.waitMessage(key, id, "sent")
	got, err := peer.Wait(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := got[0].Body["text"].(map[string]any)
	if len(got) != 1 || got[0].PhoneNumberID != phoneID || got[0].To != "15551230001" || got[0].Type != "text" ||
		got[0].ID != msg["providerMessageId"] || text["body"] != "Hi Ada! See https://acme.example" || text["preview_url"] != true ||
		got[0].Token != metatest.Token {
		t.Fatalf("the Cloud API got %+v; message %v", got, msg)
	}
	wamid := got[0].ID
	for _, status := range []string{"delivered", "read"} {
		m.post(metatest.HookStatus(phoneID, display, wamid, ada, status, 0))
		a.waitMessage(key, id, status)
		ev := m.event("message."+status, func(d map[string]any) bool { return d["messageId"] == id })
		if ev["status"] != status || ev["channel"] != "whatsapp" || ev["to"] != ada || ev["senderId"] != "wa" {
			t.Fatalf("message.%s = %v", status, ev)
		}
	}

	// A forged webhook (a failure of that message and a text from Ada, signed with another
	// secret) is refused, an unsigned one too, and neither changes anything.
	forged := metatest.HookBatch(metatest.HookStatus(phoneID, display, wamid, ada, "failed", 131026),
		metatest.HookTextMessage(phoneID, display, ada, "wamid.forged", "forged"))
	if code, err := metatest.WebhookPost(ctx, m.hook, []byte("not-the-app-secret"), forged); err != nil || code != http.StatusForbidden {
		t.Fatalf("forged webhook = %d %v, want 403", code, err)
	}
	resp, err := http.Post(m.hook, "application/json", strings.NewReader(string(forged.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned webhook = %d, want 401", resp.StatusCode)
	}
	// A genuine webhook after them is applied, and by then the forged ones would have been.
	m.post(metatest.HookTextMessage(phoneID, display, ada, "wamid.in2", "Thanks"))
	m.event("message.inbound", func(d map[string]any) bool { return d["providerMessageId"] == "wamid.in2" })
	if msg := a.waitMessage(key, id, "read"); msg["errorCode"] != nil {
		t.Fatalf("the forged webhook changed the message: %v", msg)
	}
	if m.rcv.find("message.inbound", func(d map[string]any) bool { return d["providerMessageId"] == "wamid.forged" }) != nil ||
		m.rcv.find("message.failed", func(map[string]any) bool { return true }) != nil {
		t.Fatal("the forged webhook raised events")
	}
	_, list := a.do(http.MethodGet, "/v1/messages?channel=whatsapp&limit=100", key, "")
	items, _ := list["items"].([]any)
	for _, it := range items {
		if it.(map[string]any)["text"] == "forged" {
			t.Fatalf("the forged webhook made a message: %v", it)
		}
	}
	if len(items) != 3 { // Hello!, Thanks and the reply
		t.Fatalf("%d WhatsApp messages, want 3: %v", len(items), items)
	}

	// An interactive list reaches the Cloud API with its sections and rows.
	id = m.send("wa", `{"to":"`+ada+`","channel":"whatsapp","messageType":"list","text":"Pick a slot",`+
		`"content":{"listButton":"Slots","sections":[{"title":"Today","rows":[{"id":"t9","title":"9:00"},{"id":"t10","title":"10:00","description":"After coffee"}]}]}}`)
	msg = a.waitMessage(key, id, "sent")
	got, _ = peer.Wait(ctx, 2)
	if got[1].ID != msg["providerMessageId"] || got[1].Type != "interactive" || got[1].To != "15551230001" {
		t.Fatalf("the Cloud API got %+v; message %v", got[1], msg)
	}
	if list := fmt.Sprint(got[1].Body["interactive"]); list != "map[action:map[button:Slots sections:[map[rows:[map[id:t9 title:9:00] "+
		"map[description:After coffee id:t10 title:10:00]] title:Today]]] body:map[text:Pick a slot] type:list]" {
		t.Fatalf("interactive = %s", list)
	}

	// Cy writes from an ad, with a photo: message.inbound carries the referral, and the binary
	// keeps the file, served by /v1/messages/{id}/media after Meta's link has expired.
	photo := []byte("\xff\xd8\xff\xe0\x00\x10JFIF a photo of shoes")
	peer.AddMedia("1013859600285441", "image/jpeg", photo)
	m.post(metatest.HookMediaMessage(phoneID, display, cy, "wamid.img1", "image", "1013859600285441", "image/jpeg", "My shoes",
		metatest.HookReferral(transport.Referral{SourceType: "ad", SourceID: "ad-42", SourceURL: "https://fb.me/ad42", Headline: "Spring sale", CtwaClid: "clid-1"})))
	img := m.event("message.inbound", func(d map[string]any) bool { return d["providerMessageId"] == "wamid.img1" })
	imageID, _ := img["messageId"].(string)
	content, _ := img["content"].(map[string]any)
	if img["from"] != cy || img["messageType"] != "image" || img["text"] != "My shoes" || content["mediaUrl"] != a.url+"/v1/messages/"+imageID+"/media" ||
		fmt.Sprint(img["referral"]) != "map[ctwaClid:clid-1 headline:Spring sale sourceId:ad-42 sourceType:ad sourceUrl:https://fb.me/ad42]" {
		t.Fatalf("message.inbound of the image = %v", img)
	}
	req, _ := http.NewRequest(http.MethodGet, a.url+"/v1/messages/"+imageID+"/media", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(served) != string(photo) || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("media = %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), served)
	}

	// A template made over the API and submitted to the sender's business account.
	status, body := a.do(http.MethodPost, "/v1/templates", key, `{"name":"welcome","language":"en","body":"Welcome {{1}}!","variables":["Ada"]}`)
	if status != http.StatusCreated || body["id"] != "welcome.en" || body["status"] != "draft" {
		t.Fatalf("create template = %d %v", status, body)
	}
	if status, body := a.do(http.MethodPost, "/v1/templates/welcome.en/submit", key, `{"senderId":"wa"}`); status != http.StatusOK || body["status"] != "pending" {
		t.Fatalf("submit = %d %v", status, body)
	}
	submitted := peer.Templates(wabaID)
	if len(submitted) != 1 || submitted[0].Name != "welcome" || submitted[0].Language != "en" || submitted[0].Status != "PENDING" {
		t.Fatalf("the business account has %+v", submitted)
	}
	templateEvent := func(previous, current, category string) {
		t.Helper()
		ev := m.event("template.status_changed", func(d map[string]any) bool {
			return d["templateId"] == "welcome.en" && d["previousStatus"] == previous && d["currentStatus"] == current &&
				(category == "" || d["category"] == category)
		})
		if ev["name"] != "welcome" || ev["language"] != "en" {
			t.Fatalf("template.status_changed = %v", ev)
		}
	}
	templateEvent("draft", "pending", "")
	// Before approval neither Bo nor anyone gets it.
	templateSend := `{"to":"` + bo + `","channel":"whatsapp","messageType":"template","content":{"templateId":"welcome.en","templateVariables":{"1":"Bo"}}}`
	if status, body := a.do(http.MethodPost, "/v1/messages", key, templateSend, "Service-Sender", "wa"); status != http.StatusBadRequest || body["code"] != "template_not_approved" {
		t.Fatalf("template send before approval = %d %v", status, body)
	}

	// Meta approves it and says so; then moves it to another category and says so.
	peer.SetTemplateStatus(wabaID, "welcome", "en", "APPROVED", "UTILITY")
	m.post(metatest.HookTemplateStatus(wabaID, submitted[0].ID, "welcome", "en", "APPROVED", ""))
	waitUntil(t, "the template is approved", func() bool {
		_, body := a.do(http.MethodGet, "/v1/templates/welcome.en", key, "")
		return body["status"] == "approved"
	})
	templateEvent("pending", "approved", "")
	m.post(metatest.HookTemplateCategory(wabaID, submitted[0].ID, "welcome", "en", "UTILITY", "MARKETING"))
	waitUntil(t, "the template is recategorised", func() bool {
		_, body := a.do(http.MethodGet, "/v1/templates/welcome.en", key, "")
		return body["category"] == "MARKETING" && body["status"] == "approved"
	})
	templateEvent("approved", "approved", "MARKETING")
	m.rcv.mu.Lock()
	var announced []string
	seen := map[any]bool{}
	for _, ev := range m.rcv.events {
		// Deliveries are at least once: a second delivery of one event has the same id
		// (docs/guarantees.md), and is the same change.
		if seen[ev["id"]] {
			continue
		}
		seen[ev["id"]] = true
		if d, _ := ev["data"].(map[string]any); ev["event"] == "template.status_changed" {
			announced = append(announced, fmt.Sprintf("%v→%v %v", d["previousStatus"], d["currentStatus"], d["category"]))
		}
	}
	m.rcv.mu.Unlock()
	// Each change was awaited before the next was made, so they arrived in this order.
	if got := fmt.Sprintf("%q", announced); got != `["draft→pending UTILITY" "pending→approved UTILITY" "approved→approved MARKETING"]` {
		t.Fatalf("template.status_changed events = %s, want one per change", got)
	}

	// Bo has never written: Switchboard refuses free-form text to him, and the Cloud API (its
	// window closed) would too; the template is accepted and reaches it as a template message.
	peer.Window(bo, false)
	if status, body := a.do(http.MethodPost, "/v1/messages", key, `{"to":"`+bo+`","channel":"whatsapp","text":"Hi Bo"}`, "Service-Sender", "wa"); status != http.StatusBadRequest ||
		body["code"] != "whatsapp_window_closed" {
		t.Fatalf("free-form text outside the window = %d %v", status, body)
	}
	id = m.send("wa", templateSend)
	msg = a.waitMessage(key, id, "sent")
	got, _ = peer.Wait(ctx, 3)
	last := got[len(got)-1]
	if len(got) != 3 || last.ID != msg["providerMessageId"] || last.Type != "template" || last.To != "15551230002" ||
		fmt.Sprint(last.Body["template"]) != "map[components:[map[parameters:[map[text:Bo type:text]] type:body]] language:map[code:en] name:welcome]" {
		t.Fatalf("the Cloud API got %d messages, the last %+v; message %v", len(got), last, msg)
	}
}

// TestMessengerAndInstagramThroughTheBinary runs the built binary against the loopback Graph
// API with a sender whose Messenger is a Page and whose Instagram is a professional account:
// a message on each raises message.inbound, the reply over the REST API reaches the Send API
// from the same account as a RESPONSE, and Messenger's delivery receipt moves it to delivered.
func TestMessengerAndInstagramThroughTheBinary(t *testing.T) {
	const (
		pageID = "300000000000001"
		igID   = "17841400000000001"
		psid   = "6100000000000001"
		igsid  = "6200000000000002"
	)
	peer := metatest.NewServer(t, metatest.Options{})
	peer.AddPage(pageID, "Acme")
	peer.AddPage(igID, "acme.shop")
	m := startMetaDev(t, peer)
	m.addSender("social", v1alpha1.SenderSpec{DisplayName: "Acme social",
		Messenger: &v1alpha1.ConnectedAccount{AccountID: pageID, DisplayName: "Acme", Active: true},
		Instagram: &v1alpha1.ConnectedAccount{AccountID: igID, DisplayName: "acme.shop", Active: true}})

	replies := map[string]map[string]any{}
	for _, c := range []struct {
		channel, account, user, mid, text string
		inbound                           metatest.Payload
	}{
		{"messenger", pageID, psid, "m_in1", "Do you ship to Spain?", metatest.HookMessengerText(pageID, psid, "m_in1", "Do you ship to Spain?")},
		{"instagram", igID, igsid, "ig_in1", "Love the new shoes", metatest.HookInstagramText(igID, igsid, "ig_in1", "Love the new shoes")},
	} {
		// The person writes: message.inbound from them, on the channel, to the sender.
		m.post(c.inbound)
		ev := m.event("message.inbound", func(d map[string]any) bool { return d["providerMessageId"] == c.mid })
		if ev["from"] != c.user || ev["channel"] != c.channel || ev["text"] != c.text || ev["senderId"] != "social" {
			t.Fatalf("%s message.inbound = %v", c.channel, ev)
		}

		// The reply goes through the Send API from the same account.
		id := m.send("social", `{"to":"`+c.user+`","channel":"`+c.channel+`","text":"Yes, we do!"}`)
		msg := m.a.waitMessage(m.key, id, "sent")
		var sent []metatest.Message
		for _, got := range peer.Messages() {
			if got.ID != "" && got.ID == msg["providerMessageId"] {
				sent = append(sent, got)
			}
		}
		if len(sent) != 1 || sent[0].PageID != c.account || sent[0].To != c.user || sent[0].Type != "text" ||
			sent[0].Body["messaging_type"] != "RESPONSE" || fmt.Sprint(sent[0].Body["message"]) != "map[text:Yes, we do!]" {
			t.Fatalf("%s: the Send API got %+v for message %v", c.channel, peer.Messages(), msg)
		}
		replies[c.channel] = msg
	}

	// Messenger's delivery receipt names the reply: delivered, and message.delivered.
	reply := replies["messenger"]
	m.post(metatest.HookMessengerDelivery(pageID, psid, time.Now().UnixMilli(), reply["providerMessageId"].(string)))
	m.a.waitMessage(m.key, reply["id"].(string), "delivered")
	m.event("message.delivered", func(d map[string]any) bool { return d["messageId"] == reply["id"] && d["channel"] == "messenger" })
	if _, body := m.a.do(http.MethodGet, "/v2/messages/"+replies["instagram"]["id"].(string), m.key, ""); body["message"].(map[string]any)["status"] != "sent" {
		t.Fatalf("the Instagram reply moved: %v", body)
	}
}
