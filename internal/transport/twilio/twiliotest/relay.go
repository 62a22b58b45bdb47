package twiliotest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coder/websocket"
)

// RelayErrorCode is the ErrorCode the peer posts to the <Connect> action when a relay's
// WebSocket could not be opened or dropped without an end message. Twilio documents 641xx
// codes for ConversationRelay failures; this one is the peer's choice, in their style.
const RelayErrorCode = "64105"

// relayReadLimit bounds one message of the application.
const relayReadLimit = 1 << 20

// ErrNoRelay: the call ended without a ConversationRelay session.
var ErrNoRelay = errors.New("twiliotest: the call has no ConversationRelay")

// CallScript is what the caller of a ConversationRelay call does.
type CallScript struct {
	// Prompts are what the caller says, one prompt message each, each after the answer to
	// the previous one. After the last answer (and Pause) the caller hangs up; with none, the
	// caller listens until the application ends the session or the time limit.
	Prompts []string
	// Pause is the time before each prompt (after the previous answer's last token, or
	// setup) and before hanging up.
	Pause time.Duration
	// Lang is the prompts' lang; "" is en-US.
	Lang string
	// InterruptAt: prompt index -> after this many text tokens of its answer the caller talks
	// over it (an interrupt message) and goes on with the next prompt at once.
	InterruptAt map[int]int
	// DTMF: prompt index -> keys pressed before that prompt (one dtmf message each).
	DTMF map[int]string
	// HangUpDuring is the 1-based prompt whose answer the caller hangs up in, after its first
	// token; 0 for none.
	HangUpDuring int
	// AnswerTimeout is how long the caller waits for an answer's last token before going on;
	// 0 is 10 s.
	AnswerTimeout time.Duration
	// InboundStatusCallback gets an inbound call's in-progress and completed callbacks
	// (PlaceInboundCall); Twilio posts none unless the number has a status callback.
	InboundStatusCallback string
}

// RelayTurn is one prompt of the caller and the application's answer.
type RelayTurn struct {
	Prompt string
	// Session is the WebSocket (1-based) the prompt went on: a prompt left unanswered when
	// a WebSocket dropped is asked again on the next one, a turn each.
	Session int
	// SentAt is when the prompt was written (just before: on loopback the answer can be read
	// before Write returns); FirstTokenAt and LastTokenAt are right after the first text
	// token and the one with last were read (zero when none came).
	SentAt, FirstTokenAt, LastTokenAt time.Time
	// Answer is the text tokens concatenated; Tokens how many came.
	Answer      string
	Tokens      int
	Interrupted bool
}

// ActionResult is one post of the <Connect> action.
type ActionResult struct {
	URL           string
	SessionStatus string
	Params        map[string][]string
	// Status is what the application answered, 0 when nothing answered (Err); Body its TwiML.
	Status int
	Body   string
	Err    error
}

// Relay is what happened on a call's ConversationRelay.
type Relay struct {
	CallSID string
	// URL is the WebSocket URL of the last session; Greeting the welcomeGreeting Twilio reads
	// out itself.
	URL, Greeting string
	// Setup is the last setup message sent.
	Setup map[string]any
	// Frames are the application's messages, in order, over all sessions.
	Frames []json.RawMessage
	Turns  []RelayTurn
	// Ended says how the last session ended: app (end message), caller (hung up), dropped
	// (the WebSocket closed without end, or could not be opened), time_limit, api (hung up or
	// redirected through the REST API), rejected (an inbound call's <Reject>); for a call
	// never answered, its outcome (busy, no-answer, failed, canceled).
	Ended       string
	HandoffData string
	Actions     []ActionResult
	// Sessions is how many WebSockets opened (2 after a takeover).
	Sessions      int
	TransferredTo string
	// HandshakeStatus is the HTTP status of the last refused handshake; 0 when it opened.
	HandshakeStatus int
	// Error is why the peer could not open the last WebSocket, if it could not.
	Error string
	// Done: the call is over and all its callbacks and actions were posted.
	Done bool
}

func (r Relay) clone() Relay {
	r.Setup = maps.Clone(r.Setup)
	r.Frames = append([]json.RawMessage(nil), r.Frames...)
	r.Turns = append([]RelayTurn(nil), r.Turns...)
	r.Actions = append([]ActionResult(nil), r.Actions...)
	return r
}

// Script sets what the caller of outbound calls to to does.
func (s *Server) Script(to string, sc CallScript) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[to] = sc
}

// SetRelayAuthToken makes the peer sign relay handshakes with token instead of AuthToken, as a
// forger would ("" restores AuthToken): the application should refuse them.
func (s *Server) SetRelayAuthToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.relayToken = token
}

// Relays are the calls' relays so far, in order.
func (s *Server) Relays() []Relay {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Relay, len(s.relays))
	for i, r := range s.relays {
		out[i] = r.clone()
	}
	return out
}

// WaitRelay waits until the call callSID is over (its relay Done) and returns its relay;
// ErrNoRelay when the call had none.
func (s *Server) WaitRelay(ctx context.Context, callSID string) (Relay, error) {
	s.mu.Lock()
	lc, ok := s.live[callSID]
	s.mu.Unlock()
	if !ok {
		return Relay{}, fmt.Errorf("twiliotest: no call %s", callSID)
	}
	select {
	case <-lc.done:
	case <-ctx.Done():
		return Relay{}, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if lc.relay == nil {
		return Relay{}, ErrNoRelay
	}
	return lc.relay.clone(), nil
}

// relayOf is lc's relay, made on first use; s.mu held.
func (s *Server) relayOf(lc *liveCall) *Relay {
	if lc.relay == nil {
		lc.relay = &Relay{CallSID: lc.sid}
		s.relays = append(s.relays, lc.relay)
	}
	return lc.relay
}

// PlaceInboundCall calls to from from as Twilio does for a number whose voice webhook is
// voiceURL: it posts the webhook (signed; CallStatus ringing, Direction inbound) and runs the
// TwiML answered in the background, sc playing the caller. It returns the call's sid and the
// webhook's status and body; err when nothing answered (the call then fails).
func (s *Server) PlaceInboundCall(ctx context.Context, voiceURL, from, to string, sc CallScript) (callSID string, status int, twiml string, err error) {
	if err := checkLoopback(voiceURL); err != nil {
		return "", 0, "", err
	}
	c := Call{SID: sid("CA"), To: to, From: from, Direction: "inbound", Status: "ringing",
		StatusCallback: sc.InboundStatusCallback, StatusCallbackEvents: []string{"answered", "completed"}}
	lc := s.addCall(c, sc)
	p := url.Values{
		"AccountSid": {AccountSID}, "ApiVersion": {apiVersion}, "CallSid": {c.SID}, "CallStatus": {"ringing"},
		"Called": {to}, "Caller": {from}, "To": {to}, "From": {from}, "Direction": {"inbound"},
	}
	status, twiml, err = s.postSigned(ctx, voiceURL, p)
	if err != nil {
		s.finish(lc, "failed", "failed")
		close(lc.done)
		return c.SID, 0, "", err
	}
	run := twiml
	if status < 200 || status > 299 {
		run = "" // Twilio reads out an application error and hangs up.
	}
	verbs, _ := parseTwiML(run)
	connect, relay := findRelay(verbs)
	s.mu.Lock()
	rec := &s.calls[lc.idx]
	rec.Twiml, rec.RelayURL, rec.RelayAction = run, relay.attrs["url"], connect.attrs["action"]
	if _, rejected := rejectOf(run); rejected || rec.RelayURL != "" {
		s.relayOf(lc)
	}
	s.mu.Unlock()
	s.startCall(lc)
	return c.SID, status, twiml, nil
}

// frame is a message the application sent, read at at.
type frame struct {
	at          time.Time
	typ         string
	token       string
	last        bool
	handoffData string
}

// socket is one relay WebSocket: a goroutine reads it into frames until it fails (gone).
type socket struct {
	conn   *websocket.Conn
	frames chan frame
	gone   chan struct{}
	quit   chan struct{} // the session is over: stop handing frames on
	opened time.Time
}

// appTypes are the messages an application may send.
var appTypes = map[string]bool{"text": true, "end": true, "language": true, "play": true, "sendDigits": true}

// session runs one relay session of <Connect> connect and its <ConversationRelay> relay; it
// returns the TwiML to run next (hasNext), or goOn false when the call ended.
func (s *Server) session(lc *liveCall, connect, relay node) (next string, hasNext, goOn bool) {
	target, action := relay.attrs["url"], connect.attrs["action"]
	c := s.call(lc)
	s.mu.Lock()
	rec := s.relayOf(lc)
	rec.URL = target
	if g := relay.attrs["welcomeGreeting"]; g != "" {
		rec.Greeting = g
	}
	token := s.relayToken
	if token == "" {
		token = AuthToken
	}
	s.mu.Unlock()
	sessionID := sid("VX")

	started := time.Now()
	conn, status, err := s.dialRelay(target, token)
	if err != nil {
		s.mu.Lock()
		rec.Ended, rec.HandshakeStatus, rec.Error = "dropped", status, err.Error()
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			return "", false, false
		}
		msg := "WebSocket connection failed"
		if status != 0 {
			msg = fmt.Sprintf("WebSocket handshake refused (HTTP %d)", status)
		}
		return s.relayAction(lc, c, action, sessionID, started, "failed", msg, "")
	}
	ws := &socket{conn: conn, frames: make(chan frame, 64), gone: make(chan struct{}),
		quit: make(chan struct{}), opened: time.Now()}
	defer close(ws.quit)
	s.mu.Lock()
	rec.Sessions++
	rec.HandshakeStatus, rec.Error = 0, ""
	n := rec.Sessions
	s.mu.Unlock()
	if !s.spawn(func() { s.readRelay(ws, rec) }) {
		_ = conn.CloseNow()
		return "", false, false
	}

	params := map[string]string{}
	for _, p := range relay.children {
		if p.name == "Parameter" {
			params[p.attrs["name"]] = p.attrs["value"]
		}
	}
	// Twilio writes callStatus in capitals; an outbound call is answered by now.
	callStatus := "IN-PROGRESS"
	if c.Direction == "inbound" {
		callStatus = "RINGING"
	}
	setup := map[string]any{"type": "setup", "sessionId": sessionID, "accountSid": AccountSID, "parentCallSid": "",
		"callSid": c.SID, "from": c.From, "to": c.To, "forwardedFrom": "", "callType": "PSTN", "callerName": "",
		"direction": c.Direction, "callStatus": callStatus, "customParameters": params}
	s.mu.Lock()
	rec.Setup = setup
	s.mu.Unlock()

	how, handoff := "dropped", ""
	if s.send(ws, setup) {
		how, handoff = s.converse(lc, ws, rec, n)
	}
	s.mu.Lock()
	if how != "stopped" {
		rec.Ended = how
	}
	if how == "app" {
		rec.HandoffData = handoff
	}
	s.mu.Unlock()
	switch how {
	case "stopped":
		_ = conn.CloseNow()
		return "", false, false
	case "dropped":
		_ = conn.CloseNow()
		return s.relayAction(lc, c, action, sessionID, ws.opened, "failed", "WebSocket closed without an end message", "")
	case "app":
		_ = conn.Close(websocket.StatusNormalClosure, "")
		return s.relayAction(lc, c, action, sessionID, ws.opened, "ended", "", handoff)
	case "caller", "time_limit":
		s.finish(lc, "completed", how)
		_ = conn.Close(websocket.StatusNormalClosure, "")
		return s.relayAction(lc, c, action, sessionID, ws.opened, "completed", "", "")
	case "redirect":
		// A redirect ends the session without its action; the redirect's TwiML runs.
		s.mu.Lock()
		rec.Ended = "api"
		s.mu.Unlock()
		_ = conn.Close(websocket.StatusNormalClosure, "")
		r, ok := s.takeRedirect(lc)
		return r, ok, ok || !s.isEnded(lc)
	default: // api: hung up through the REST API, no action either
		_ = conn.Close(websocket.StatusNormalClosure, "")
		return "", false, false
	}
}

// dialRelay opens the relay's WebSocket with the handshake signed over its URL; status is the
// HTTP status of a refused handshake.
func (s *Server) dialRelay(target, token string) (*websocket.Conn, int, error) {
	if err := checkLoopbackURL(target, "ws", "wss"); err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("X-Twilio-Signature", Sign(token, target, nil))
	h.Set("User-Agent", "Twilio.TmeWs/1.0")
	conn, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPClient: s.hc, HTTPHeader: h})
	if err != nil {
		status := 0
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			status = resp.StatusCode
		}
		return nil, status, err
	}
	conn.SetReadLimit(relayReadLimit)
	return conn, 0, nil
}

// readRelay reads the application's messages, records them and hands them on; it answers one
// that is not a message the application may send with an error message, as Twilio does.
func (s *Server) readRelay(ws *socket, rec *Relay) {
	defer close(ws.gone)
	for {
		_, b, err := ws.conn.Read(s.ctx)
		at := time.Now()
		if err != nil {
			return
		}
		var m struct {
			Type        string `json:"type"`
			Token       string `json:"token"`
			Last        bool   `json:"last"`
			HandoffData string `json:"handoffData"`
		}
		s.mu.Lock()
		rec.Frames = append(rec.Frames, json.RawMessage(b))
		s.mu.Unlock()
		if err := json.Unmarshal(b, &m); err != nil || !appTypes[m.Type] {
			s.send(ws, map[string]any{"type": "error", "description": "Invalid message received: " + strconv.Quote(m.Type)})
			continue
		}
		select {
		case ws.frames <- frame{at: at, typ: m.Type, token: m.Token, last: m.Last, handoffData: m.HandoffData}:
		case <-ws.quit:
			return
		}
	}
}

// send writes v to the application; false when the WebSocket failed.
func (s *Server) send(ws *socket, v any) bool {
	_, ok := s.sendAt(ws, v)
	return ok
}

// sendAt is send, with when the message went: just before it is written, so an answer read
// on loopback while Write returns is never earlier.
func (s *Server) sendAt(ws *socket, v any) (time.Time, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return time.Time{}, false
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	at := time.Now()
	return at, ws.conn.Write(ctx, websocket.MessageText, b) == nil
}

// converse plays the caller's script on ws from the next unanswered prompt, and says how the
// session ended: app, caller, dropped, time_limit, api, redirect or stopped (the server).
func (s *Server) converse(lc *liveCall, ws *socket, rec *Relay, session int) (how, handoff string) {
	sc := lc.script
	skipPause := false
	for {
		s.mu.Lock()
		i := lc.next
		s.mu.Unlock()
		if i >= len(sc.Prompts) {
			if len(sc.Prompts) == 0 {
				return s.listen(lc, ws, -1)
			}
			if how, handoff := s.listen(lc, ws, sc.Pause); how != "" {
				return how, handoff
			}
			return "caller", ""
		}
		if !skipPause {
			if how, handoff := s.listen(lc, ws, sc.Pause); how != "" {
				return how, handoff
			}
		}
		skipPause = false
		for _, d := range sc.DTMF[i] {
			if !s.send(ws, map[string]any{"type": "dtmf", "digit": string(d)}) {
				return "dropped", ""
			}
		}
		sent, ok := s.sendAt(ws, map[string]any{"type": "prompt", "voicePrompt": sc.Prompts[i], "lang": sc.Lang, "last": true})
		if !ok {
			return "dropped", ""
		}
		s.mu.Lock()
		rec.Turns = append(rec.Turns, RelayTurn{Prompt: sc.Prompts[i], Session: session, SentAt: sent})
		k := len(rec.Turns) - 1
		s.mu.Unlock()

		how, handoff, interrupted := s.await(lc, ws, rec, k, i)
		if how != "" {
			return how, handoff
		}
		s.mu.Lock()
		lc.next = i + 1
		s.mu.Unlock()
		skipPause = interrupted
	}
}

// await reads the answer to prompt i into turn k until its last token, the interruption or
// the hang-up the script asks for, or AnswerTimeout; how is set when the session ended.
func (s *Server) await(lc *liveCall, ws *socket, rec *Relay, k, i int) (how, handoff string, interrupted bool) {
	sc := lc.script
	timeout := time.NewTimer(sc.AnswerTimeout)
	defer timeout.Stop()
	for {
		select {
		case f := <-ws.frames:
			if f.typ == "end" {
				return "app", f.handoffData, false
			}
			if f.typ != "text" {
				continue
			}
			s.mu.Lock()
			turn := &rec.Turns[k]
			if turn.Tokens == 0 {
				turn.FirstTokenAt = f.at
			}
			turn.Tokens++
			turn.Answer += f.token
			if f.last {
				turn.LastTokenAt = f.at
			}
			t := *turn
			s.mu.Unlock()
			switch {
			case sc.HangUpDuring == i+1:
				return "caller", "", false
			case f.last:
				return "", "", false
			case sc.InterruptAt[i] > 0 && t.Tokens >= sc.InterruptAt[i]:
				s.mu.Lock()
				rec.Turns[k].Interrupted = true
				s.mu.Unlock()
				if !s.send(ws, map[string]any{"type": "interrupt", "utteranceUntilInterrupt": t.Answer,
					"durationUntilInterruptMs": time.Since(t.FirstTokenAt).Milliseconds()}) {
					return "dropped", "", true
				}
				return "", "", true
			}
		case <-ws.gone:
			return "dropped", "", false
		case <-lc.sig:
			if how := s.interruption(lc); how != "" {
				return how, "", false
			}
		case <-timeout.C:
			return "", "", false
		case <-s.ctx.Done():
			return "stopped", "", false
		}
	}
}

// listen waits d (d < 0: until the session ends) while the application talks on; how is
// set when the session ended meanwhile.
func (s *Server) listen(lc *liveCall, ws *socket, d time.Duration) (how, handoff string) {
	var elapsed <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		elapsed = t.C
	}
	for {
		select {
		case f := <-ws.frames:
			if f.typ == "end" {
				return "app", f.handoffData
			}
		case <-ws.gone:
			return "dropped", ""
		case <-lc.sig:
			if how := s.interruption(lc); how != "" {
				return how, ""
			}
		case <-elapsed:
			return "", ""
		case <-s.ctx.Done():
			return "stopped", ""
		}
	}
}

// interruption is what the call's signal means for a session: the call ended (api,
// time_limit) or was redirected; "" for nothing.
func (s *Server) interruption(lc *liveCall) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !lc.ended.IsZero():
		return lc.endReason
	case lc.redirect != nil:
		return "redirect"
	}
	return ""
}

// relayAction posts the <Connect> action for a session that ended with sessionStatus and
// returns the TwiML it answers. A session the caller ended (completed) ends the call: the
// answer is not run. No action: the document goes on after <Connect>.
func (s *Server) relayAction(lc *liveCall, c Call, action, sessionID string, opened time.Time, sessionStatus, errMessage, handoff string) (string, bool, bool) {
	callStatus := "in-progress"
	if sessionStatus == "completed" {
		callStatus = "completed"
	}
	if action == "" {
		return "", false, sessionStatus != "completed" && !s.isEnded(lc)
	}
	p := url.Values{
		"AccountSid": {AccountSID}, "ApiVersion": {apiVersion}, "CallSid": {c.SID}, "CallStatus": {callStatus},
		"From": {c.From}, "To": {c.To}, "Direction": {c.Direction}, "SessionId": {sessionID},
		"SessionStatus": {sessionStatus}, "SessionDuration": {strconv.Itoa(int(time.Since(opened) / time.Second))},
	}
	if handoff != "" {
		p.Set("HandoffData", handoff)
	}
	if errMessage != "" {
		p.Set("ErrorCode", RelayErrorCode)
		p.Set("ErrorMessage", errMessage)
	}
	res := ActionResult{URL: action, SessionStatus: sessionStatus, Params: p}
	if err := checkLoopback(action); err != nil {
		res.Err = err
	} else {
		res.Status, res.Body, res.Err = s.postSigned(s.ctx, action, p)
	}
	s.mu.Lock()
	lc.relay.Actions = append(lc.relay.Actions, res)
	s.mu.Unlock()
	switch {
	case sessionStatus == "completed":
		return "", false, false
	case res.Err != nil || res.Status < 200 || res.Status > 299:
		// Twilio reads out an application error and hangs up.
		s.finish(lc, "completed", "twiml")
		return "", false, false
	}
	return res.Body, true, !s.isEnded(lc)
}
