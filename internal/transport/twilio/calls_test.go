package twilio_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

const unknownCall = "CAffffffffffffffffffffffffffffffff"

func TestPlaceCallSendsTheRequest(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	twiml := twilio.ConversationRelayTwiML(twilio.RelayOptions{URL: "ws://127.0.0.1:1/relay?call=abc", Action: "http://127.0.0.1:1/action"})
	// The relay is never reached: the call fails before it is answered.
	peer.CallOutcome("+14155550301", "no-answer")
	sid, err := tr.PlaceCall(context.Background(), twilio.CallRequest{To: "+14155550301", From: "+15017122661", Twiml: twiml,
		StatusCallback: "http://127.0.0.1:1/status", TimeLimit: 600, MachineDetection: true, AMDCallback: "http://127.0.0.1:1/amd"})
	if err != nil || !strings.HasPrefix(sid, "CA") {
		t.Fatalf("PlaceCall = %q, %v", sid, err)
	}
	c := peer.Calls()[0]
	if c.SID != sid || c.Twiml != twiml || c.TimeLimit != 600 || c.MachineDetection != "Enable" || !c.AsyncAmd ||
		c.AsyncAmdStatusCallback != "http://127.0.0.1:1/amd" || c.StatusCallback != "http://127.0.0.1:1/status" ||
		c.RelayURL != "ws://127.0.0.1:1/relay?call=abc" || c.RelayAction != "http://127.0.0.1:1/action" ||
		!reflect.DeepEqual(c.StatusCallbackEvents, []string{"initiated", "ringing", "answered", "completed"}) {
		t.Fatalf("Twilio received %+v", c)
	}

	// Neither without a status callback nor without detection are they asked for.
	if _, err := tr.PlaceCall(context.Background(), twilio.CallRequest{To: "+14155550301", From: "+15017122661", Twiml: twiml}); err != nil {
		t.Fatal(err)
	}
	if c := peer.Calls()[1]; c.StatusCallback != "" || c.StatusCallbackEvents != nil || c.MachineDetection != "" || c.AsyncAmd || c.TimeLimit != 0 {
		t.Fatalf("Twilio received %+v", c)
	}
}

func TestPlaceCallRefusals(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	twiml := twilio.ConversationRelayTwiML(twilio.RelayOptions{URL: "ws://127.0.0.1:1/relay?secret=s3cr3t-value"})
	peer.Fail("+2348012345678", 21215, http.StatusBadRequest)
	_, err := tr.PlaceCall(context.Background(), twilio.CallRequest{To: "+2348012345678", From: "+15017122661", Twiml: twiml})
	if f := transport.AsFailure(err); f == nil || f.Code != twilio.CodeVoiceRouteUnavailable || f.ProviderCode != "21215" {
		t.Fatalf("no route: %v, want VOICE_ROUTE_UNAVAILABLE", err)
	}
	peer.Storm(1, http.StatusServiceUnavailable)
	_, err = tr.PlaceCall(context.Background(), twilio.CallRequest{To: "+14155550302", From: "+15017122661", Twiml: twiml})
	var tmp *transport.Temporary
	if !errors.As(err, &tmp) {
		t.Fatalf("503: %v, want Temporary", err)
	}
	bad := twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: "ffffffffffffffffffffffffffffffff"})
	_, err = bad.FetchCall(context.Background(), unknownCall)
	if f := transport.AsFailure(err); f == nil || f.Code != twilio.CodeProviderAuthFailed || errors.Is(err, twilio.ErrCallNotFound) {
		t.Fatalf("bad credentials: %v, want PROVIDER_AUTH_FAILED", err)
	}
	if err := bad.RedirectCall(context.Background(), unknownCall, twiml); err == nil || strings.Contains(err.Error(), "s3cr3t") ||
		strings.Contains(err.Error(), "ffffffffffffffffffffffffffffffff") {
		t.Fatalf("redirect with bad credentials: %v", err)
	}
}

func TestCallNotFound(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	ctx := context.Background()
	for _, sid := range []string{unknownCall, "CA123", "../Messages", ""} {
		if _, err := tr.FetchCall(ctx, sid); !errors.Is(err, twilio.ErrCallNotFound) {
			t.Errorf("FetchCall(%q) = %v, want ErrCallNotFound", sid, err)
		}
		if err := tr.EndCall(ctx, sid, false); !errors.Is(err, twilio.ErrCallNotFound) {
			t.Errorf("EndCall(%q) = %v, want ErrCallNotFound", sid, err)
		}
		if err := tr.RedirectCall(ctx, sid, twilio.HangupTwiML("", "")); !errors.Is(err, twilio.ErrCallNotFound) {
			t.Errorf("RedirectCall(%q) = %v, want ErrCallNotFound", sid, err)
		}
	}
	if n := len(peer.Calls()); n != 0 {
		t.Fatalf("%d calls", n)
	}
}

// TestEndAndFetchAVoiceMessage: a call is fetched as it goes, and ending a completed call is no
// error and changes nothing.
func TestEndAndFetchAVoiceMessage(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	peer.SetCallbackDelay(20 * time.Millisecond)
	ctx := context.Background()
	cbURL, posts := newReceiver(t)
	sid, err := tr.PlaceCall(ctx, twilio.CallRequest{To: "+14155550303", From: "+15017122661",
		Twiml: twilio.SayTwiML("hi", "en-US"), StatusCallback: cbURL + "/call-status"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := tr.FetchCall(ctx, sid)
	if err != nil || info.SID != sid || (info.Status != "queued" && info.Status != "initiated") || info.Duration != 0 || info.Price != "" || info.PriceUnit != "USD" {
		t.Fatalf("FetchCall queued = %+v, %v", info, err)
	}
	var statuses []string
	for {
		p := twilio.ParseCallProgress(next(t, posts).form)
		statuses = append(statuses, p.Status)
		if p.Status == "completed" {
			if p.Duration < 1 || p.Sequence != 3 {
				t.Errorf("final callback = %+v", p)
			}
			break
		}
	}
	if want := []string{"initiated", "ringing", "in-progress", "completed"}; !reflect.DeepEqual(statuses, want) {
		t.Fatalf("callbacks = %v, want %v", statuses, want)
	}
	info, err = tr.FetchCall(ctx, sid)
	if err != nil || info.Status != "completed" || info.Duration < 1 || info.Price != "-0.0130" {
		t.Fatalf("FetchCall completed = %+v, %v", info, err)
	}
	if err := tr.EndCall(ctx, sid, false); err != nil {
		t.Fatalf("EndCall on a completed call: %v", err)
	}
	if err := tr.EndCall(ctx, sid, true); err != nil {
		t.Fatalf("cancel a completed call: %v", err)
	}
	if after, _ := tr.FetchCall(ctx, sid); after != info {
		t.Fatalf("after EndCall: %+v, want %+v", after, info)
	}
}

func TestParseCallProgress(t *testing.T) {
	t.Parallel()
	got := twilio.ParseCallProgress(url.Values{"CallSid": {"CA1"}, "CallStatus": {"completed"}, "CallDuration": {"42"},
		"Duration": {"1"}, "AnsweredBy": {"human"}, "SequenceNumber": {"3"}})
	if want := (twilio.CallProgress{CallSID: "CA1", Status: "completed", Duration: 42, AnsweredBy: "human", Sequence: 3}); got != want {
		t.Errorf("ParseCallProgress = %+v, want %+v", got, want)
	}
	got = twilio.ParseCallProgress(url.Values{"CallSid": {"CA1"}, "CallStatus": {"ringing"}})
	if want := (twilio.CallProgress{CallSID: "CA1", Status: "ringing", Sequence: -1}); got != want {
		t.Errorf("ParseCallProgress without sequence = %+v, want %+v", got, want)
	}
}

func TestParseIncomingCall(t *testing.T) {
	t.Parallel()
	form := url.Values{"CallSid": {"CA1"}, "From": {"+14155550100"}, "To": {"+15017122661"}, "Direction": {"inbound"}, "CallStatus": {"ringing"}}
	got, err := twilio.ParseIncomingCall(form)
	if want := (twilio.IncomingCall{CallSID: "CA1", From: "+14155550100", To: "+15017122661", Direction: "inbound", Status: "ringing"}); err != nil || got != want {
		t.Errorf("ParseIncomingCall = %+v, %v", got, err)
	}
	for _, k := range []string{"CallSid", "From", "To"} {
		f := url.Values{}
		for key, v := range form {
			if key != k {
				f[key] = v
			}
		}
		if _, err := twilio.ParseIncomingCall(f); err == nil {
			t.Errorf("without %s: no error", k)
		}
	}
}

func TestParseRelayEndedAndAMD(t *testing.T) {
	t.Parallel()
	got := twilio.ParseRelayEnded(url.Values{"CallSid": {"CA1"}, "CallStatus": {"in-progress"}, "SessionId": {"VX1"},
		"SessionStatus": {"failed"}, "SessionDuration": {"17"}, "ErrorCode": {"64105"}, "ErrorMessage": {"closed"}, "HandoffData": {"{}"}})
	want := twilio.RelayEnded{CallSID: "CA1", CallStatus: "in-progress", SessionID: "VX1", SessionStatus: "failed",
		HandoffData: "{}", ErrorCode: "64105", ErrorMessage: "closed", SessionDuration: 17}
	if got != want {
		t.Errorf("ParseRelayEnded = %+v, want %+v", got, want)
	}
	if got := twilio.ParseAMD(url.Values{"CallSid": {"CA1"}, "AnsweredBy": {"fax"}, "MachineDetectionDuration": {"900"}}); got != (twilio.AMDResult{CallSID: "CA1", AnsweredBy: "fax"}) {
		t.Errorf("ParseAMD = %+v", got)
	}
	cases := map[string]bool{"human": false, "unknown": false, "": false, "machine_start": true, "machine_end_beep": true,
		"machine_end_silence": true, "machine_end_other": true, "fax": true}
	for by, want := range cases {
		if got := twilio.IsMachine(by); got != want {
			t.Errorf("IsMachine(%q) = %v, want %v", by, got, want)
		}
	}
}
