package twiliotest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

const caller = "+15017122661"

// relayApp is a tiny ConversationRelay application: it refuses handshakes whose signature is
// not Twilio's, answers each prompt "You said <prompt>." in three text tokens (the last with
// last), stops an answer the caller interrupts, and records what Twilio sent it.
type relayApp struct {
	t                               *testing.T
	wsURL, actionURL, statusURL     string
	voiceURL, amdURL                string
	tokenGap                        time.Duration
	dropAt, endAfter, handoff       string
	actionTwiML, voiceTwiML         func(url.Values) string
	connected                       chan struct{}
	mu                              sync.Mutex
	handshakes                      []int
	received                        []map[string]any
	closes                          []websocket.StatusCode
	actions, statuses, amds, voices []url.Values
	dropped                         bool
}

func newRelayApp(t *testing.T) *relayApp {
	t.Helper()
	a := &relayApp{t: t, connected: make(chan struct{}, 8),
		actionTwiML: func(url.Values) string { return twilio.HangupTwiML("", "") }}
	mux := http.NewServeMux()
	mux.HandleFunc("/relay", a.relay)
	mux.HandleFunc("/action", a.form(&a.actions, func(f url.Values) string { return a.actionTwiML(f) }))
	mux.HandleFunc("/status", a.form(&a.statuses, nil))
	mux.HandleFunc("/amd", a.form(&a.amds, nil))
	mux.HandleFunc("/voice", a.form(&a.voices, func(f url.Values) string { return a.voiceTwiML(f) }))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a.wsURL = "ws" + strings.TrimPrefix(srv.URL, "http") + "/relay?call=abc"
	a.actionURL, a.statusURL = srv.URL+"/action?call=abc", srv.URL+"/status"
	a.voiceURL, a.amdURL = srv.URL+"/voice", srv.URL+"/amd"
	return a
}

// form records a signed form post and answers it with TwiML (nil: 204).
func (a *relayApp) form(into *[]url.Values, answer func(url.Values) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if !twilio.VerifySignature(twiliotest.AuthToken, "http://"+r.Host+r.URL.RequestURI(), r.PostForm, r.Header.Get(twilio.SignatureHeader)) {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		a.mu.Lock()
		*into = append(*into, r.PostForm)
		a.mu.Unlock()
		if answer == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(answer(r.PostForm)))
	}
}

func (a *relayApp) relay(w http.ResponseWriter, r *http.Request) {
	if !twilio.VerifySignature(twiliotest.AuthToken, "ws://"+r.Host+r.URL.RequestURI(), nil, r.Header.Get(twilio.SignatureHeader)) {
		a.mu.Lock()
		a.handshakes = append(a.handshakes, http.StatusForbidden)
		a.mu.Unlock()
		http.Error(w, "bad signature", http.StatusForbidden)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	a.mu.Lock()
	a.handshakes = append(a.handshakes, http.StatusSwitchingProtocols)
	a.mu.Unlock()
	ctx := r.Context()
	in := make(chan map[string]any, 64)
	go func() {
		defer close(in)
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				a.mu.Lock()
				a.closes = append(a.closes, websocket.CloseStatus(err))
				a.mu.Unlock()
				return
			}
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			a.mu.Lock()
			a.received = append(a.received, m)
			a.mu.Unlock()
			in <- m
		}
	}()
	write := func(v any) {
		b, _ := json.Marshal(v)
		_ = conn.Write(ctx, websocket.MessageText, b)
	}
	var queue []map[string]any
	for {
		var m map[string]any
		if len(queue) > 0 {
			m, queue = queue[0], queue[1:]
		} else {
			var ok bool
			if m, ok = <-in; !ok {
				return
			}
		}
		switch m["type"] {
		case "setup":
			a.connected <- struct{}{}
		case "prompt":
			p, _ := m["voicePrompt"].(string)
			a.mu.Lock()
			drop := p == a.dropAt && !a.dropped
			a.dropped = a.dropped || drop
			a.mu.Unlock()
			if drop {
				_ = conn.CloseNow() // the application's server dies
				return
			}
			tokens := []string{"You said ", p, "."}
		answer:
			for i, tok := range tokens {
				if i > 0 && a.tokenGap > 0 {
					gap := time.NewTimer(a.tokenGap)
				wait:
					for {
						select {
						case <-gap.C:
							break wait
						case m, ok := <-in:
							if !ok {
								return
							}
							if m["type"] == "interrupt" {
								gap.Stop()
								break answer
							}
							queue = append(queue, m)
						}
					}
				}
				write(map[string]any{"type": "text", "token": tok, "last": i == len(tokens)-1})
			}
			if p == a.endAfter {
				write(map[string]any{"type": "end", "handoffData": a.handoff})
			}
		}
	}
}

func (a *relayApp) snapshot() (received []map[string]any, actions, statuses []url.Values, closes []websocket.StatusCode, handshakes []int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append(received, a.received...), append(actions, a.actions...), append(statuses, a.statuses...),
		append(closes, a.closes...), append(handshakes, a.handshakes...)
}

// waitConnected waits for the relay's setup.
func (a *relayApp) waitConnected(t *testing.T) {
	t.Helper()
	select {
	case <-a.connected:
	case <-time.After(5 * time.Second):
		t.Fatal("the relay never connected")
	}
}

func newPeer(t *testing.T) (*twiliotest.Server, *twilio.Transport) {
	t.Helper()
	peer := twiliotest.NewServer(t)
	peer.SetCallbackDelay(5 * time.Millisecond)
	return peer, twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken})
}

func place(t *testing.T, tr *twilio.Transport, a *relayApp, r twilio.CallRequest) string {
	t.Helper()
	if r.Twiml == "" {
		r.Twiml = twilio.ConversationRelayTwiML(twilio.RelayOptions{URL: a.wsURL, Action: a.actionURL,
			WelcomeGreeting: "Hello, this is Switchboard.", Parameters: map[string]string{"call": "abc"}})
	}
	if r.From == "" {
		r.From = caller
	}
	if r.StatusCallback == "" {
		r.StatusCallback = a.statusURL
	}
	sid, err := tr.PlaceCall(context.Background(), r)
	if err != nil {
		t.Fatalf("PlaceCall: %v", err)
	}
	return sid
}

func waitRelay(t *testing.T, peer *twiliotest.Server, sid string) twiliotest.Relay {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rel, err := peer.WaitRelay(ctx, sid)
	if err != nil {
		t.Fatalf("WaitRelay: %v", err)
	}
	return rel
}

func statusesOf(forms []url.Values) []string {
	var out []string
	for _, f := range forms {
		out = append(out, f.Get("CallStatus"))
	}
	return out
}

func answers(rel twiliotest.Relay) []string {
	var out []string
	for _, turn := range rel.Turns {
		out = append(out, turn.Answer)
	}
	return out
}

func TestRelayConversation(t *testing.T) {
	t.Parallel()
	peer, tr := newPeer(t)
	app := newRelayApp(t)
	to := "+14155550201"
	peer.Script(to, twiliotest.CallScript{Prompts: []string{"hello", "what time is it", "bye"}, Lang: "fr-FR",
		DTMF: map[int]string{1: "42"}, Pause: 5 * time.Millisecond})
	sid := place(t, tr, app, twilio.CallRequest{To: to, TimeLimit: 60})
	rel := waitRelay(t, peer, sid)

	if want := []string{"You said hello.", "You said what time is it.", "You said bye."}; !reflect.DeepEqual(answers(rel), want) {
		t.Fatalf("answers = %q, want %q", answers(rel), want)
	}
	for i, turn := range rel.Turns {
		if turn.Tokens != 3 || turn.Session != 1 || turn.Interrupted || turn.SentAt.IsZero() ||
			turn.FirstTokenAt.Before(turn.SentAt) || turn.LastTokenAt.Before(turn.FirstTokenAt) {
			t.Errorf("turn %d = %+v", i, turn)
		}
	}
	if rel.Ended != "caller" || rel.Sessions != 1 || !rel.Done || rel.HandshakeStatus != 0 ||
		rel.Greeting != "Hello, this is Switchboard." || rel.URL != app.wsURL || len(rel.Frames) != 9 {
		t.Fatalf("relay = %+v", rel)
	}
	if rel.Setup["callSid"] != sid || rel.Setup["direction"] != "outbound-api" || rel.Setup["from"] != caller ||
		rel.Setup["to"] != to || !strings.HasPrefix(rel.Setup["sessionId"].(string), "VX") ||
		!reflect.DeepEqual(rel.Setup["customParameters"], map[string]string{"call": "abc"}) {
		t.Errorf("setup = %v", rel.Setup)
	}
	if len(rel.Actions) != 1 || rel.Actions[0].SessionStatus != "completed" || rel.Actions[0].Status != http.StatusOK {
		t.Fatalf("actions = %+v", rel.Actions)
	}

	received, actions, statuses, closes, _ := app.snapshot()
	var kinds []string
	for _, m := range received {
		k, _ := m["type"].(string)
		if k == "dtmf" {
			k += ":" + m["digit"].(string)
		}
		if k == "prompt" && (m["lang"] != "fr-FR" || m["last"] != true) {
			t.Errorf("prompt %v", m)
		}
		kinds = append(kinds, k)
	}
	if want := []string{"setup", "prompt", "dtmf:4", "dtmf:2", "prompt", "prompt"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("the application received %v, want %v", kinds, want)
	}
	if len(closes) != 1 || closes[0] != websocket.StatusNormalClosure {
		t.Errorf("the caller hung up with %v, want a normal close", closes)
	}
	ended := twilio.ParseRelayEnded(actions[0])
	if ended.CallSID != sid || ended.SessionStatus != "completed" || ended.CallStatus != "completed" ||
		ended.SessionID != rel.Setup["sessionId"] || ended.ErrorCode != "" {
		t.Errorf("action = %+v", ended)
	}
	if want := []string{"initiated", "ringing", "in-progress", "completed"}; !reflect.DeepEqual(statusesOf(statuses), want) {
		t.Fatalf("status callbacks = %v, want %v", statusesOf(statuses), want)
	}
	for i, f := range statuses {
		p := twilio.ParseCallProgress(f)
		if p.CallSID != sid || p.Sequence != i || (i == 3) != (p.Duration >= 1) {
			t.Errorf("status callback %d = %+v", i, p)
		}
	}
	info, err := tr.FetchCall(context.Background(), sid)
	if err != nil || info.Status != "completed" || info.Duration < 1 || info.Price != "-0.0130" || info.PriceUnit != "USD" {
		t.Errorf("FetchCall = %+v, %v", info, err)
	}
	c := peer.Calls()[0]
	if c.TimeLimit != 60 || c.RelayURL != app.wsURL || c.RelayAction != app.actionURL || c.Status != "completed" || c.Direction != "outbound-api" {
		t.Errorf("call = %+v", c)
	}
}

func TestRelayInterruptAndHangUp(t *testing.T) {
	t.Parallel()
	peer, tr := newPeer(t)
	app := newRelayApp(t)
	app.tokenGap = 40 * time.Millisecond
	peer.Script("+14155550202", twiliotest.CallScript{Prompts: []string{"one", "two"}, InterruptAt: map[int]int{0: 1}})
	peer.Script("+14155550203", twiliotest.CallScript{Prompts: []string{"one", "two"}, HangUpDuring: 2})

	rel := waitRelay(t, peer, place(t, tr, app, twilio.CallRequest{To: "+14155550202"}))
	if len(rel.Turns) != 2 || !rel.Turns[0].Interrupted || rel.Turns[0].Tokens != 1 || rel.Turns[0].Answer != "You said " ||
		!rel.Turns[0].LastTokenAt.IsZero() || rel.Turns[1].Interrupted || rel.Turns[1].Answer != "You said two." {
		t.Fatalf("turns = %+v", rel.Turns)
	}
	received, _, _, _, _ := app.snapshot()
	var interrupt map[string]any
	for _, m := range received {
		if m["type"] == "interrupt" {
			interrupt = m
		}
	}
	if interrupt == nil || interrupt["utteranceUntilInterrupt"] != "You said " {
		t.Errorf("interrupt = %v", interrupt)
	}

	rel = waitRelay(t, peer, place(t, tr, app, twilio.CallRequest{To: "+14155550203"}))
	if len(rel.Turns) != 2 || rel.Turns[1].Tokens != 1 || rel.Ended != "caller" ||
		len(rel.Actions) != 1 || rel.Actions[0].Params["CallStatus"][0] != "completed" {
		t.Fatalf("hang-up during the second answer: %+v", rel)
	}
}

// TestRelayTakeover: the application's server dies mid-call; Twilio posts the action with
// SessionStatus failed, which answers a new relay, and the caller goes on.
func TestRelayTakeover(t *testing.T) {
	t.Parallel()
	peer, tr := newPeer(t)
	app := newRelayApp(t)
	app.dropAt = "second"
	app.actionTwiML = func(f url.Values) string {
		if f.Get("SessionStatus") == "failed" {
			return twilio.ConversationRelayTwiML(twilio.RelayOptions{URL: app.wsURL, Action: app.actionURL})
		}
		return twilio.HangupTwiML("", "")
	}
	peer.Script("+14155550204", twiliotest.CallScript{Prompts: []string{"first", "second", "third"}})
	rel := waitRelay(t, peer, place(t, tr, app, twilio.CallRequest{To: "+14155550204"}))

	if rel.Sessions != 2 || rel.Ended != "caller" || len(rel.Actions) != 2 {
		t.Fatalf("relay = %+v", rel)
	}
	failed := twilio.ParseRelayEnded(rel.Actions[0].Params)
	if failed.SessionStatus != "failed" || failed.CallStatus != "in-progress" || failed.ErrorCode != twiliotest.RelayErrorCode ||
		failed.ErrorMessage == "" || rel.Actions[1].SessionStatus != "completed" {
		t.Errorf("actions = %+v", rel.Actions)
	}
	if want := []string{"You said first.", "", "You said second.", "You said third."}; !reflect.DeepEqual(answers(rel), want) {
		t.Fatalf("answers = %q, want %q", answers(rel), want)
	}
	if rel.Turns[1].Session != 1 || rel.Turns[2].Session != 2 || rel.Turns[2].Prompt != "second" {
		t.Errorf("turns = %+v", rel.Turns)
	}
}

func TestRelayEndsWithATransfer(t *testing.T) {
	t.Parallel()
	peer, tr := newPeer(t)
	app := newRelayApp(t)
	app.endAfter, app.handoff = "a human please", `{"reason":"transfer"}`
	app.actionTwiML = func(f url.Values) string { return twilio.DialTwiML("+14155550999", caller) }
	// The caller pauses after an answer: the end that follows it comes first.
	peer.Script("+14155550205", twiliotest.CallScript{Prompts: []string{"a human please", "never said"}, Pause: 50 * time.Millisecond})
	sid := place(t, tr, app, twilio.CallRequest{To: "+14155550205"})
	rel := waitRelay(t, peer, sid)
	if rel.Ended != "app" || rel.HandoffData != app.handoff || rel.TransferredTo != "+14155550999" || len(rel.Turns) != 1 ||
		len(rel.Actions) != 1 || rel.Actions[0].SessionStatus != "ended" || rel.Actions[0].Params["HandoffData"][0] != app.handoff {
		t.Fatalf("relay = %+v", rel)
	}
	if info, err := tr.FetchCall(context.Background(), sid); err != nil || info.Status != "completed" {
		t.Errorf("FetchCall = %+v, %v", info, err)
	}
}

func TestHangUpAndRedirectThroughTheAPI(t *testing.T) {
	t.Parallel()
	peer, tr := newPeer(t)
	app := newRelayApp(t)
	ctx := context.Background()

	// Hung up mid-call: the WebSocket closes normally, no action is posted.
	sid := place(t, tr, app, twilio.CallRequest{To: "+14155550206"})
	app.waitConnected(t)
	if err := tr.EndCall(ctx, sid, false); err != nil {
		t.Fatal(err)
	}
	rel := waitRelay(t, peer, sid)
	_, actions, statuses, closes, _ := app.snapshot()
	if rel.Ended != "api" || len(rel.Actions) != 0 || len(actions) != 0 || len(closes) != 1 || closes[0] != websocket.StatusNormalClosure {
		t.Fatalf("relay = %+v; closes %v", rel, closes)
	}
	if last := statuses[len(statuses)-1]; last.Get("CallStatus") != "completed" || last.Get("CallDuration") == "0" {
		t.Errorf("final status callback = %v", last)
	}
	// Ending it again is no error; redirecting it is.
	if err := tr.EndCall(ctx, sid, false); err != nil {
		t.Errorf("EndCall on an ended call: %v", err)
	}
	if err := tr.RedirectCall(ctx, sid, twilio.HangupTwiML("", "")); !errors.Is(err, twilio.ErrCallNotInProgress) {
		t.Errorf("RedirectCall on an ended call: %v, want ErrCallNotInProgress", err)
	}

	// Redirected mid-call: the new TwiML runs at once, no action is posted.
	sid = place(t, tr, app, twilio.CallRequest{To: "+14155550207"})
	app.waitConnected(t)
	voicemail := twilio.HangupTwiML("Sorry we missed you.", "en-US")
	if err := tr.RedirectCall(ctx, sid, voicemail); err != nil {
		t.Fatal(err)
	}
	rel = waitRelay(t, peer, sid)
	var redirected twiliotest.Call
	for _, c := range peer.Calls() {
		if c.SID == sid {
			redirected = c
		}
	}
	if rel.Ended != "api" || len(rel.Actions) != 0 || redirected.Status != "completed" || !reflect.DeepEqual(redirected.Redirects, []string{voicemail}) {
		t.Fatalf("redirect: relay %+v, call %+v", rel, redirected)
	}

	// Canceled before it is answered: never connected.
	peer.SetCallbackDelay(200 * time.Millisecond)
	sid = place(t, tr, app, twilio.CallRequest{To: "+14155550208"})
	if err := tr.EndCall(ctx, sid, true); err != nil {
		t.Fatal(err)
	}
	rel = waitRelay(t, peer, sid)
	if info, err := tr.FetchCall(ctx, sid); err != nil || info.Status != "canceled" || info.Price != "" || rel.Sessions != 0 || rel.Ended != "api" {
		t.Fatalf("canceled: %+v, %v; relay %+v", info, err, rel)
	}
}

func TestUnknownCall(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	target := peer.URL + "/2010-04-01/Accounts/" + twiliotest.AccountSID + "/Calls/CAffffffffffffffffffffffffffffffff.json"
	for _, method := range []string{"GET", "POST"} {
		status, _, body := do(t, method, target, url.Values{"Status": {"completed"}}, true)
		if status != 404 || body["code"] != float64(20404) {
			t.Errorf("%s unknown call = %d %v, want 404 with 20404", method, status, body)
		}
	}
	if status, _, _ := do(t, "GET", target, nil, false); status != 401 {
		t.Errorf("without credentials = %d, want 401", status)
	}
	if status, _, _ := do(t, "DELETE", target, nil, true); status != 405 {
		t.Errorf("DELETE = %d, want 405", status)
	}
}

// TestForgedRelayHandshake: a handshake signed with another token is refused by the
// application; the peer records the refusal and posts the action as failed.
func TestForgedRelayHandshake(t *testing.T) {
	t.Parallel()
	peer, tr := newPeer(t)
	app := newRelayApp(t)
	peer.SetRelayAuthToken("ffffffffffffffffffffffffffffffff")
	peer.Script("+14155550209", twiliotest.CallScript{Prompts: []string{"hello"}})
	rel := waitRelay(t, peer, place(t, tr, app, twilio.CallRequest{To: "+14155550209"}))
	_, _, _, _, handshakes := app.snapshot()
	if rel.HandshakeStatus != http.StatusForbidden || rel.Sessions != 0 || rel.Ended != "dropped" || len(rel.Turns) != 0 ||
		len(rel.Actions) != 1 || rel.Actions[0].SessionStatus != "failed" || !reflect.DeepEqual(handshakes, []int{403}) {
		t.Fatalf("relay = %+v; handshakes %v", rel, handshakes)
	}
}

func TestRelayTimeLimitAndOutcomes(t *testing.T) {
	t.Parallel()
	peer, tr := newPeer(t)
	app := newRelayApp(t)
	start := time.Now()
	sid := place(t, tr, app, twilio.CallRequest{To: "+14155550210", TimeLimit: 1})
	rel := waitRelay(t, peer, sid)
	_, _, statuses, _, _ := app.snapshot()
	final := twilio.ParseCallProgress(statuses[len(statuses)-1])
	if rel.Ended != "time_limit" || time.Since(start) < time.Second || len(rel.Actions) != 1 ||
		rel.Actions[0].SessionStatus != "completed" || final.Status != "completed" || final.Duration != 1 {
		t.Fatalf("time limit: relay %+v, final %+v", rel, final)
	}

	peer.CallOutcome("+14155550211", "busy")
	rel = waitRelay(t, peer, place(t, tr, app, twilio.CallRequest{To: "+14155550211"}))
	if rel.Ended != "busy" || rel.Sessions != 0 || len(rel.Actions) != 0 {
		t.Fatalf("busy: relay %+v", rel)
	}

	// A voice message has no relay.
	sid = place(t, tr, app, twilio.CallRequest{To: "+14155550212", Twiml: twilio.SayTwiML("hi", "en-US")})
	if _, err := peer.WaitRelay(context.Background(), sid); !errors.Is(err, twiliotest.ErrNoRelay) {
		t.Fatalf("WaitRelay on a voice message: %v, want ErrNoRelay", err)
	}
}

func TestAnsweringMachineDetection(t *testing.T) {
	t.Parallel()
	peer, tr := newPeer(t)
	app := newRelayApp(t)
	to := "+14155550213"
	peer.SetAnsweredBy(to, "machine_end_beep")
	peer.Script(to, twiliotest.CallScript{Prompts: []string{"beep"}})
	sid := place(t, tr, app, twilio.CallRequest{To: to, MachineDetection: true, AMDCallback: app.amdURL})
	waitRelay(t, peer, sid)
	app.mu.Lock()
	amds := app.amds
	app.mu.Unlock()
	if len(amds) != 1 {
		t.Fatalf("AMD callbacks = %v", amds)
	}
	if r := twilio.ParseAMD(amds[0]); r.CallSID != sid || r.AnsweredBy != "machine_end_beep" || !twilio.IsMachine(r.AnsweredBy) {
		t.Errorf("AMD = %+v", r)
	}
	c := peer.Calls()[0]
	if c.MachineDetection != "Enable" || !c.AsyncAmd || c.AsyncAmdStatusCallback != app.amdURL {
		t.Errorf("call = %+v", c)
	}
	if info, err := tr.FetchCall(context.Background(), sid); err != nil || info.AnsweredBy != "machine_end_beep" {
		t.Errorf("FetchCall = %+v, %v", info, err)
	}
}

func TestInboundRelayCall(t *testing.T) {
	t.Parallel()
	peer, _ := newPeer(t)
	app := newRelayApp(t)
	app.voiceTwiML = func(f url.Values) string {
		if f.Get("From") == "+14155550666" {
			return twilio.RejectTwiML("busy")
		}
		return twilio.ConversationRelayTwiML(twilio.RelayOptions{URL: app.wsURL, Action: app.actionURL, WelcomeGreeting: "Hi"})
	}
	ctx := context.Background()
	sid, status, twiml, err := peer.PlaceInboundCall(ctx, app.voiceURL, "+14155550214", caller,
		twiliotest.CallScript{Prompts: []string{"hi there"}, InboundStatusCallback: app.statusURL})
	if err != nil || status != 200 || !strings.Contains(twiml, "<ConversationRelay") {
		t.Fatalf("PlaceInboundCall = %d %q, %v", status, twiml, err)
	}
	rel := waitRelay(t, peer, sid)
	_, _, statuses, _, _ := app.snapshot()
	app.mu.Lock()
	voice := app.voices[0]
	app.mu.Unlock()
	in, err := twilio.ParseIncomingCall(voice)
	if err != nil || in.CallSID != sid || in.Direction != "inbound" || in.Status != "ringing" || in.To != caller {
		t.Errorf("incoming call = %+v, %v", in, err)
	}
	if rel.Setup["direction"] != "inbound" || len(rel.Turns) != 1 || rel.Turns[0].Answer != "You said hi there." || rel.Ended != "caller" {
		t.Fatalf("relay = %+v", rel)
	}
	if want := []string{"in-progress", "completed"}; !reflect.DeepEqual(statusesOf(statuses), want) {
		t.Errorf("status callbacks = %v, want %v", statusesOf(statuses), want)
	}

	sid, _, _, err = peer.PlaceInboundCall(ctx, app.voiceURL, "+14155550666", caller, twiliotest.CallScript{})
	if err != nil {
		t.Fatal(err)
	}
	if rel := waitRelay(t, peer, sid); rel.Ended != "rejected" || rel.Sessions != 0 {
		t.Fatalf("rejected: %+v", rel)
	}
	if calls := peer.Calls(); calls[1].Status != "busy" {
		t.Errorf("rejected call = %+v", calls[1])
	}
	if _, _, _, err := peer.PlaceInboundCall(ctx, "http://example.com/voice", "+14155550215", caller, twiliotest.CallScript{}); !errors.Is(err, twiliotest.ErrNotLoopback) {
		t.Errorf("inbound call to example.com: %v, want ErrNotLoopback", err)
	}
}

// TestCloseMidCall: a test that ends while a call talks stops the peer at once.
func TestCloseMidCall(t *testing.T) {
	t.Parallel()
	app := newRelayApp(t)
	start := time.Now()
	t.Run("call", func(t *testing.T) {
		_, tr := newPeer(t)
		place(t, tr, app, twilio.CallRequest{To: "+14155550216"})
		app.waitConnected(t)
	})
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the peer took %v to stop", d)
	}
}
