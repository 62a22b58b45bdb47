package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// twilioVoiceProject is twilioProject with the installation's model (an OpenAI peer) and an
// agent "voice" with voice on answering on "main", calls priced 0.02 a minute to +1 and the
// model's tokens at 1000/2000 per million.
func twilioVoiceProject(t *testing.T, in *instance, peer *twiliotest.Server, rcv *hookReceiver, system string,
	voice v1alpha1.AgentVoice, handoff ...v1alpha1.Handoff) (string, string, *openaitest.Server) {
	t.Helper()
	acme, key := twilioProject(t, in, peer, rcv)
	model := openaitest.New(openaitest.Options{})
	t.Cleanup(model.Close)
	voice.Enabled = true
	agent := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "voice"}, Spec: v1alpha1.AgentSpec{
		DisplayName: "Voice", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "gpt-4o-mini",
		SystemPrompt: "Help callers.", Senders: []string{"main"}, Voice: &voice}}
	if len(handoff) > 0 {
		agent.Spec.Handoff = &handoff[0]
	}
	in.createObjects(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: system}},
		labelledSecret(system, "models", map[string]string{"apiKey": openaitest.DefaultAPIKey}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "models"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderOpenAI, BaseURL: model.URL(), Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "models"}}},
		&v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"}, Spec: v1alpha1.PriceListSpec{
			FreeCredit: "0", Prices: []v1alpha1.Price{{Channel: "voice", Prefix: "+1", Price: "0.02"}},
			ModelPrices: []v1alpha1.ModelPrice{{Model: "*", InputPerMillion: "1000", OutputPerMillion: "2000"}}}},
		agent)
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		_ = in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "voice"}, &a)
		return len(a.Status.Senders) == 1 && a.IsReady()
	})
	return acme, key, model
}

// balanceOf is the key's project's balance in USD (the API shows cents).
func balanceOf(t *testing.T, in *instance, key string) float64 {
	t.Helper()
	r := in.get("/v1/balance", key)
	b, _ := r.body["balance"].(float64)
	return b / 100
}

// TestCallThroughTwilio: a live call runs through the Twilio peer from POST /v1/calls to
// call.completed: created with the relay's TwiML and a time limit, the peer's caller speaks
// through ConversationRelay's WebSocket, each prompt answered by the model and streamed back,
// the transcript kept with latencies, and the call charged per started minute plus its tokens,
// the reservation given back.
func TestCallThroughTwilio(t *testing.T) {
	const system = "calls-system"
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, installationIn(system), quickCalls, rcv.trusted())
	acme, key, model := twilioVoiceProject(t, in, peer, rcv, system, v1alpha1.AgentVoice{Greeting: "Acme, how can I help?",
		Language: "en-US", TTSVoiceID: "en-US-Journey-O", TTSProvider: "Google"})
	credit(t, in, acme, "1.00")
	model.Reply(openaitest.Reply{Text: "We open at nine."}, openaitest.Reply{Text: "You're welcome, goodbye."})
	peer.Script("+14155550100", twiliotest.CallScript{Prompts: []string{"When do you open?", "Thanks."}, Pause: 50 * time.Millisecond})

	before := balanceOf(t, in, key)
	r := in.post("/v1/calls", key, `{"to":"+14155550100","maxDurationMinutes":5}`)
	c, _ := r.body["call"].(map[string]any)
	if r.status != 201 || c["status"] != "ringing" {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	id := c["id"].(string)
	calls := peer.Calls()
	placed := calls[len(calls)-1]
	if !strings.HasPrefix(placed.RelayURL, "ws://127.0.0.1") || !strings.Contains(placed.RelayURL, "call="+id) ||
		placed.TimeLimit != 5*1+30 || !strings.Contains(placed.Twiml, `welcomeGreeting="Acme, how can I help?"`) ||
		!strings.Contains(placed.Twiml, `voice="en-US-Journey-O"`) || placed.From != "+15005550006" {
		t.Fatalf("placed call %+v", placed)
	}
	relay, err := peer.WaitRelay(context.Background(), placed.SID)
	if err != nil {
		t.Fatal(err)
	}
	if len(relay.Turns) != 2 || relay.Turns[0].Answer != "We open at nine." || relay.Turns[1].Answer != "You're welcome, goodbye." {
		t.Fatalf("relay turns %+v", relay.Turns)
	}
	c = callEnded(t, in, key, id)
	if c["status"] != "completed" || c["endReason"] != "hangup" || c["durationSeconds"].(float64) < 1 {
		t.Fatalf("call %v", c)
	}
	tr := c["transcript"].([]any)
	if len(tr) != 5 || tr[2].(map[string]any)["text"] != "We open at nine." || tr[2].(map[string]any)["latencyMs"] == nil {
		t.Fatalf("transcript %v", tr)
	}
	model_ := in.count(`SELECT COALESCE(sum(cost_micros), 0) FROM agent_executions WHERE call_id = $1`, id)
	minutes := (int(c["durationSeconds"].(float64)) + 59) / 60
	want := float64(minutes*20000+model_) / 1e6
	if c["cost"] != want || model_ == 0 {
		t.Errorf("cost %v, want %v (model %d micros)", c["cost"], want, model_)
	}
	if b := balanceOf(t, in, key); b < before-want-0.000001 || b > before-want+0.000001 {
		t.Errorf("balance %v after a call of %v, %v before", b, want, before)
	}
	waitFor(t, func() bool { return len(rcv.callEvents(id)) == 3 })
	if last := rcv.callEvent(id, "call.completed"); last == nil || last["data"].(map[string]any)["cost"] != want {
		t.Errorf("last event %v", last)
	}
}

// TestInboundCallThroughTwilio: a call to the sender's number is answered by its voice agent
// through the relay; a call to a number nobody takes calls on is rejected.
func TestInboundCallThroughTwilio(t *testing.T) {
	const system = "calls-inbound"
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, installationIn(system), quickCalls, rcv.trusted())
	acme, key, model := twilioVoiceProject(t, in, peer, rcv, system, v1alpha1.AgentVoice{Greeting: "Acme here."})
	credit(t, in, acme, "1.00")
	model.Reply(openaitest.Reply{Text: "Your order ships today."})
	voiceURL := in.url + "/callbacks/twilio/" + acme + "/twilio/voice"

	sid, status, twiml, err := peer.PlaceInboundCall(context.Background(), voiceURL, "+14155550177", "+15005550006",
		twiliotest.CallScript{Prompts: []string{"Where is my order?"}, Pause: 50 * time.Millisecond})
	if err != nil || status != 200 || !strings.Contains(twiml, "<ConversationRelay") {
		t.Fatalf("inbound = %d %q %v", status, twiml, err)
	}
	relay, err := peer.WaitRelay(context.Background(), sid)
	if err != nil || len(relay.Turns) != 1 || relay.Turns[0].Answer != "Your order ships today." || relay.Greeting != "Acme here." {
		t.Fatalf("relay %+v %v", relay, err)
	}
	var id string
	var items []any
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		items, _ = in.get("/v1/calls?direction=inbound", key).body["items"].([]any)
		if len(items) == 1 && items[0].(map[string]any)["status"] == "completed" {
			id = items[0].(map[string]any)["id"].(string)
			break
		}
		if time.Now().After(deadline) {
			// What the calls were, and what the peer saw of the call, say where it stopped.
			t.Fatalf("the inbound call did not complete within 45 s: calls %v; the peer's %+v", items, peer.Calls())
		}
	}
	c := in.get("/v1/calls/"+id, key).body["call"].(map[string]any)
	if c["from"] != "+14155550177" || c["to"] != "+15005550006" || len(c["transcript"].([]any)) != 3 {
		t.Errorf("inbound call %v", c)
	}
	waitFor(t, func() bool { return len(rcv.callEvents(id)) == 3 })

	// A number no sender takes calls on.
	_, status, twiml, err = peer.PlaceInboundCall(context.Background(), voiceURL, "+14155550177", "+15005550099", twiliotest.CallScript{})
	if err != nil || status != 200 || !strings.Contains(twiml, "<Reject") {
		t.Errorf("inbound to an unknown number = %d %q %v", status, twiml, err)
	}

	// A number of the project's that only sends SMS cannot have voice.
	pn := &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "sms-only"},
		Spec: v1alpha1.PhoneNumberSpec{Number: "+14155550188", Project: acme, Capabilities: []v1alpha1.PhoneCapability{v1alpha1.CapabilitySMS}}}
	in.createObjects(t, pn)
	waitNumberReady(t, in, pn, metav1.ConditionTrue)
	// The API reads the PhoneNumber from its cache, which may be a moment behind: until it sees
	// the number held, the refusal is about the number (a refusal changes nothing, so ask again).
	var r response
	waitFor(t, func() bool {
		r = in.post("/v1/senders", key, `{"name":"SMS only","phoneNumber":"+14155550188","enableVoice":true}`)
		return !strings.Contains(fmt.Sprint(r.body), "being checked")
	})
	if r.status != 400 || !strings.Contains(fmt.Sprint(r.body), "enableVoice") {
		t.Errorf("voice on an SMS-only number = %d %v", r.status, r.body)
	}
}

// TestCallForgeries: a status callback, a <Connect> action and a relay handshake that Twilio
// did not sign change nothing; a model that does not answer in time gets the caller the
// apology and the call ends with endReason error.
func TestCallForgeries(t *testing.T) {
	const system = "calls-forged"
	peer := twiliotest.NewServer(t)
	in := start(t, publicAtListener, installationIn(system), quickCalls)
	acme, key, model := twilioVoiceProject(t, in, peer, newHookReceiver(t), system, v1alpha1.AgentVoice{})
	credit(t, in, acme, "1.00")

	// The model hangs on the first prompt: apology, then the end.
	model.Hang(1)
	peer.Script("+14155550101", twiliotest.CallScript{Prompts: []string{"Hello?"}, Pause: 50 * time.Millisecond,
		AnswerTimeout: 10 * time.Second})
	r := in.post("/v1/calls", key, `{"to":"+14155550101"}`)
	id := r.body["call"].(map[string]any)["id"].(string)
	c := callEnded(t, in, key, id)
	tr := c["transcript"].([]any)
	if c["status"] != "completed" || c["endReason"] != "error" || !strings.Contains(tr[len(tr)-1].(map[string]any)["text"].(string), "sorry") {
		t.Fatalf("call with a hung model %v", c)
	}

	// Forged callbacks: 403, nothing moves.
	base := in.url + "/callbacks/twilio/" + acme + "/twilio/"
	for _, path := range []string{"call-status?call=" + id, "relay-ended?call=" + id, "call-amd?call=" + id, "voice"} {
		form := url.Values{"CallSid": {"CA0123"}, "CallStatus": {"in-progress"}, "From": {"+1415"}, "To": {"+1500"}}
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Twilio-Signature", "Zm9yZ2Vk")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("forged %s = %d", path, resp.StatusCode)
		}
	}
	if after := in.get("/v1/calls/"+id, key).body["call"].(map[string]any); after["status"] != "completed" || after["endReason"] != "error" {
		t.Errorf("after forgeries %v", after)
	}

	// A handshake signed with another token is refused before the upgrade; the call is not
	// taken over by retries, and ends.
	peer.SetRelayAuthToken("0000000000000000000000000000000f")
	peer.Script("+14155550102", twiliotest.CallScript{Prompts: []string{"Hello?"}})
	r = in.post("/v1/calls", key, `{"to":"+14155550102"}`)
	id = r.body["call"].(map[string]any)["id"].(string)
	calls := peer.Calls()
	relay, err := peer.WaitRelay(context.Background(), calls[len(calls)-1].SID)
	if err != nil || relay.HandshakeStatus != http.StatusForbidden || relay.Sessions != 0 {
		t.Errorf("forged handshake: %+v %v", relay, err)
	}
	if c := callEnded(t, in, key, id); c["turnCount"].(float64) != 0 {
		t.Errorf("a call whose relay never opened %v", c)
	}
}

// TestCallTransferAndVoicemailThroughTwilio: the agent's handoff on a call ends the relay and
// Twilio dials its transferPhoneNumber (endReason transfer); a call an answering machine picks
// up gets the agent's voicemail message read out, then hangs up (endReason voicemail).
func TestCallTransferAndVoicemailThroughTwilio(t *testing.T) {
	const system = "calls-transfer"
	peer := twiliotest.NewServer(t)
	in := start(t, publicAtListener, installationIn(system), quickCalls)
	// Handoff is on from the agent's creation: a change made afterwards reaches the process's
	// cache a moment after the controller has seen it, which a call placed at once may miss.
	acme, key, model := twilioVoiceProject(t, in, peer, newHookReceiver(t), system, v1alpha1.AgentVoice{
		TransferPhoneNumber: "+14155550142", VoicemailAction: "leave_message", VoicemailMessage: "Please call Acme back."},
		v1alpha1.Handoff{Tool: true})
	credit(t, in, acme, "1.00")

	model.Reply(openaitest.Reply{Text: "Let me put you through.", ToolCalls: []openaitest.ToolCall{{Name: "handoff_to_human", Arguments: `{}`}}})
	peer.Script("+14155550103", twiliotest.CallScript{Prompts: []string{"I want a person."}, Pause: 50 * time.Millisecond})
	r := in.post("/v1/calls", key, `{"to":"+14155550103"}`)
	id := r.body["call"].(map[string]any)["id"].(string)
	calls := peer.Calls()
	relay, err := peer.WaitRelay(context.Background(), calls[len(calls)-1].SID)
	if err != nil || relay.TransferredTo != "+14155550142" || !strings.Contains(relay.HandoffData, "transfer") {
		t.Fatalf("transfer: %+v %v", relay, err)
	}
	if c := callEnded(t, in, key, id); c["status"] != "completed" || c["endReason"] != "transfer" {
		t.Errorf("transferred call %v", c)
	}

	peer.SetAnsweredBy("+14155550104", "machine_end_beep")
	peer.Script("+14155550104", twiliotest.CallScript{Pause: 2 * time.Second})
	r = in.post("/v1/calls", key, `{"to":"+14155550104"}`)
	id = r.body["call"].(map[string]any)["id"].(string)
	c := callEnded(t, in, key, id)
	calls = peer.Calls()
	placed := calls[len(calls)-1]
	if c["status"] != "completed" || c["endReason"] != "voicemail" || placed.MachineDetection == "" ||
		len(placed.Redirects) != 1 || !strings.Contains(placed.Redirects[0], "Please call Acme back.") {
		t.Errorf("voicemail: call %v, placed %+v", c, placed)
	}
}
