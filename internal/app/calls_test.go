package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
)

// quickCalls paces the sandbox's caller and the calls' timers for tests: a "minute" of
// maxDurationMinutes is a second.
func quickCalls(c *app.Config) {
	c.Calls = app.CallOptions{Minute: time.Second, SweepEvery: 200 * time.Millisecond, Quiet: 2 * time.Second,
		SandboxRing: 50 * time.Millisecond, SandboxPause: 50 * time.Millisecond, TurnTimeout: 2 * time.Second}
}

// voiceProject makes a project whose default sender "main" has voice on +15005550006 and an
// agent "voice" with voice enabled answering on it, its webhook to rcv, and a key of env.
func voiceProject(t *testing.T, in *instance, rcv *hookReceiver, env apikey.Environment, voice v1alpha1.AgentVoice) (string, string) {
	t.Helper()
	return voiceProjectOf(t, in, rcv, env, voice, v1alpha1.ProjectSpec{})
}

// voiceProjectOf is voiceProject with the Project's spec.
func voiceProjectOf(t *testing.T, in *instance, rcv *hookReceiver, env apikey.Environment, voice v1alpha1.AgentVoice,
	spec v1alpha1.ProjectSpec) (string, string) {
	t.Helper()
	acme := newProject(t, in, spec)
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, PhoneNumber: "+15005550006", Transport: v1alpha1.TransportSandbox,
		SMS: &v1alpha1.Activation{Active: true}, Voice: &v1alpha1.Enablement{Enabled: true}}}
	if rcv != nil {
		snd.Spec.Webhook = &v1alpha1.SenderWebhook{URL: rcv.URL + "/hook"}
	}
	voice.Enabled = true
	in.createObjects(t, snd, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "voice"}, Spec: v1alpha1.AgentSpec{
		DisplayName: "Voice", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "sandbox", SystemPrompt: "Help callers.",
		Senders: []string{"main"}, Voice: &voice}})
	key := newKey(t, in, acme, env)
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		var s v1alpha1.Sender
		ctx := context.Background()
		return in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "voice"}, &a) == nil && len(a.Status.Senders) == 1 &&
			in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "main"}, &s) == nil && s.IsReady() &&
			(rcv == nil || s.Status.WebhookSecret != nil)
	})
	return acme, key
}

// callEnded waits for call id to end and returns it with its transcript.
func callEnded(t *testing.T, in *instance, key, id string) map[string]any {
	t.Helper()
	var c map[string]any
	waitFor(t, func() bool {
		c, _ = in.get("/v1/calls/"+id, key).body["call"].(map[string]any)
		s, _ := c["status"].(string)
		return s != "" && s != "queued" && s != "ringing" && s != "in_progress"
	})
	return c
}

// callEvent is call callID's event name as received; nil when it has not arrived. Deliveries
// are not ordered: each event is looked for by its name.
func (h *hookReceiver) callEvent(callID, name string) map[string]any {
	for _, ev := range h.callEvents(callID) {
		if ev["event"] == name {
			return ev
		}
	}
	return nil
}

func (h *hookReceiver) callEvents(callID string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, ev := range h.events {
		if data, _ := ev["data"].(map[string]any); data["callId"] == callID {
			out = append(out, ev)
		}
	}
	return out
}

// TestSandboxCall: a test key's call to a sandbox number that asks two questions runs from
// POST /v1/calls to call.completed: answered, the greeting and each question and answer in the
// transcript with the answer's latency, the events in order with cost and currency on the last,
// and the call in the list (without its transcript) and under its filters.
func TestSandboxCall(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, quickCalls, rcv.trusted())
	_, key := voiceProject(t, in, rcv, apikey.Test, v1alpha1.AgentVoice{Greeting: "Hi, this is Acme."})

	r := in.post("/v1/calls", key, `{"to":"+15005550102","metadata":{"order":"42"}}`)
	c, _ := r.body["call"].(map[string]any)
	if r.status != 201 || c["direction"] != "outbound" || c["from"] != "+15005550006" || c["to"] != "+15005550102" ||
		(c["status"] != "ringing" && c["status"] != "in_progress") {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	id := c["id"].(string)
	c = callEnded(t, in, key, id)
	if c["status"] != "completed" || c["endReason"] != "hangup" || c["answeredAt"] == nil || c["endedAt"] == nil ||
		c["durationSeconds"].(float64) < 1 || c["cost"] != 0.0 || c["metadata"].(map[string]any)["order"] != "42" {
		t.Fatalf("ended call %v", c)
	}
	transcript, _ := c["transcript"].([]any)
	var said []string
	for _, e := range transcript {
		turn := e.(map[string]any)
		said = append(said, fmt.Sprintf("%s: %s", turn["role"], turn["text"]))
		if turn["role"] == "assistant" && turn["seq"].(float64) > 0 && turn["latencyMs"] == nil {
			t.Errorf("an answer without its latency: %v", turn)
		}
	}
	want := []string{"assistant: Hi, this is Acme.", "user: Question 1: what can you tell me?",
		"assistant: [sandbox] You said: Question 1: what can you tell me?", "user: Thank you, that is all I needed.",
		"assistant: [sandbox] You said: Thank you, that is all I needed."}
	if strings.Join(said, "\n") != strings.Join(want, "\n") || c["turnCount"].(float64) != 5 {
		t.Fatalf("transcript:\n%s", strings.Join(said, "\n"))
	}
	waitFor(t, func() bool { return len(rcv.callEvents(id)) == 3 })
	for _, name := range []string{"call.initiated", "call.answered", "call.completed"} {
		ev := rcv.callEvent(id, name)
		if ev == nil {
			t.Fatalf("no %s among %v", name, rcv.callEvents(id))
		}
		if data := ev["data"].(map[string]any); data["direction"] != "outbound" || data["from"] != "+15005550006" || data["to"] != "+15005550102" {
			t.Errorf("%s = %v", name, ev)
		}
	}
	if last := rcv.callEvent(id, "call.completed")["data"].(map[string]any); last["status"] != "completed" || last["cost"] != 0.0 || last["currency"] != "USD" ||
		last["transcriptAvailable"] != true || last["endReason"] != "hangup" || last["durationSeconds"].(float64) < 1 {
		t.Errorf("call.completed = %v", last)
	}

	list := in.get("/v1/calls?direction=outbound&status=completed", key)
	items, _ := list.body["items"].([]any)
	if list.status != 200 || len(items) != 1 || items[0].(map[string]any)["id"] != id || items[0].(map[string]any)["transcript"] != nil {
		t.Fatalf("list = %d %v", list.status, list.body)
	}
	if l := in.get("/v1/calls?direction=inbound", key); len(l.body["items"].([]any)) != 0 {
		t.Errorf("inbound list = %v", l.body)
	}
	// The agent's executions list the call's turns.
	ex := in.get("/v1/agents/voice/executions", key)
	if n := len(ex.body["items"].([]any)); n != 2 {
		t.Errorf("executions = %d %v", n, ex.body)
	}
}

// TestSandboxCallOutcomes: the sandbox's numbers that are busy, do not answer, or fail end in
// call.failed with that status; one that hangs up during the answer ends completed with what
// was said so far in its transcript; an answering machine with voicemailAction leave_message
// gets the message.
func TestSandboxCallOutcomes(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, quickCalls, rcv.trusted())
	_, key := voiceProject(t, in, rcv, apikey.Test, v1alpha1.AgentVoice{VoicemailAction: "leave_message",
		VoicemailMessage: "Please call us back."})
	for to, want := range map[string][2]string{
		"+15005550020": {"busy", "busy"}, "+15005550021": {"no_answer", "no_answer"}, "+15005550022": {"failed", "failed"},
		"+15005550024": {"completed", "hangup"}, "+15005550023": {"completed", "voicemail"},
	} {
		r := in.post("/v1/calls", key, `{"to":"`+to+`"}`)
		if r.status != 201 {
			t.Fatalf("create %s = %d %v", to, r.status, r.body)
		}
		id := r.body["call"].(map[string]any)["id"].(string)
		c := callEnded(t, in, key, id)
		if c["status"] != want[0] || c["endReason"] != want[1] {
			t.Errorf("call to %s ended %v/%v, want %v", to, c["status"], c["endReason"], want)
		}
		final := "call.failed"
		if want[0] == "completed" {
			final = "call.completed"
		}
		waitFor(t, func() bool { return rcv.callEvent(id, final) != nil })
		if ev := rcv.callEvent(id, final); ev["data"].(map[string]any)["status"] != want[0] {
			t.Errorf("call to %s: %v", to, ev)
		}
		if to == "+15005550023" {
			tr := c["transcript"].([]any)
			if tr[len(tr)-1].(map[string]any)["text"] != "Please call us back." {
				t.Errorf("voicemail transcript %v", tr)
			}
		}
		if to == "+15005550024" {
			// The caller hung up on the answer's first words: the answer is kept as far as it
			// was sent (a part, or all of it when it was written before the line went dead).
			tr := c["transcript"].([]any)
			last := tr[len(tr)-1].(map[string]any)
			said, _ := last["text"].(string)
			if last["role"] != "assistant" || said == "" || !strings.HasPrefix("[sandbox] You said: Question 1: what can you tell me?", said) {
				t.Errorf("hung-up transcript %v", tr)
			}
		}
	}
}

// TestHangupAndCap: POST /hangup ends a call that would talk for 99 turns (api_hangup), and
// a second hangup is 409; a call capped at one "minute" ends at it with max_duration.
func TestHangupAndCap(t *testing.T) {
	in := start(t, fastSandbox, quickCalls)
	_, key := voiceProject(t, in, nil, apikey.Test, v1alpha1.AgentVoice{})
	r := in.post("/v1/calls", key, `{"to":"+15005550199"}`)
	id := r.body["call"].(map[string]any)["id"].(string)
	waitFor(t, func() bool {
		c := in.get("/v1/calls/"+id, key).body["call"].(map[string]any)
		return c["status"] == "in_progress" && c["turnCount"].(float64) >= 3
	})
	h := in.post("/v1/calls/"+id+"/hangup", key, ``)
	if c, _ := h.body["call"].(map[string]any); h.status != 200 || c["status"] != "completed" || c["endReason"] != "api_hangup" {
		t.Fatalf("hangup = %d %v", h.status, h.body)
	}
	if again := in.post("/v1/calls/"+id+"/hangup", key, ``); again.status != 409 || again.body["code"] != "call_not_active" {
		t.Errorf("second hangup = %d %v", again.status, again.body)
	}
	turns := in.get("/v1/calls/"+id, key).body["call"].(map[string]any)["turnCount"]

	capped := in.post("/v1/calls", key, `{"to":"+15005550199","maxDurationMinutes":1}`)
	cid := capped.body["call"].(map[string]any)["id"].(string)
	c := callEnded(t, in, key, cid)
	tr := c["transcript"].([]any)
	if c["status"] != "completed" || c["endReason"] != "max_duration" ||
		!strings.Contains(tr[len(tr)-1].(map[string]any)["text"].(string), "time limit") {
		t.Errorf("capped call %v", c)
	}
	// The hung-up call's transcript did not grow after the hangup.
	time.Sleep(200 * time.Millisecond)
	if now := in.get("/v1/calls/"+id, key).body["call"].(map[string]any)["turnCount"]; now != turns {
		t.Errorf("turns after hangup %v, then %v", turns, now)
	}
}

// TestCallBadInput: every refusal has the spec's status and error shape and places no call.
func TestCallBadInput(t *testing.T) {
	in := start(t, fastSandbox, quickCalls)
	acme, key := voiceProject(t, in, nil, apikey.Test, v1alpha1.AgentVoice{})
	in.createObjects(t, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "quiet"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "No voice", PhoneNumber: "+15005550007", SMS: &v1alpha1.Activation{Active: true}}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "noagent"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "No agent", PhoneNumber: "+15005550008", Voice: &v1alpha1.Enablement{Enabled: true}}})
	waitFor(t, func() bool { return in.get("/v1/senders/noagent", key).status == 200 })
	for body, want := range map[string]struct {
		status int
		code   string
	}{
		`{"to":"4155551234"}`: {400, "invalid_request"},
		`{}`:                  {400, "invalid_request"},
		`{"to":"+15005550102","senderId":"quiet"}`:                             {400, "invalid_request"},
		`{"to":"+15005550102","senderId":"noagent"}`:                           {400, "invalid_request"},
		`{"to":"+15005550102","senderId":"nobody"}`:                            {404, "not_found"},
		`{"to":"+15005550102","maxDurationMinutes":0}`:                         {400, "invalid_request"},
		`{"to":"+15005550102","maxDurationMinutes":1.5}`:                       {400, "invalid_request"},
		`{"to":"+15005550102","language":"not a tag"}`:                         {400, "invalid_request"},
		`{"to":"+15005550102","metadata":{"a":1}}`:                             {400, "invalid_request"},
		`{"to":"+15005550102","greeting":"` + strings.Repeat("g", 1001) + `"}`: {400, "invalid_request"},
		`not json`: {400, "invalid_json"},
	} {
		r := in.post("/v1/calls", key, body)
		if r.status != want.status || r.body["code"] != want.code {
			t.Errorf("POST %.60s = %d %v, want %d %s", body, r.status, r.body, want.status, want.code)
		}
	}
	if n := in.count(`SELECT count(*) FROM calls WHERE project = $1`, acme); n != 0 {
		t.Errorf("%d calls recorded", n)
	}
	for path, want := range map[string]int{"/v1/calls/call_nope": 404, "/v1/calls?status=talking": 400, "/v1/calls?direction=up": 400,
		"/v1/calls?cursor=forged": 400} {
		if r := in.get(path, key); r.status != want {
			t.Errorf("GET %s = %d %v", path, r.status, r.body)
		}
	}
	if r := in.post("/v1/calls/call_nope/hangup", key, ``); r.status != 404 {
		t.Errorf("hangup unknown = %d", r.status)
	}
	// Another project's key sees none of this project's calls.
	r := in.post("/v1/calls", key, `{"to":"+15005550020"}`)
	id := r.body["call"].(map[string]any)["id"].(string)
	_, other := voiceProject(t, in, nil, apikey.Test, v1alpha1.AgentVoice{})
	if g := in.get("/v1/calls/"+id, other); g.status != 404 {
		t.Errorf("another project's call = %d", g.status)
	}
	if h := in.post("/v1/calls/"+id+"/hangup", other, ``); h.status != 404 {
		t.Errorf("another project's hangup = %d", h.status)
	}
}

// TestCallLimitsAndMoney: a live call (through a sandboxed sender, so no provider is needed)
// needs its first minute in the balance (402, nothing recorded), is refused by risk review
// (created failed, risk_rejected, not counted), costs its started minutes at the PriceList's
// voice price once it ends, and counts toward the daily voice ceiling (429 past it).
func TestCallLimitsAndMoney(t *testing.T) {
	in := start(t, fastSandbox, quickCalls)
	two := int64(2)
	acme, key := voiceProjectOf(t, in, nil, apikey.Live, v1alpha1.AgentVoice{}, v1alpha1.ProjectSpec{DailyLimits: &v1alpha1.DailyLimits{Voice: &two}})
	in.createObjects(t, &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"}, Spec: v1alpha1.PriceListSpec{
		FreeCredit: "0", Prices: []v1alpha1.Price{{Channel: "voice", Prefix: "+", Price: "0.05"}}}},
		&v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
			Rules: []v1alpha1.RiskRule{{Name: "casino", Expression: `message.words.exists(w, w == "casino")`, Outcome: "refuse", Reason: "gambling"}}}})
	calls := func() int { return in.count(`SELECT count(*) FROM calls WHERE project = $1`, acme) }
	waitFor(t, func() bool { return in.post("/v1/calls", key, `{"to":"+15005550100"}`).status == 402 })
	if r := in.post("/v1/calls", key, `{"to":"+15005550100"}`); r.status != 402 || r.body["code"] != "insufficient_balance" || calls() != 0 {
		t.Fatalf("a call the balance cannot pay = %d %v (%d calls)", r.status, r.body, calls())
	}

	credit(t, in, acme, "1.00")
	r := in.post("/v1/calls", key, `{"to":"+15005550100","greeting":"Win big at the casino tonight"}`)
	if c, _ := r.body["call"].(map[string]any); r.status != 201 || c["status"] != "failed" || c["endReason"] != "risk_rejected" || c["cost"] != 0.0 {
		t.Fatalf("a call risk review refuses = %d %v", r.status, r.body)
	}

	before := balanceOf(t, in, key)
	r = in.post("/v1/calls", key, `{"to":"+15005550100"}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	c := callEnded(t, in, key, r.body["call"].(map[string]any)["id"].(string))
	minutes := (c["durationSeconds"].(float64) + 59) / 60
	if c["status"] != "completed" || c["cost"] != float64(int(minutes))*0.05 {
		t.Fatalf("ended call %v", c)
	}
	if b := balanceOf(t, in, key); b < before-c["cost"].(float64)-0.000001 || b > before-c["cost"].(float64)+0.000001 {
		t.Errorf("balance %v after a call of %v, %v before", b, c["cost"], before)
	}

	if r := in.post("/v1/calls", key, `{"to":"+15005550100"}`); r.status != 201 {
		t.Fatalf("the second call of the day = %d %v", r.status, r.body)
	}
	n := calls()
	if r := in.post("/v1/calls", key, `{"to":"+15005550100"}`); r.status != 429 || r.body["code"] != "daily_limit_exceeded" || calls() != n {
		t.Errorf("a third call = %d %v", r.status, r.body)
	}
}
