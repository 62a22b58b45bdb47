package app_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

const (
	waPhoneID = "109876543210987"
	waDisplay = "+1 500-555-0010"
	waNumber  = "+15005550010"
	wabaID    = "200000000000001"
)

// metaProject is a project whose default meta Provider is the Graph API peer, with a sender
// whose WhatsApp is the peer's number, and a live key.
func metaProject(t *testing.T, in *instance, peer *metatest.Server, token string) (string, string) {
	t.Helper()
	ctx := context.Background()
	peer.AddPhoneNumber(waPhoneID, waDisplay, wabaID)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "meta", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accessToken": token, "appSecret": metatest.AppSecret, "verifyToken": "let-me-in"}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "meta"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderMeta, BaseURL: peer.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "meta"},
			Meta: &v1alpha1.MetaSettings{AppID: metatest.AppID}}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "wa"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "Acme WhatsApp", Default: true, WhatsApp: &v1alpha1.ConnectedAccount{AccountID: waPhoneID,
				DisplayPhoneNumber: waDisplay, BusinessAccountID: wabaID, Active: true}}},
	} {
		if err := in.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return acme, newKey(t, in, acme, apikey.Live)
}

func TestLiveWhatsAppThroughMeta(t *testing.T) {
	peer := metatest.NewServer(t, metatest.Options{})
	in := start(t, publicAtListener, deliveringTo(nil), func(c *app.Config) { c.WhatsAppStatusEvery = 100 * time.Millisecond })
	acme, key := metaProject(t, in, peer, metatest.Token)
	if c := providerReady(t, in, acme, "meta"); c.Status != metav1.ConditionTrue {
		t.Fatalf("Provider Ready = %+v", c)
	}

	// Sender.whatsapp shows what the Graph API reports of the number and its payment.
	paymentStatus := func() map[string]any {
		wa, _ := in.get("/v1/senders/wa", key).body["whatsapp"].(map[string]any)
		p, _ := wa["paymentStatus"].(map[string]any)
		return p
	}
	waitFor(t, func() bool { // an account without a payment method
		p := paymentStatus()
		return p != nil && p["canSendTemplates"] == false && p["methodStatus"] == "missing" && p["setupStatus"] == "complete"
	})
	peer.SetFunding(wabaID, "2233445566")
	waitFor(t, func() bool { // once a payment method is set
		p := paymentStatus()
		return p != nil && p["canSendTemplates"] == true && p["methodStatus"] == "active"
	})
	hook := in.url + "/callbacks/meta/" + acme + "/meta"
	ctx := context.Background()

	// Meta's subscription handshake, with the Secret's verify token.
	resp, err := http.Get(hook + "?hub.mode=subscribe&hub.verify_token=let-me-in&hub.challenge=1158201444")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "1158201444" {
		t.Fatalf("handshake = %d %q", resp.StatusCode, body)
	}
	if resp, _ := http.Get(hook + "?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1"); resp.StatusCode != 403 {
		t.Fatalf("handshake with a wrong token = %d", resp.StatusCode)
	}

	// The contact writes first (opening the window): a signed webhook.
	in1 := metatest.HookTextMessage(waPhoneID, waDisplay, "15551230001", "wamid.in1", "Hello!")
	if code, err := metatest.WebhookPost(ctx, hook, []byte(metatest.AppSecret), in1); err != nil || code != 200 {
		t.Fatalf("inbound webhook = %d %v", code, err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound' AND body = 'Hello!' AND originator = '+15551230001'`, acme) == 1
	})
	// An image from another contact, who came from an ad: the file is kept, so mediaUrl works
	// after Meta's link expires, and the referral is stored with the first message.
	photo := []byte("\xff\xd8\xff\xe0 a jpeg")
	peer.AddMedia("1013859600285441", "image/jpeg", photo)
	post0 := func(p metatest.Payload) {
		t.Helper()
		if code, err := metatest.WebhookPost(ctx, hook, []byte(metatest.AppSecret), p); err != nil || code != 200 {
			t.Fatalf("webhook = %d %v", code, err)
		}
	}
	post0(metatest.HookMediaMessage(waPhoneID, waDisplay, "15551230009", "wamid.img1", "image", "1013859600285441", "image/jpeg", "My shoes",
		metatest.HookReferral(transport.Referral{SourceType: "ad", SourceID: "ad-42", SourceURL: "https://fb.me/ad42", Headline: "Spring sale", CtwaClid: "clid-1"})))
	var imageID string
	waitFor(t, func() bool {
		return in.poolRow(`SELECT id FROM messages WHERE project = $1 AND provider_message_id = 'wamid.img1'`, acme).Scan(&imageID) == nil
	})
	img := in.get("/v1/messages/"+imageID, key).body["message"].(map[string]any)
	content := img["content"].(map[string]any)
	if img["messageType"] != "image" || img["text"] != "My shoes" || content["mediaUrl"] != in.url+"/v1/messages/"+imageID+"/media" ||
		content["referral"].(map[string]any)["ctwaClid"] != "clid-1" {
		t.Fatalf("image message = %v", img)
	}
	mreq, _ := http.NewRequest("GET", content["mediaUrl"].(string), nil)
	mreq.Header.Set("Authorization", key)
	if r := in.doRequest(mreq); r.status != 200 || string(r.raw) != string(photo) || r.header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("media = %d %q %s", r.status, r.raw, r.header.Get("Content-Type"))
	}

	// Answering it: the Cloud API marks it read and shows the typing indicator.
	var inboundID string
	if err := in.poolRow(`SELECT id FROM messages WHERE project = $1 AND provider_message_id = 'wamid.in1'`, acme).Scan(&inboundID); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", in.url+"/v1/messages/"+inboundID+"/typing", nil)
	req.Header.Set("Authorization", key)
	if r := in.doRequest(req); r.status != 200 || r.body["success"] != true {
		t.Fatalf("typing = %d %v", r.status, r.body)
	}
	if reads := peer.Reads(); len(reads) != 1 || reads[0].MessageID != "wamid.in1" || !reads[0].Typing {
		t.Fatalf("reads = %+v", reads)
	}

	// The business profile is WhatsApp's: read and written through the Graph API.
	r := in.do("PATCH", "/v1/senders/wa/profile", key, strings.NewReader(`{"about":"Shoes since 1999","websites":["https://acme.example"]}`))
	if r.status != 200 {
		t.Fatalf("profile update = %d %v", r.status, r.body)
	}
	if got := peer.Profile(waPhoneID); got["about"] != "Shoes since 1999" {
		t.Fatalf("the Graph API has the profile %v", got)
	}
	if r := in.get("/v1/senders/wa/profile", key); r.status != 200 || r.body["profile"].(map[string]any)["about"] != "Shoes since 1999" {
		t.Fatalf("profile = %d %v", r.status, r.body)
	}

	// The profile picture: fetched from the URL given, uploaded through the Resumable Upload API
	// and shown at Meta's URL of it. What is not a picture WhatsApp takes changes nothing.
	pictures := pictureServer(t)
	for _, c := range []struct{ body, path string }{
		{`{"imageUrl":"` + pictures.URL + `/logo.png","mimeType":"image/jpeg"}`, "mimeType"},
		{`{"imageUrl":"` + pictures.URL + `/tiny.png","mimeType":"image/png"}`, "imageUrl"},
		{`{"imageUrl":"` + pictures.URL + `/missing.png","mimeType":"image/png"}`, "imageUrl"},
		{`{"imageUrl":"` + pictures.URL + `/text.png","mimeType":"image/png"}`, "imageUrl"},
		{`{"imageUrl":"ftp://example.com/a.png","mimeType":"image/gif"}`, "imageUrl mimeType"},
	} {
		r := in.do("POST", "/v1/senders/wa/profile/picture", key, strings.NewReader(c.body))
		if got := strings.Join(fieldPaths(r), " "); r.status != 400 || got != c.path {
			t.Fatalf("picture %s = %d %v, want 400 on %s", c.body, r.status, r.body, c.path)
		}
	}
	if _, ok := peer.Profile(waPhoneID)["profile_picture_url"]; ok {
		t.Fatal("a refused picture reached the Graph API")
	}
	r = in.do("POST", "/v1/senders/wa/profile/picture", key, strings.NewReader(`{"imageUrl":"`+pictures.URL+`/logo.png","mimeType":"image/png"}`))
	pic, _ := r.body["profile"].(map[string]any)["profilePictureUrl"].(string)
	if r.status != 200 || r.body["success"] != true || pic == "" {
		t.Fatalf("picture = %d %v", r.status, r.body)
	}
	if data, mimeType, ok := peer.Picture(pic); !ok || mimeType != "image/png" || !bytes.Equal(data, testPNG(t, 200)) {
		t.Fatalf("the Graph API shows %d bytes (%s, %v) at %s", len(data), mimeType, ok, pic)
	}

	// A forged one changes nothing; one for a number no sender has is ignored.
	if code, _ := metatest.WebhookPost(ctx, hook, []byte("not-the-secret"), metatest.HookTextMessage(waPhoneID, waDisplay, "15551230001", "wamid.in2", "forged")); code != 403 {
		t.Fatalf("forged webhook = %d", code)
	}
	if code, _ := metatest.WebhookPost(ctx, hook, []byte(metatest.AppSecret), metatest.HookTextMessage("999", "+1 999", "15551230001", "wamid.in3", "elsewhere")); code != 200 {
		t.Fatalf("webhook for an unknown number = %d", code)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound'`, acme); n != 2 {
		t.Fatalf("%d inbound messages, want 2", n)
	}

	// A live text inside the window goes to the Cloud API; Meta's statuses move it on.
	r = in.post("/v1/messages", key, `{"to":"+15551230001","channel":"whatsapp","text":"Hi! See https://acme.example"}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	id := r.body["message"].(map[string]any)["id"].(string)
	m := waitStatus(t, in, key, id, "sent")
	got, err := peer.Wait(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].PhoneNumberID != waPhoneID || got[0].To != "15551230001" || got[0].Type != "text" || got[0].ID != m["providerMessageId"] ||
		got[0].Body["text"].(map[string]any)["preview_url"] != true {
		t.Fatalf("the Cloud API got %+v; message %v", got[0], m)
	}
	for _, status := range []string{"delivered", "read"} {
		if code, err := metatest.WebhookPost(ctx, hook, []byte(metatest.AppSecret),
			metatest.HookStatus(waPhoneID, waDisplay, got[0].ID, "15551230001", status, 0)); err != nil || code != 200 {
			t.Fatalf("%s status = %d %v", status, code, err)
		}
		waitStatus(t, in, key, id, status)
	}

	// An interactive list.
	r = in.post("/v1/messages", key, `{"to":"+15551230001","channel":"whatsapp","messageType":"list","text":"Pick a slot",`+
		`"content":{"listButton":"Slots","sections":[{"title":"Today","rows":[{"id":"t9","title":"9:00"},{"id":"t10","title":"10:00"}]}]}}`)
	if r.status != 200 {
		t.Fatalf("list = %d %v", r.status, r.body)
	}
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "sent")
	got, _ = peer.Wait(ctx, 2)
	if got[1].Type != "interactive" || got[1].Body["interactive"].(map[string]any)["type"] != "list" {
		t.Fatalf("list body = %v", got[1].Body)
	}

	// Meta refusing for good: the message fails with the mapped code and Meta's own.
	peer.FailNextMessage(1, 400, 131026, 0, "Message Undeliverable")
	r = in.post("/v1/messages", key, `{"to":"+15551230001","channel":"whatsapp","text":"x","fallbackEnabled":false}`)
	m = waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "WHATSAPP_UNDELIVERABLE" || m["errorDetails"].(map[string]any)["providerCode"] != "131026" {
		t.Fatalf("refused message = %v", m)
	}
	if strings.Contains(in.get("/v1/messages/"+id, key).body["message"].(map[string]any)["status"].(string), "failed") {
		t.Fatal("the delivered message changed")
	}

	// A template: submitted to the business account, approved and recategorised by Meta's
	// webhooks (one event each), then sent outside the window to a new contact.
	if r := in.post("/v1/templates", key, `{"name":"welcome","language":"en","body":"Welcome {{1}}!","variables":["Ada"]}`); r.status != 201 {
		t.Fatalf("create template = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/templates/welcome.en/submit", key, `{"senderId":"wa"}`); r.status != 200 || r.body["status"] != "pending" {
		t.Fatalf("submit = %d %v", r.status, r.body)
	}
	submitted := peer.Templates(wabaID)
	if len(submitted) != 1 || submitted[0].Name != "welcome" {
		t.Fatalf("the business account has %+v", submitted)
	}
	if r := in.post("/v1/messages", key, `{"to":"+15551230002","channel":"whatsapp","messageType":"template","content":{"templateId":"welcome.en","templateVariables":{"1":"Bo"}}}`); r.status != 400 {
		t.Fatalf("template send before approval = %d %v", r.status, r.body)
	}
	post := func(p metatest.Payload) {
		t.Helper()
		if code, err := metatest.WebhookPost(ctx, hook, []byte(metatest.AppSecret), p); err != nil || code != 200 {
			t.Fatalf("template webhook = %d %v", code, err)
		}
	}
	// Meta approves it, then says so.
	peer.SetTemplateStatus(wabaID, "welcome", "en", "APPROVED", "UTILITY")
	post(metatest.HookTemplateStatus(wabaID, submitted[0].ID, "welcome", "en", "APPROVED", ""))
	waitFor(t, func() bool { return in.get("/v1/templates/welcome.en", key).body["status"] == "approved" })
	post(metatest.HookTemplateCategory(wabaID, submitted[0].ID, "welcome", "en", "UTILITY", "MARKETING"))
	waitFor(t, func() bool { return in.get("/v1/templates/welcome.en", key).body["category"] == "MARKETING" })
	if n := in.count(`SELECT count(*) FROM webhook_deliveries WHERE project = $1 AND event = 'template.status_changed'`, acme); n != 0 {
		t.Fatalf("%d template events without a subscriber", n)
	}
	peer.Window("15551230002", false)
	r = in.post("/v1/messages", key, `{"to":"+15551230002","channel":"whatsapp","messageType":"template","content":{"templateId":"welcome.en","templateVariables":{"1":"Bo"}}}`)
	if r.status != 200 {
		t.Fatalf("template send = %d %v", r.status, r.body)
	}
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "sent")
	got, _ = peer.Wait(ctx, 3)
	last := got[len(got)-1]
	tmpl, _ := last.Body["template"].(map[string]any)
	if last.Type != "template" || tmpl["name"] != "welcome" || tmpl["language"].(map[string]any)["code"] != "en" {
		t.Fatalf("template body = %v", last.Body)
	}

	// A template made in WhatsApp Manager, and Meta's category of "welcome" changed back: a
	// sync imports the one and updates the other.
	graph := meta.New(meta.Config{BaseURL: peer.URL, AccessToken: metatest.Token})
	if _, _, _, err := graph.CreateTemplate(ctx, "", wabaID, meta.TemplateDef{Name: "shipping_notice", Language: "en",
		Category: "UTILITY", Body: "Your parcel {{1}} is on its way", BodyExamples: []string{"#7"}}); err != nil {
		t.Fatal(err)
	}
	peer.SetTemplateStatus(wabaID, "shipping_notice", "en", "APPROVED", "UTILITY")
	r = in.post("/v1/templates/sync", key, `{}`)
	if r.status != 200 || r.body["accountsSynced"] != 1.0 || r.body["imported"] != 1.0 || r.body["updated"] != 1.0 || len(r.body["errors"].([]any)) != 0 {
		t.Fatalf("sync = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		r := in.get("/v1/templates/shipping-notice.en", key)
		return r.status == 200 && r.body["status"] == "approved" && r.body["body"] == "Your parcel {{1}} is on its way"
	})
	if r := in.post("/v1/templates/sync", key, `{"senderId":"nobody"}`); r.status != 400 {
		t.Fatalf("sync of no sender = %d %v", r.status, r.body)
	}
}

func TestMetaProviderExpiredToken(t *testing.T) {
	peer := metatest.NewServer(t, metatest.Options{})
	in := start(t)
	acme, key := metaProject(t, in, peer, metatest.ExpiredToken)
	c := providerReady(t, in, acme, "meta")
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonCredentialsRejected || strings.Contains(c.Message, metatest.ExpiredToken) {
		t.Fatalf("Ready = %+v", c)
	}
	// A send (within the window the contact's message opened) fails with the documented code,
	// and nothing reached WhatsApp.
	hook := in.url + "/callbacks/meta/" + acme + "/meta"
	if code, err := metatest.WebhookPost(context.Background(), hook, []byte(metatest.AppSecret),
		metatest.HookTextMessage(waPhoneID, waDisplay, "15551230001", "wamid.hi", "Hi")); code != 200 {
		t.Fatalf("inbound webhook = %d %v", code, err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound'`, acme) == 1
	})
	r := in.post("/v1/messages", key, `{"to":"+15551230001","channel":"whatsapp","text":"Hello"}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	m := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "PROVIDER_NOT_READY" || strings.Contains(fmt.Sprint(m["errorMessage"]), metatest.ExpiredToken) {
		t.Fatalf("failed send = %v", m)
	}
	if len(peer.Messages()) != 0 {
		t.Fatalf("the peer accepted %+v", peer.Messages())
	}
	// The sender's status says the number could not be read, without the token.
	waitFor(t, func() bool {
		var snd v1alpha1.Sender
		_ = in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "wa"}, &snd)
		return snd.Status.WhatsApp != nil && snd.Status.WhatsApp.Error != "" && !strings.Contains(snd.Status.WhatsApp.Error, metatest.ExpiredToken)
	})
}

// sendAs sends body (POST /v1/messages) from sender, named in the Service-Sender header.
func sendAs(in *instance, key, sender, body string) response {
	in.t.Helper()
	req, _ := http.NewRequest("POST", in.url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Service-Sender", sender)
	return in.doRequest(req)
}

func TestLiveMessengerAndInstagramThroughMeta(t *testing.T) {
	const (
		pageID = "300000000000001"
		igID   = "17841400000000001"
		psid   = "6100000000000001"
		igsid  = "6200000000000002"
	)
	peer := metatest.NewServer(t, metatest.Options{})
	peer.AddPage(pageID, "Acme")
	peer.AddPage(igID, "acme.shop")
	in := start(t, publicAtListener)
	acme, key := metaProject(t, in, peer, metatest.Token)
	ctx := context.Background()
	if err := in.k8s.Create(ctx, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "social"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Acme social",
		Messenger:   &v1alpha1.ConnectedAccount{AccountID: pageID, DisplayName: "Acme", Active: true},
		Instagram:   &v1alpha1.ConnectedAccount{AccountID: igID, DisplayName: "acme.shop", Active: true}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return in.get("/v1/senders/social", key).status == 200 })
	hook := in.url + "/callbacks/meta/" + acme + "/meta"
	post := func(p metatest.Payload) {
		t.Helper()
		if code, err := metatest.WebhookPost(ctx, hook, []byte(metatest.AppSecret), p); err != nil || code != 200 {
			t.Fatalf("webhook = %d %v", code, err)
		}
	}

	for _, c := range []struct {
		channel, account, user string
		inbound                metatest.Payload
	}{
		{"messenger", pageID, psid, metatest.HookMessengerText(pageID, psid, "m_in1", "Do you ship to Spain?")},
		{"instagram", igID, igsid, metatest.HookInstagramText(igID, igsid, "ig_in1", "Love the new shoes")},
	} {
		// The person writes; the reply goes through the Send API from the same account.
		post(c.inbound)
		waitFor(t, func() bool {
			return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound' AND channel = $2 AND originator = $3 AND sender = 'social'`,
				acme, c.channel, c.user) == 1
		})
		r := sendAs(in, key, "social", `{"to":"`+c.user+`","channel":"`+c.channel+`","text":"Yes, we do!"}`)
		if r.status != 200 {
			t.Fatalf("%s reply = %d %v", c.channel, r.status, r.body)
		}
		m := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "sent")
		var sent *metatest.Message
		for _, msg := range peer.Messages() {
			if msg.PageID == c.account && msg.To == c.user {
				sent = &msg
			}
		}
		if sent == nil || sent.ID != m["providerMessageId"] || sent.Body["messaging_type"] != "RESPONSE" {
			t.Fatalf("%s: the Send API got %+v; message %v", c.channel, sent, m)
		}
		// A type the channel does not carry is refused at accept, naming the channel.
		r = sendAs(in, key, "social", `{"to":"`+c.user+`","channel":"`+c.channel+`","messageType":"location","content":{"latitude":1,"longitude":2}}`)
		if r.status != 400 || !strings.Contains(fmt.Sprint(fieldErrors(r)), c.channel) {
			t.Fatalf("%s location = %d %v", c.channel, r.status, r.body)
		}
	}

	// Messenger's delivery receipt names the message.
	mids := []string{}
	for _, msg := range peer.Messages() {
		if msg.PageID == pageID {
			mids = append(mids, msg.ID)
		}
	}
	post(metatest.HookMessengerDelivery(pageID, psid, time.Now().UnixMilli(), mids...))
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND channel = 'messenger' AND direction = 'outbound' AND status = 'delivered'`, acme) == 1
	})

	// Messenger's read receipt is a watermark: every message sent the person up to it was seen,
	// and one sent after it was not. read is WhatsApp's state: here it means delivered.
	r := sendAs(in, key, "social", `{"to":"`+psid+`","channel":"messenger","text":"Before the watermark"}`)
	earlier := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "sent")
	time.Sleep(10 * time.Millisecond)
	watermark := time.Now()
	r = sendAs(in, key, "social", `{"to":"`+psid+`","channel":"messenger","text":"After the watermark"}`)
	later := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "sent")
	post(metatest.HookMessengerRead(pageID, psid, watermark.UnixMilli()))
	waitStatus(t, in, key, earlier["id"].(string), "delivered")
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND status = 'read'`, acme); n != 0 {
		t.Fatalf("%d Messenger messages read", n)
	}
	if m := in.get("/v2/messages/"+later["id"].(string), key).body["message"].(map[string]any); m["status"] != "sent" {
		t.Fatalf("a message after the watermark = %v", m)
	}

	// A photo the person sends is kept: its mediaUrl is ours, and serves the file after the
	// CDN's link is gone.
	photo := testPNG(t, 8)
	post(metatest.HookMessengerAttachment(pageID, psid, "m_in2", "image", peer.AttachmentURL("image/png", photo)))
	var id string
	waitFor(t, func() bool {
		return in.db.QueryRow(ctx, `SELECT id FROM messages WHERE project = $1 AND provider_message_id = 'm_in2'`, acme).Scan(&id) == nil
	})
	m := in.get("/v2/messages/"+id, key).body["message"].(map[string]any)
	content, _ := m["content"].(map[string]any)
	if m["messageType"] != "image" || content["mediaUrl"] != in.url+"/v1/messages/"+id+"/media" {
		t.Fatalf("inbound photo = %v", m)
	}
	req, _ := http.NewRequest("GET", in.url+"/v1/messages/"+id+"/media", nil)
	req.Header.Set("Authorization", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !bytes.Equal(b, photo) || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("media = %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
	}
}

// testPNG is a side×side PNG image.
func testPNG(t *testing.T, side int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pictureServer serves /logo.png (200×200), /tiny.png (16×16) and /text.png (not an image).
func pictureServer(t *testing.T) *httptest.Server {
	files := map[string][]byte{"/logo.png": testPNG(t, 200), "/tiny.png": testPNG(t, 16), "/text.png": []byte("hello")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTemplatesFollowTheirAccount: between webhooks the manager's periodic sync applies Meta's
// verdicts to the project's templates (and imports none); deleting a Template deletes it at the
// business account, unless annotated to keep it there.
func TestTemplatesFollowTheirAccount(t *testing.T) {
	peer := metatest.NewServer(t, metatest.Options{})
	in := start(t, func(c *app.Config) { c.TemplateSyncEvery = 200 * time.Millisecond })
	acme, key := metaProject(t, in, peer, metatest.Token)
	if c := providerReady(t, in, acme, "meta"); c.Status != metav1.ConditionTrue {
		t.Fatalf("Provider Ready = %+v", c)
	}
	ctx := context.Background()
	for _, name := range []string{"promo", "keepme"} {
		if r := in.post("/v1/templates", key, `{"name":"`+name+`","language":"en","body":"Hi {{1}}","variables":["Ada"]}`); r.status != 201 {
			t.Fatalf("create %s = %d %v", name, r.status, r.body)
		}
		if r := in.post("/v1/templates/"+name+".en/submit", key, `{"senderId":"wa"}`); r.status != 200 {
			t.Fatalf("submit %s = %d %v", name, r.status, r.body)
		}
	}
	atMeta := func(name string) bool {
		for _, tm := range peer.Templates(wabaID) {
			if tm.Name == name {
				return true
			}
		}
		return false
	}
	if !atMeta("promo") || !atMeta("keepme") {
		t.Fatalf("the account has %+v", peer.Templates(wabaID))
	}

	// Meta's verdict, with no webhook: the periodic sync brings it.
	peer.SetTemplateStatus(wabaID, "promo", "en", "REJECTED", "MARKETING")
	waitFor(t, func() bool {
		r := in.get("/v1/templates/promo.en", key)
		return r.body["status"] == "rejected" && r.body["category"] == "MARKETING"
	})
	// A template made in WhatsApp Manager is not imported by it.
	peer.SetTemplateStatus(wabaID, "elsewhere", "en", "APPROVED", "UTILITY")
	time.Sleep(time.Second) // five periods
	if r := in.get("/v1/templates/elsewhere.en", key); r.status != 404 {
		t.Fatalf("the periodic sync imported a template: %d %v", r.status, r.body)
	}

	// Deleting the resource deletes the template at the account, and only that one.
	waitFor(t, func() bool {
		var tm v1alpha1.Template
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "promo.en"}, &tm) == nil && len(tm.Finalizers) == 1
	})
	if r := in.do("DELETE", "/v1/templates/promo.en", key, nil); r.status != 204 {
		t.Fatalf("delete = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		var tm v1alpha1.Template
		return !atMeta("promo") && in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "promo.en"}, &tm) != nil
	})
	if !atMeta("keepme") || !atMeta("elsewhere") {
		t.Fatalf("deleting promo deleted others: %+v", peer.Templates(wabaID))
	}

	// Annotated to stay, the template stays at the account when its resource goes.
	var keep v1alpha1.Template
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "keepme.en"}, &keep); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(keep.DeepCopy())
	keep.Annotations = map[string]string{"messaging.switchboard.io/keep-at-provider": "true"}
	if err := in.k8s.Patch(ctx, &keep, patch); err != nil {
		t.Fatal(err)
	}
	if err := in.k8s.Delete(ctx, &keep); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "keepme.en"}, &v1alpha1.Template{}) != nil
	})
	if !atMeta("keepme") {
		t.Fatal("the annotated template was deleted at the account")
	}
}
