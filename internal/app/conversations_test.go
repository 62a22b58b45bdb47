package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// receive has a contact send a message through the sandbox, and returns it.
func receive(t testing.TB, in *instance, key, body string) map[string]any {
	t.Helper()
	r := in.post("/v1/sandbox/inbound", key, body)
	if r.status != 200 {
		t.Fatalf("inbound %s = %d %v", body, r.status, r.body)
	}
	return r.body["message"].(map[string]any)
}

// openWindow has the contact write on whatsapp, so free-form whatsapp messages may answer.
func openWindow(t testing.TB, in *instance, key, from string) {
	t.Helper()
	receive(t, in, key, `{"from":"`+from+`","channel":"whatsapp","text":"hello"}`)
}

// event returns the first event named name whose data has field = value.
func (h *hookReceiver) event(name, field string, value any) map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		if data, _ := ev["data"].(map[string]any); ev["event"] == name && data[field] == value {
			return data
		}
	}
	return nil
}

func messageOf(in *instance, key, id string) map[string]any {
	m, _ := in.get("/v1/messages/"+id, key).body["message"].(map[string]any)
	return m
}

func TestInboundMessagesAndConversations(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	acme, key := sendingProject(t, in, rcv, apikey.Test)

	// Outside the window WhatsApp takes templates only; the refusal stores nothing.
	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hi","channel":"whatsapp"}`)
	if r.status != 400 || r.body["code"] != "whatsapp_window_closed" {
		t.Fatalf("free-form whatsapp outside the window = %d %v", r.status, r.body)
	}
	if n := in.count("SELECT count(*) FROM messages"); n != 0 {
		t.Fatalf("a refused send stored %d messages", n)
	}
	tplID := approvedTemplate(t, in, key)
	tpl := in.post("/v1/messages", key, `{"to":"+15005550100","messageType":"template","content":{"templateId":"`+tplID+`","templateVariables":{"1":"Ada"}}}`)
	if tpl.status != 200 {
		t.Fatalf("template outside the window = %d %v", tpl.status, tpl.body)
	}
	tplMsg := tpl.body["message"].(map[string]any)
	conv, _ := tplMsg["conversationId"].(string)
	if conv == "" {
		t.Fatalf("an accepted message has no conversationId: %v", tplMsg)
	}
	// The contact writes from an ad: the contact and the window open, the referral is kept.
	waitFor(t, func() bool { return messageOf(in, key, tplMsg["id"].(string))["status"] == "read" })
	got := receive(t, in, key, `{"from":"+15005550100","channel":"whatsapp","text":"Is it in stock?","profileName":"Ada",
		"referral":{"sourceType":"ad","sourceId":"ad-7","ctwaClid":"clid-1"},"replyToMessageId":"`+tplMsg["id"].(string)+`"}`)
	if got["direction"] != "inbound" || got["status"] != "received" || got["conversationId"] != conv || got["from"] != "+15005550100" {
		t.Fatalf("inbound message = %v", got)
	}
	content := got["content"].(map[string]any)
	if content["replyToMessageId"] != tplMsg["id"] || content["replyToMessageType"] != "template" || content["replyToProviderMessageId"] == nil {
		t.Errorf("reply context = %v", content)
	}
	inboundID := got["id"].(string)
	// The contact's first message announces the conversation to the inbox (the template did not).
	waitFor(t, func() bool { return rcv.event("conversation.new", "conversationId", conv) != nil })
	if ev := rcv.event("conversation.new", "conversationId", conv); ev["firstMessageId"] != inboundID || ev["phoneNumber"] != "+15005550100" ||
		ev["profileName"] != "Ada" || ev["contactId"] == nil || ev["firstMessageText"] != "Is it in stock?" {
		t.Errorf("conversation.new = %v", ev)
	}
	if n := in.count("SELECT count(*) FROM webhook_deliveries WHERE event = 'conversation.new' AND data->>'conversationId' = $1", conv); n != 1 {
		t.Errorf("%d conversation.new deliveries for one conversation (the template started it silently)", n)
	}
	waitFor(t, func() bool { return rcv.event("message.inbound", "messageId", inboundID) != nil })
	ev := rcv.event("message.inbound", "messageId", inboundID)
	if ev["conversationId"] != conv || ev["profileName"] != "Ada" || ev["providerTimestamp"] == nil ||
		ev["referral"].(map[string]any)["ctwaClid"] != "clid-1" || ev["senderId"] != "main" {
		t.Errorf("message.inbound data = %v", ev)
	}
	if n := in.count(`SELECT count(*) FROM contacts c JOIN contact_channels cc ON cc.contact_id = c.id
		WHERE c.profile_name = 'Ada' AND cc.channel = 'whatsapp' AND cc.identifier = '+15005550100' AND cc.last_inbound_at IS NOT NULL`); n != 1 {
		t.Errorf("the contact was not created from its first message (%d)", n)
	}

	// Now free-form whatsapp answers; it is delivered, and the contact channel counts it.
	r = in.post("/v1/messages", key, `{"to":"+15005550100","text":"Yes!","channel":"whatsapp"}`)
	if r.status != 200 || r.body["message"].(map[string]any)["conversationId"] != conv {
		t.Fatalf("free-form in the window = %d %v", r.status, r.body)
	}
	reply := r.body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return messageOf(in, key, reply)["status"] == "read" })
	if n := in.count(`SELECT count(*) FROM contact_channels WHERE identifier = '+15005550100' AND channel = 'whatsapp'
		AND success_count = 1 AND total_attempts = 1 AND failure_count = 0 AND last_success_at IS NOT NULL`); n != 1 {
		t.Errorf("contact channel metrics not kept by the lifecycle")
	}

	// A later message from another ad does not replace the thread's referral.
	receive(t, in, key, `{"from":"+15005550100","channel":"whatsapp","text":"Thanks","referral":{"sourceType":"ad","ctwaClid":"clid-2"}}`)
	c := in.get("/v1/conversations/"+conv, key)
	cv, _ := c.body["conversation"].(map[string]any)
	if c.status != 200 || cv["messageCount"] != float64(4) || cv["unreadCount"] != float64(2) || cv["profileName"] != "Ada" ||
		cv["senderId"] != "main" || cv["whatsappWindowExpiresAt"] == nil || cv["referral"].(map[string]any)["ctwaClid"] != "clid-1" {
		t.Fatalf("conversation = %d %v", c.status, c.body)
	}
	if exp, _ := time.Parse(time.RFC3339, cv["whatsappWindowExpiresAt"].(string)); time.Until(exp) < 23*time.Hour {
		t.Errorf("window ends %v, want 24 h after the contact's message", exp)
	}

	// Lists, filters and reading.
	if r := in.get("/v1/conversations", key); len(r.body["items"].([]any)) != 1 {
		t.Errorf("conversations = %v", r.body)
	}
	if r := in.get("/v1/conversations?channel=sms", key); len(r.body["items"].([]any)) != 0 {
		t.Errorf("channel filter = %v", r.body)
	}
	if r := in.get("/v1/conversations?search=Ada", key); len(r.body["items"].([]any)) != 1 {
		t.Errorf("search = %v", r.body)
	}
	if r := in.get("/v2/conversations?from="+url.QueryEscape("+15005550006"), key); r.status != 200 || len(r.body["items"].([]any)) != 1 ||
		r.body["items"].([]any)[0].(map[string]any)["from"] != "+15005550006" {
		t.Errorf("v2 conversations from our number = %d %v", r.status, r.body)
	}
	msgs := in.get("/v1/conversations/"+conv+"/messages?limit=3", key)
	items := msgs.body["items"].([]any)
	if len(items) != 3 || items[0].(map[string]any)["text"] != "Thanks" || msgs.body["nextCursor"] == "" {
		t.Errorf("conversation messages = %v", msgs.body)
	}
	if r := in.post("/v1/conversations/"+conv+"/read", key, ""); r.status != 200 || r.body["conversation"].(map[string]any)["unreadCount"] != float64(0) {
		t.Errorf("read = %d %v", r.status, r.body)
	}

	// Typing: inbound whatsapp only; the indicator shows until a reply.
	if r := in.post("/v1/messages/"+reply+"/typing", key, ""); r.status != 400 {
		t.Errorf("typing on an outbound message = %d", r.status)
	}
	if r := in.post("/v1/messages/"+inboundID+"/typing", key, ""); r.status != 200 || r.body["success"] != true {
		t.Fatalf("typing = %d %v", r.status, r.body)
	}
	if m := messageOf(in, key, inboundID); m["status"] != "read" {
		t.Errorf("typing did not mark the message read: %v", m)
	}
	if cv := in.get("/v1/conversations/"+conv, key).body["conversation"].(map[string]any); cv["typingUntil"] == nil {
		t.Errorf("no typing indicator: %v", cv)
	}

	// A reaction is a reaction message to the same contact, and it ends the indicator.
	r = in.post("/v1/messages/"+inboundID+"/reactions", key, `{"emoji":"👍"}`)
	if m, _ := r.body["message"].(map[string]any); r.status != 200 || m["messageType"] != "reaction" || m["to"] != "+15005550100" ||
		m["content"].(map[string]any)["reactToMessageId"] != inboundID {
		t.Fatalf("reaction = %d %v", r.status, r.body)
	}
	if cv := in.get("/v1/conversations/"+conv, key).body["conversation"].(map[string]any); cv["typingUntil"] != nil {
		t.Errorf("a reply did not end the typing indicator: %v", cv)
	}
	if r := in.post("/v1/messages/"+inboundID+"/reactions", key, `{}`); r.status != 400 {
		t.Errorf("reaction without emoji = %d", r.status)
	}

	// An email to a catch-all address keeps its original recipient; the answer, to the address
	// in another case, is in the same thread, and the contact holds the address once.
	mail := receive(t, in, key, `{"from":"Ana@Example.com","channel":"email","text":"Hello","to":"sales@acme.example"}`)
	waitFor(t, func() bool { return rcv.event("message.inbound", "messageId", mail["id"]) != nil })
	if ev := rcv.event("message.inbound", "messageId", mail["id"]); ev["to"] != "sales@acme.example" || ev["providerTimestamp"] != nil {
		t.Errorf("inbound email data = %v", ev)
	}
	r = in.post("/v1/messages", key, `{"to":"ana@example.com","subject":"Re: Hello","text":"Hi Ana"}`)
	if r.status != 200 || r.body["message"].(map[string]any)["conversationId"] != mail["conversationId"] {
		t.Errorf("answer to the email = %d %v, want it in conversation %v", r.status, r.body, mail["conversationId"])
	}
	if n := in.count("SELECT count(*) FROM contact_channels WHERE channel = 'email' AND identifier = 'ana@example.com'"); n != 1 {
		t.Errorf("the email contact holds its address %d times", n)
	}

	// The sandbox takes simulated messages from test keys only, and refuses bad ones.
	before := in.count("SELECT count(*) FROM messages")
	live := newKey(t, in, acme, apikey.Live)
	if r := in.post("/v1/sandbox/inbound", live, `{"from":"+15005550100","text":"x"}`); r.status != 403 {
		t.Errorf("live key injects: %d", r.status)
	}
	for name, body := range map[string]string{
		"no from":        `{"text":"x"}`,
		"no text":        `{"from":"+15005550100"}`,
		"email on sms":   `{"from":"a@example.com","channel":"sms","text":"x"}`,
		"not a receiver": `{"from":"123456","channel":"telegram","text":"x"}`,
	} {
		if r := in.post("/v1/sandbox/inbound", key, body); r.status != 400 {
			t.Errorf("%s: %d %v", name, r.status, r.body)
		}
	}
	if after := in.count("SELECT count(*) FROM messages"); after != before {
		t.Errorf("refused inbound messages stored %d rows", after-before)
	}
	// Another mode's conversation is not found.
	if r := in.get("/v1/conversations/"+conv, live); r.status != 404 {
		t.Errorf("a live key reads a test conversation: %d", r.status)
	}
}

func TestV2RepliesStayInTheirThread(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test)
	got := receive(t, in, key, `{"from":"+15005550100","channel":"whatsapp","text":"Hi there"}`)
	conv := got["conversationId"].(string)

	r := in.post("/v2/messages", key, `{"conversationId":"`+conv+`","text":"Hello Ada"}`)
	m, _ := r.body["message"].(map[string]any)
	routing, _ := r.body["routing"].(map[string]any)
	if r.status != 202 || m["conversationId"] != conv || m["channel"] != "whatsapp" || m["to"] != "+15005550100" || routing["reason"] != "conversation" {
		t.Fatalf("reply in thread = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/messages", key, `{"conversationId":"`+conv+`","to":"+15005550199","text":"x"}`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("to another contact in the thread = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/messages", key, `{"conversationId":"`+conv+`","from":"someone@else.example","text":"x"}`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("from another address in the thread = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/messages", key, `{"conversationId":"conv_nope","text":"x"}`); r.status != 404 {
		t.Errorf("unknown conversation = %d %v", r.status, r.body)
	}
	if r := in.get("/v2/conversations/"+conv, key); r.status != 200 || r.body["conversation"].(map[string]any)["messageCount"] != float64(2) {
		t.Errorf("v2 conversation = %d %v", r.status, r.body)
	}
}

func TestWhatsAppFallsBackToSMS(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	const unreachable = "+15005550009" // the sandbox cannot reach it on whatsapp
	openWindow(t, in, key, unreachable)

	// v1: the message moves to SMS and is delivered there; v2 shows both channels.
	id := in.post("/v1/messages", key, `{"to":"`+unreachable+`","text":"Your code is 1234","channel":"whatsapp"}`).body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return messageOf(in, key, id)["status"] == "delivered" })
	if m := messageOf(in, key, id); m["channel"] != "sms" || m["from"] != "+15005550006" {
		t.Errorf("fallen-back message = %v", m)
	}
	if v2 := in.get("/v2/messages/"+id, key).body["message"].(map[string]any); !jsonEqual(v2["attemptedChannels"], []string{"whatsapp", "sms"}) {
		t.Errorf("attemptedChannels = %v", v2["attemptedChannels"])
	}

	// Without fallback it fails with the provider's error.
	id = in.post("/v1/messages", key, `{"to":"`+unreachable+`","text":"x","channel":"whatsapp","fallbackEnabled":false}`).body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return messageOf(in, key, id)["status"] == "failed" })
	v2 := in.get("/v2/messages/"+id, key).body["message"].(map[string]any)
	if v2["errorCode"] != "WHATSAPP_UNDELIVERABLE" || v2["errorDetails"].(map[string]any)["providerCode"] != "131026" {
		t.Errorf("failed without fallback = %v", v2)
	}

	// v2 checks first: a +1 number needs 10DLC for the SMS leg.
	unregister(t, in, key)
	r := in.post("/v2/messages", key, `{"from":"+15005550006","to":"`+unreachable+`","text":"x","channel":"whatsapp"}`)
	id = r.body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return messageOf(in, key, id)["status"] == "failed" })
	if m := messageOf(in, key, id); m["errorCode"] != "TEN_DLC_REQUIRED" || m["channel"] != "whatsapp" {
		t.Errorf("v2 fallback to +1 without 10DLC = %v", m)
	}

	// v2 with the SMS connection off: CHANNEL_INACTIVE.
	wa := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "wa-only"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "WA", PhoneNumber: "+15005550007",
		WhatsApp: &v1alpha1.ConnectedAccount{AccountID: "wa-2", DisplayPhoneNumber: "+15005550007", Active: true}}}
	if err := in.k8s.Create(context.Background(), wa); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return in.get("/v2/channels/"+url.PathEscape("+15005550007"), key).status == 200 })
	// The contact writes to that number, which opens its window there.
	rr, _ := http.NewRequest("POST", in.url+"/v1/sandbox/inbound", strings.NewReader(`{"from":"`+unreachable+`","channel":"whatsapp","text":"hi"}`))
	rr.Header.Set("Authorization", key)
	rr.Header.Set("Service-Sender", "wa-only")
	if resp := in.doRequest(rr); resp.status != 200 {
		t.Fatalf("inbound to wa-only = %d %v", resp.status, resp.body)
	}
	r = in.post("/v2/messages", key, `{"from":"+15005550007","to":"`+unreachable+`","text":"x"}`)
	if r.status != 202 {
		t.Fatalf("v2 send from wa-only = %d %v", r.status, r.body)
	}
	id = r.body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { return messageOf(in, key, id)["status"] == "failed" })
	if m := in.get("/v2/messages/"+id, key).body["message"].(map[string]any); m["errorCode"] != "CHANNEL_INACTIVE" ||
		m["errorDetails"].(map[string]any)["providerCode"] != "131026" {
		t.Errorf("v2 fallback with SMS off = %v", m)
	}
}

func TestConcurrentFirstMessagesMakeOneContactAndConversation(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	_, key := sendingProject(t, in, rcv, apikey.Test)
	var wg sync.WaitGroup
	codes := make(chan int, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", in.url+"/v1/sandbox/inbound", strings.NewReader(`{"from":"+15005550177","channel":"whatsapp","text":"hi"}`))
			req.Header.Set("Authorization", key)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				codes <- resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("concurrent inbound = %d", c)
		}
	}
	if n := in.count("SELECT count(*) FROM contact_channels WHERE identifier = '+15005550177'"); n != 1 {
		t.Errorf("%d contacts for one address", n)
	}
	if n := in.count("SELECT count(*) FROM contacts"); n != 1 {
		t.Errorf("%d contact rows (a losing racer's contact was left behind)", n)
	}
	if n := in.count("SELECT count(*) FROM conversations WHERE contact_identifier = '+15005550177' AND message_count = 10 AND unread_count = 10"); n != 1 {
		t.Errorf("the conversation did not count every message")
	}
	if n := in.count("SELECT count(*) FROM webhook_deliveries WHERE event = 'conversation.new'"); n != 1 {
		t.Errorf("%d conversation.new events for one conversation", n)
	}
	if n := in.count("SELECT count(*) FROM webhook_deliveries WHERE event = 'message.inbound'"); n != 10 {
		t.Errorf("%d message.inbound events for 10 messages", n)
	}
}
