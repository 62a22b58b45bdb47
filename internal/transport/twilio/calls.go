package twilio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/twilio/twilio-go/client"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"
)

// Call control: calls whose TwiML hands them to a ConversationRelay (relay.go), hung up,
// redirected and fetched through the Calls resource, and what Twilio posts about them.

// ErrCallNotFound: Twilio does not know the call (HTTP 404, code 20404), or the sid is not a
// call's. The errors of EndCall, RedirectCall and FetchCall wrap it.
var ErrCallNotFound = errors.New("twilio: no such call")

// ErrCallNotInProgress: Twilio cannot redirect the call because it has ended (code 21220).
var ErrCallNotInProgress = errors.New("twilio: the call is not in progress")

// callSID is the shape of a Call's sid; anything else never reaches the request path.
var callSID = regexp.MustCompile(`^CA[0-9a-fA-F]{32}$`)

// CallRequest is a call to place whose TwiML hands it to a ConversationRelay.
type CallRequest struct {
	To, From string
	Twiml    string
	// StatusCallback gets the status callbacks for initiated, ringing, answered and completed.
	StatusCallback string
	// TimeLimit is the most seconds the call may last; 0 is Twilio's default (4 hours).
	TimeLimit int
	// MachineDetection asks Twilio to tell a machine from a human asynchronously (AsyncAmd),
	// posting the answer to AMDCallback.
	MachineDetection bool
	AMDCallback      string
}

// PlaceCall places the call r and returns its sid. Errors are classified as Send's: a
// transport.Failure for a refusal, transport.Temporary for one worth trying again.
func (t *Transport) PlaceCall(ctx context.Context, r CallRequest) (string, error) {
	p := &openapi.CreateCallParams{}
	p.SetTo(r.To)
	p.SetFrom(r.From)
	p.SetTwiml(r.Twiml)
	if r.StatusCallback != "" {
		p.SetStatusCallback(r.StatusCallback)
		p.SetStatusCallbackEvent(callEvents)
	}
	if r.TimeLimit > 0 {
		p.SetTimeLimit(r.TimeLimit)
	}
	if r.MachineDetection {
		// Enable answers as soon as Twilio knows: the relay keeps talking meanwhile.
		p.SetMachineDetection("Enable")
		p.SetAsyncAmd("true")
		if r.AMDCallback != "" {
			p.SetAsyncAmdStatusCallback(r.AMDCallback)
			p.SetAsyncAmdStatusCallbackMethod(http.MethodPost)
		}
	}
	api, ex, err := t.api(ctx)
	if err != nil {
		return "", err
	}
	c, err := api.CreateCall(p)
	if err != nil {
		return "", t.classify(ctx, "create call", err, ex, true, r.Twiml)
	}
	if c == nil || c.Sid == nil || *c.Sid == "" {
		return "", acceptedUnreadable("create call")
	}
	return *c.Sid, nil
}

// EndCall hangs up an answered call (Status=completed), or cancels one not answered yet
// (canceled: Status=canceled, which leaves an answered call alone). A call that has ended
// already is no error.
func (t *Transport) EndCall(ctx context.Context, sid string, canceled bool) error {
	status := "completed"
	if canceled {
		status = "canceled"
	}
	p := &openapi.UpdateCallParams{}
	p.SetStatus(status)
	_, err := t.updateCall(ctx, "end call", sid, p, "")
	return err
}

// RedirectCall makes the call run twiml now (a voicemail message, a transfer, a hangup),
// ending its relay session without the <Connect> action being posted. A call that has ended
// gives an error wrapping ErrCallNotInProgress.
func (t *Transport) RedirectCall(ctx context.Context, sid, twiml string) error {
	p := &openapi.UpdateCallParams{}
	p.SetTwiml(twiml)
	_, err := t.updateCall(ctx, "redirect call", sid, p, twiml)
	return err
}

func (t *Transport) updateCall(ctx context.Context, op, sid string, p *openapi.UpdateCallParams, secret string) (*openapi.ApiV2010Call, error) {
	if !callSID.MatchString(sid) {
		return nil, fmt.Errorf("twilio: %s: %w", op, ErrCallNotFound)
	}
	api, ex, err := t.api(ctx)
	if err != nil {
		return nil, err
	}
	c, err := api.UpdateCall(sid, p)
	if err != nil {
		return nil, t.classifyCall(ctx, op, err, ex, secret)
	}
	return c, nil
}

// CallInfo is what Twilio says of a call.
type CallInfo struct {
	SID string
	// Status is Twilio's: queued, ringing, in-progress, completed, busy, no-answer, failed, canceled.
	Status string
	// Duration is in seconds, 0 until the call ended.
	Duration   int
	AnsweredBy string
	// Price is as Twilio gives it (a negative decimal, "-0.0130"); "" when not priced yet.
	Price     string
	PriceUnit string
}

// FetchCall reads the call sid.
func (t *Transport) FetchCall(ctx context.Context, sid string) (CallInfo, error) {
	if !callSID.MatchString(sid) {
		return CallInfo{}, fmt.Errorf("twilio: fetch call: %w", ErrCallNotFound)
	}
	api, ex, err := t.api(ctx)
	if err != nil {
		return CallInfo{}, err
	}
	c, err := api.FetchCall(sid, nil)
	if err != nil {
		return CallInfo{}, t.classifyCall(ctx, "fetch call", err, ex, "")
	}
	if c == nil || c.Sid == nil {
		return CallInfo{}, acceptedUnreadable("fetch call")
	}
	info := CallInfo{SID: *c.Sid, Status: deref(c.Status), AnsweredBy: deref(c.AnsweredBy),
		Price: deref(c.Price), PriceUnit: deref(c.PriceUnit)}
	info.Duration, _ = strconv.Atoi(deref(c.Duration))
	return info, nil
}

// classifyCall is classify, with a call Twilio does not know (or can no longer redirect)
// told apart.
func (t *Transport) classifyCall(ctx context.Context, op string, err error, ex *exchange, secret string) error {
	if ctx.Err() == nil {
		status, _ := ex.get()
		var re *client.TwilioRestError
		if errors.As(err, &re) {
			switch {
			case status == http.StatusNotFound || re.Code == 20404:
				return fmt.Errorf("twilio: %s: %w", op, ErrCallNotFound)
			case re.Code == 21220:
				return fmt.Errorf("twilio: %s: %w", op, ErrCallNotInProgress)
			}
		}
	}
	return t.classify(ctx, op, err, ex, true, secret)
}

// CallProgress is a call status callback.
type CallProgress struct {
	CallSID string
	// Status is Twilio's CallStatus verbatim.
	Status string
	// Duration is CallDuration, in seconds (on the final callback).
	Duration   int
	AnsweredBy string
	// Sequence is SequenceNumber, -1 when absent: callbacks may arrive out of order.
	Sequence int
}

// ParseCallProgress reads a call status callback.
func ParseCallProgress(form url.Values) CallProgress {
	p := CallProgress{CallSID: form.Get("CallSid"), Status: form.Get("CallStatus"),
		AnsweredBy: form.Get("AnsweredBy"), Sequence: -1}
	p.Duration, _ = strconv.Atoi(form.Get("CallDuration"))
	if n, err := strconv.Atoi(form.Get("SequenceNumber")); err == nil && n >= 0 {
		p.Sequence = n
	}
	return p
}

// IncomingCall is a call arriving on a number's voice webhook.
type IncomingCall struct {
	CallSID, From, To, Direction, Status string
}

// ParseIncomingCall reads the voice webhook's request; an error when CallSid, From or To is
// missing.
func ParseIncomingCall(form url.Values) (IncomingCall, error) {
	c := IncomingCall{CallSID: form.Get("CallSid"), From: form.Get("From"), To: form.Get("To"),
		Direction: form.Get("Direction"), Status: form.Get("CallStatus")}
	if c.CallSID == "" || c.From == "" || c.To == "" {
		return IncomingCall{}, errors.New("twilio: incoming call without CallSid, From or To")
	}
	return c, nil
}

// RelayEnded is what Twilio posts to the <Connect> action when a relay session ends.
type RelayEnded struct {
	CallSID, CallStatus string
	SessionID           string
	// SessionStatus is ended (the application sent end), failed (the WebSocket dropped or
	// could not be opened) or completed (the caller hung up).
	SessionStatus string
	HandoffData   string
	// ErrorCode and ErrorMessage say why a session failed.
	ErrorCode, ErrorMessage string
	// SessionDuration is in seconds.
	SessionDuration int
}

// ParseRelayEnded reads the <Connect> action's request.
func ParseRelayEnded(form url.Values) RelayEnded {
	e := RelayEnded{CallSID: form.Get("CallSid"), CallStatus: form.Get("CallStatus"),
		SessionID: form.Get("SessionId"), SessionStatus: form.Get("SessionStatus"),
		HandoffData: form.Get("HandoffData"), ErrorCode: form.Get("ErrorCode"), ErrorMessage: form.Get("ErrorMessage")}
	e.SessionDuration, _ = strconv.Atoi(form.Get("SessionDuration"))
	return e
}

// AMDResult is an asynchronous answering machine detection callback.
type AMDResult struct {
	CallSID string
	// AnsweredBy is human, machine_start, machine_end_beep, machine_end_silence,
	// machine_end_other, fax or unknown.
	AnsweredBy string
}

// ParseAMD reads an asynchronous answering machine detection callback.
func ParseAMD(form url.Values) AMDResult {
	return AMDResult{CallSID: form.Get("CallSid"), AnsweredBy: form.Get("AnsweredBy")}
}

// IsMachine reports whether answeredBy is an answering machine or a fax; human and unknown
// are not (an unknown answer is treated as a person, who can still hang up).
func IsMachine(answeredBy string) bool {
	return strings.HasPrefix(answeredBy, "machine_") || answeredBy == "fax"
}
