package twiliotest

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// CallPricePerMinute is what the peer charges an answered call, per started minute, as Twilio
// writes prices (negative: a charge).
const CallPricePerMinute = -0.013

// maxDocuments bounds the TwiML documents one call runs (actions answering a relay that keeps
// failing, redirects), so a misbehaving application cannot keep a call going forever.
const maxDocuments = 20

// liveCall is a call's state while the peer plays it. Fields below sig are guarded by s.mu.
type liveCall struct {
	sid    string
	idx    int // in s.calls
	script CallScript
	// sig wakes the call's goroutine when the API hangs it up or redirects it (capacity 1).
	sig chan struct{}
	// done is closed when the call is over and all its callbacks are posted.
	done chan struct{}

	status          string
	answered, ended time.Time
	// endReason is who ended the call: api, time_limit, caller, twiml, or the outcome.
	endReason  string
	answeredBy string
	redirect   *string // TwiML waiting to run
	seq        int     // SequenceNumber of the next status callback
	limit      *time.Timer
	relay      *Relay
	next       int // the caller's next prompt
}

// SetAnsweredBy sets what answering machine detection says of calls to to (human,
// machine_start, machine_end_beep, machine_end_silence, machine_end_other, fax, unknown);
// calls asking for detection are answered by a human otherwise.
func (s *Server) SetAnsweredBy(to, answeredBy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answeredBy[to] = answeredBy
}

// addCall records c and its live state; a TwiML holding a relay gets its Relay at once, so
// WaitRelay also sees calls that are never answered.
func (s *Server) addCall(c Call, sc CallScript) *liveCall {
	if sc.Lang == "" {
		sc.Lang = "en-US"
	}
	if sc.AnswerTimeout <= 0 {
		sc.AnswerTimeout = 10 * time.Second
	}
	doc, _ := parseTwiML(c.Twiml)
	connect, relay := findRelay(doc)
	c.RelayURL, c.RelayAction = relay.attrs["url"], connect.attrs["action"]
	s.mu.Lock()
	defer s.mu.Unlock()
	lc := &liveCall{sid: c.SID, idx: len(s.calls), script: sc, status: c.Status,
		sig: make(chan struct{}, 1), done: make(chan struct{})}
	s.calls = append(s.calls, c)
	s.live[c.SID] = lc
	if c.RelayURL != "" {
		s.relayOf(lc)
	}
	return lc
}

// startCall plays the call in the background.
func (s *Server) startCall(lc *liveCall) {
	if !s.spawn(func() { s.runCall(lc) }) {
		close(lc.done)
	}
}

// runCall plays a call as Twilio does: its progress (status callbacks for the events asked
// for), the outcome CallOutcome set, then its TwiML until the call ends, and the final
// status callback.
func (s *Server) runCall(lc *liveCall) {
	defer s.callOver(lc)
	s.play(lc)
	if s.ctx.Err() == nil {
		s.finish(lc, "completed", "twiml")
		s.progress(lc, "")
	}
}

func (s *Server) play(lc *liveCall) {
	c := s.call(lc)
	if c.Direction == "inbound" {
		if reason, rejected := rejectOf(c.Twiml); rejected {
			// <Reject> first: never answered, busy or no-answer as the reason says.
			status := "no-answer"
			if reason == "busy" {
				status = "busy"
			}
			s.mu.Lock()
			if r := s.relayOf(lc); r != nil {
				r.Ended = "rejected"
			}
			s.mu.Unlock()
			s.finish(lc, status, "rejected")
			return
		}
	} else {
		s.mu.Lock()
		outcome := s.callOutcomes[c.To]
		s.mu.Unlock()
		if !s.progress(lc, "initiated") {
			return
		}
		if outcome == "failed" {
			s.finish(lc, outcome, outcome)
			return
		}
		if !s.progress(lc, "ringing") {
			return
		}
		switch outcome {
		case "busy", "no-answer", "canceled":
			s.finish(lc, outcome, outcome)
			return
		}
	}
	if !s.answer(lc, c) {
		return
	}
	if c.MachineDetection != "" && c.AsyncAmd && c.AsyncAmdStatusCallback != "" {
		if !s.sleep(lc, s.callbackDelay()) {
			return
		}
		s.mu.Lock()
		by := lc.answeredBy
		s.mu.Unlock()
		s.post(c.AsyncAmdStatusCallback, url.Values{"AccountSid": {AccountSID}, "CallSid": {c.SID},
			"AnsweredBy": {by}, "MachineDetectionDuration": {"2130"}})
	}
	s.execute(lc, c.Twiml)
}

// answer waits the ringing out and answers: in-progress, its callback, the time limit.
func (s *Server) answer(lc *liveCall, c Call) bool {
	if !s.sleep(lc, s.callbackDelay()) {
		return false
	}
	s.mu.Lock()
	if !lc.ended.IsZero() {
		s.mu.Unlock()
		return false
	}
	lc.answered = time.Now()
	s.setStatus(lc, "in-progress")
	if c.MachineDetection != "" {
		lc.answeredBy = s.answeredBy[c.To]
		if lc.answeredBy == "" {
			lc.answeredBy = "human"
		}
	}
	if c.TimeLimit > 0 {
		lc.limit = time.AfterFunc(time.Duration(c.TimeLimit)*time.Second, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.finishLocked(lc, "completed", "time_limit")
		})
	}
	s.mu.Unlock()
	s.callback(lc, "in-progress")
	return true
}

// callOver ends what is left of the call: its timer, its relay, its waiters.
func (s *Server) callOver(lc *liveCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lc.limit != nil {
		lc.limit.Stop()
	}
	if lc.relay != nil {
		if lc.relay.Ended == "" {
			lc.relay.Ended = lc.endReason
		}
		lc.relay.Done = true
	}
	close(lc.done)
}

// execute runs TwiML documents from twiml on: each <Connect> action's answer and each
// redirect replaces the document, until the call ends.
func (s *Server) execute(lc *liveCall, twiml string) {
	if r, ok := s.takeRedirect(lc); ok {
		twiml = r
	}
	for range maxDocuments {
		next, ok := s.runDocument(lc, twiml)
		if !ok {
			return
		}
		twiml = next
	}
}

// runDocument runs one TwiML document's verbs; it returns the document to run next, or false
// when the call ended. <Say>, <Play> and <Pause> take no time: nobody listens.
func (s *Server) runDocument(lc *liveCall, twiml string) (string, bool) {
	verbs, err := parseTwiML(twiml)
	if err != nil {
		// Twilio reads out "an application error has occurred" and hangs up.
		s.finish(lc, "completed", "twiml")
		return "", false
	}
	for _, v := range verbs {
		if r, ok := s.takeRedirect(lc); ok {
			return r, true
		}
		if s.isEnded(lc) {
			return "", false
		}
		switch v.name {
		case "Hangup", "Reject":
			s.finish(lc, "completed", "twiml")
			return "", false
		case "Dial":
			number := strings.TrimSpace(v.text)
			for _, n := range v.children {
				if n.name == "Number" || n.name == "Client" || n.name == "Sip" {
					number = strings.TrimSpace(n.text)
				}
			}
			s.mu.Lock()
			if lc.relay != nil {
				lc.relay.TransferredTo = number
			}
			s.mu.Unlock()
			s.finish(lc, "completed", "twiml")
			return "", false
		case "Connect":
			relay, ok := child(v, "ConversationRelay")
			if !ok {
				continue
			}
			next, hasNext, goOn := s.session(lc, v, relay)
			switch {
			case !goOn:
				return "", false
			case hasNext:
				return next, true
			}
		}
	}
	if r, ok := s.takeRedirect(lc); ok {
		return r, true
	}
	// The document ran out: Twilio hangs up.
	s.finish(lc, "completed", "twiml")
	return "", false
}

// call is a copy of lc's record.
func (s *Server) call(lc *liveCall) Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[lc.idx]
}

func (s *Server) callbackDelay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delay
}

// sleep waits d; false when the call ended or the server stopped meanwhile. A redirect cuts
// it short (true), for the TwiML to run.
func (s *Server) sleep(lc *liveCall, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return !s.isEnded(lc)
		case <-lc.sig:
			s.mu.Lock()
			ended, redirected := !lc.ended.IsZero(), lc.redirect != nil
			s.mu.Unlock()
			if ended {
				return false
			}
			if redirected {
				// Put the signal back for whoever runs the TwiML.
				s.signal(lc)
				return true
			}
		case <-s.ctx.Done():
			return false
		}
	}
}

func (s *Server) isEnded(lc *liveCall) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !lc.ended.IsZero()
}

func (s *Server) signal(lc *liveCall) {
	select {
	case lc.sig <- struct{}{}:
	default:
	}
}

func (s *Server) takeRedirect(lc *liveCall) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lc.redirect == nil || !lc.ended.IsZero() {
		return "", false
	}
	r := *lc.redirect
	lc.redirect = nil
	return r, true
}

// setStatus sets the call's status; s.mu held.
func (s *Server) setStatus(lc *liveCall, status string) {
	lc.status = status
	s.calls[lc.idx].Status = status
}

// finish ends the call with status unless it has ended already.
func (s *Server) finish(lc *liveCall, status, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finishLocked(lc, status, reason)
}

func (s *Server) finishLocked(lc *liveCall, status, reason string) bool {
	if !lc.ended.IsZero() {
		return false
	}
	lc.ended, lc.endReason = time.Now(), reason
	s.setStatus(lc, status)
	s.signal(lc)
	return true
}

// progress waits the callback delay, then moves the call to status and posts its callback;
// false when the call ended meanwhile. An empty status posts the final callback of a call
// that has ended.
func (s *Server) progress(lc *liveCall, status string) bool {
	if status == "" {
		t := time.NewTimer(s.callbackDelay())
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return false
		}
		s.mu.Lock()
		status = lc.status
		s.mu.Unlock()
		s.callback(lc, status)
		return true
	}
	if !s.sleep(lc, s.callbackDelay()) {
		return false
	}
	s.mu.Lock()
	if !lc.ended.IsZero() {
		s.mu.Unlock()
		return false
	}
	s.setStatus(lc, status)
	s.mu.Unlock()
	s.callback(lc, status)
	return true
}

// final reports whether status ends a call.
func final(status string) bool {
	switch status {
	case "completed", "busy", "no-answer", "failed", "canceled":
		return true
	}
	return false
}

// callback posts the status callback of status if the call asked for its event (only the
// final one when it named none), with the parameters Twilio documents.
func (s *Server) callback(lc *liveCall, status string) {
	s.mu.Lock()
	c := s.calls[lc.idx]
	event := status
	switch {
	case status == "in-progress":
		event = "answered"
	case final(status):
		event = "completed"
	}
	asked := len(c.StatusCallbackEvents) == 0 && event == "completed"
	for _, e := range c.StatusCallbackEvents {
		asked = asked || strings.EqualFold(e, event)
	}
	if c.StatusCallback == "" || !asked {
		s.mu.Unlock()
		return
	}
	p := url.Values{
		"AccountSid": {AccountSID}, "ApiVersion": {apiVersion}, "CallSid": {c.SID}, "CallStatus": {status},
		"Called": {c.To}, "Caller": {c.From}, "To": {c.To}, "From": {c.From}, "Direction": {c.Direction},
		"CallbackSource": {"call-progress-events"}, "SequenceNumber": {strconv.Itoa(lc.seq)},
		"Timestamp": {time.Now().UTC().Format(time.RFC1123Z)},
	}
	lc.seq++
	if final(status) {
		seconds := callSeconds(lc)
		p.Set("CallDuration", strconv.Itoa(seconds))
		p.Set("Duration", strconv.Itoa((seconds+59)/60))
	}
	if lc.answeredBy != "" {
		p.Set("AnsweredBy", lc.answeredBy)
	}
	s.mu.Unlock()
	s.post(c.StatusCallback, p)
}

// callSeconds is the call's duration, from answer to end: whole seconds, at least 1 for an
// answered call (Twilio bills from the first second); 0 for one never answered. s.mu held.
func callSeconds(lc *liveCall) int {
	if lc.answered.IsZero() {
		return 0
	}
	end := lc.ended
	if end.IsZero() {
		end = time.Now()
	}
	return max(1, int(end.Sub(lc.answered)/time.Second))
}

// callJSON is the Call resource of lc as Twilio answers it; s.mu held.
func (s *Server) callJSON(lc *liveCall) map[string]any {
	c := s.calls[lc.idx]
	uri := fmt.Sprintf("/%s/Accounts/%s/Calls/%s", apiVersion, AccountSID, c.SID)
	now := time.Now().UTC().Format(time.RFC1123Z)
	stamp := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Format(time.RFC1123Z)
	}
	var duration, price, answeredBy any
	if !lc.ended.IsZero() {
		seconds := callSeconds(lc)
		duration = strconv.Itoa(seconds)
		if !lc.answered.IsZero() {
			// Priced at once; Twilio may take a while, when price is null meanwhile.
			price = fmt.Sprintf("%.4f", CallPricePerMinute*float64((seconds+59)/60))
		}
	}
	if lc.answeredBy != "" {
		answeredBy = lc.answeredBy
	}
	return map[string]any{
		"account_sid": AccountSID, "annotation": nil, "answered_by": answeredBy, "api_version": apiVersion,
		"caller_name": nil, "date_created": now, "date_updated": now, "direction": c.Direction,
		"duration": duration, "end_time": stamp(lc.ended), "forwarded_from": nil, "from": c.From, "from_formatted": c.From,
		"group_sid": nil, "parent_call_sid": nil, "phone_number_sid": nil, "price": price,
		"price_unit": "USD", "queue_time": "0", "sid": c.SID, "start_time": stamp(lc.answered), "status": lc.status,
		"to": c.To, "to_formatted": c.To, "trunk_sid": nil, "uri": uri + ".json",
		"subresource_uris": map[string]string{
			"notifications": uri + "/Notifications.json", "recordings": uri + "/Recordings.json",
			"payments": uri + "/Payments.json", "events": uri + "/Events.json",
		},
	}
}

// fetchCall answers GET …/Calls/{sid}.json.
func (s *Server) fetchCall(w http.ResponseWriter, r *http.Request, callSID string) {
	s.mu.Lock()
	lc, ok := s.live[callSID]
	var body map[string]any
	if ok {
		body = s.callJSON(lc)
	}
	s.mu.Unlock()
	if !ok {
		notFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// updateCall answers POST …/Calls/{sid}.json: Status=completed hangs the call up (cancels it
// when not answered yet), Status=canceled cancels a call not answered yet and leaves an
// answered one alone, Twiml=… runs that TwiML at once, ending a relay session without its
// action being posted. A call that has ended is left as it is, and cannot be redirected
// (Twilio's 21220).
func (s *Server) updateCall(w http.ResponseWriter, r *http.Request, callSID string) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, 20001, "Invalid form body")
		return
	}
	f := r.PostForm
	status, twiml := f.Get("Status"), f.Get("Twiml")
	s.mu.Lock()
	defer s.mu.Unlock()
	lc, ok := s.live[callSID]
	switch {
	case !ok:
		notFound(w, r)
		return
	case f.Get("Url") != "":
		writeError(w, http.StatusBadRequest, 20001, "twiliotest redirects calls with Twiml only, not Url.")
		return
	case status != "" && status != "completed" && status != "canceled":
		writeError(w, http.StatusBadRequest, 20001, fmt.Sprintf("Status %q is not completed or canceled.", status))
		return
	case status != "":
		switch {
		case !lc.ended.IsZero():
		case lc.answered.IsZero():
			s.finishLocked(lc, "canceled", "api")
		case status == "completed":
			s.finishLocked(lc, "completed", "api")
		}
	case twiml != "":
		if !lc.ended.IsZero() {
			writeError(w, http.StatusBadRequest, 21220, "Call is not in-progress. Cannot redirect.")
			return
		}
		s.calls[lc.idx].Redirects = append(s.calls[lc.idx].Redirects, twiml)
		lc.redirect = &twiml
		s.signal(lc)
	}
	writeJSON(w, http.StatusOK, s.callJSON(lc))
}

// node is a TwiML element.
type node struct {
	name     string
	attrs    map[string]string
	text     string
	children []node
}

// parseTwiML returns the verbs of a <Response>.
func parseTwiML(doc string) ([]node, error) {
	d := xml.NewDecoder(strings.NewReader(doc))
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("twiliotest: TwiML without <Response>: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "Response" {
				return nil, errors.New("twiliotest: TwiML root is not <Response>")
			}
			root, err := readNode(d, se)
			return root.children, err
		}
	}
}

func readNode(d *xml.Decoder, se xml.StartElement) (node, error) {
	n := node{name: se.Name.Local, attrs: map[string]string{}}
	for _, a := range se.Attr {
		n.attrs[a.Name.Local] = a.Value
	}
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n, io.ErrUnexpectedEOF
		}
		if err != nil {
			return n, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			c, err := readNode(d, t)
			if err != nil {
				return n, err
			}
			n.children = append(n.children, c)
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			n.text = text.String()
			return n, nil
		}
	}
}

func child(n node, name string) (node, bool) {
	for _, c := range n.children {
		if c.name == name {
			return c, true
		}
	}
	return node{}, false
}

// findRelay is the first <Connect> holding a <ConversationRelay>, and that noun.
func findRelay(verbs []node) (connect, relay node) {
	for _, v := range verbs {
		if v.name != "Connect" {
			continue
		}
		if r, ok := child(v, "ConversationRelay"); ok {
			return v, r
		}
	}
	return node{}, node{}
}

// rejectOf reports whether twiml starts with <Reject>, and its reason.
func rejectOf(twiml string) (string, bool) {
	verbs, err := parseTwiML(twiml)
	if err != nil || len(verbs) == 0 || verbs[0].name != "Reject" {
		return "", false
	}
	return verbs[0].attrs["reason"], true
}
