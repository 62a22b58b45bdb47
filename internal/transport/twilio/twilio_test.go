package twilio_test

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

const serviceSID = "MG0123456789abcdef0123456789abcdef"

func newTransport(t *testing.T) (*twiliotest.Server, *twilio.Transport) {
	t.Helper()
	peer := twiliotest.NewServer(t)
	return peer, twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken})
}

// post is one request the receiver got: its form and whether its signature verified.
type post struct {
	form  url.Values
	valid bool
}

// newReceiver is the application's side of the callbacks: it verifies each request's signature
// as the real handler would and hands the request on.
func newReceiver(t *testing.T) (string, <-chan post) {
	t.Helper()
	ch := make(chan post, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		full := "http://" + r.Host + r.URL.RequestURI()
		ok := twilio.VerifySignature(twiliotest.AuthToken, full, r.PostForm, r.Header.Get(twilio.SignatureHeader))
		select {
		case ch <- post{form: r.PostForm, valid: ok}:
		default:
		}
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(twilio.EmptyTwiML))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

func next(t *testing.T, ch <-chan post) post {
	t.Helper()
	select {
	case p := <-ch:
		if !p.valid {
			t.Fatalf("callback %v: signature did not verify", p.form)
		}
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no callback within 5s")
	}
	return post{}
}

func TestChannels(t *testing.T) {
	t.Parallel()
	got := twilio.New(twilio.Config{}).Channels()
	if want := []string{"sms", "sms_oneway", "voice"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Channels() = %v, want %v", got, want)
	}
}

func TestSendSMSReportsSentThenDelivered(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	cbURL, posts := newReceiver(t)
	cb := cbURL + "/twilio/status?message=msg_1"
	res, err := tr.Send(context.Background(), transport.Outbound{
		Channel: "sms", MessageType: "text", To: "+14155550100", From: "+15017122661", Text: "Your code is 1234", StatusCallback: cb,
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if !strings.HasPrefix(res.ProviderMessageID, "SM") || len(res.ProviderMessageID) != 34 {
		t.Fatalf("ProviderMessageID = %q, want an SM… sid", res.ProviderMessageID)
	}
	msgs := peer.Messages()
	want := twiliotest.Message{SID: res.ProviderMessageID, To: "+14155550100", From: "+15017122661", Body: "Your code is 1234", StatusCallback: cb}
	if len(msgs) == 1 && !msgs[0].Received.IsZero() {
		// When, and where it stands at Twilio (queued, then sent as its callbacks go), not what.
		msgs[0].Received, msgs[0].Status = time.Time{}, ""
	}
	if len(msgs) != 1 || !reflect.DeepEqual(msgs[0], want) {
		t.Fatalf("Twilio got %+v, want [%+v]", msgs, want)
	}
	for _, status := range []string{transport.StatusSent, transport.StatusDelivered} {
		u := twilio.ParseMessageStatus(next(t, posts).form)
		if u.ProviderMessageID != res.ProviderMessageID || u.Status != status || u.Failure != nil {
			t.Fatalf("callback = %+v, want %s of %s", u, status, res.ProviderMessageID)
		}
	}
}

func TestSendSMSUndelivered(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	cbURL, posts := newReceiver(t)
	peer.FailDelivery("+14155550101", 30003)
	res, err := tr.Send(context.Background(), transport.Outbound{
		Channel: "sms", To: "+14155550101", From: "+15017122661", Text: "hi", StatusCallback: cbURL + "/status",
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if u := twilio.ParseMessageStatus(next(t, posts).form); u.Status != transport.StatusSent {
		t.Fatalf("first callback = %+v, want sent", u)
	}
	u := twilio.ParseMessageStatus(next(t, posts).form)
	if u.ProviderMessageID != res.ProviderMessageID || u.Status != transport.StatusFailed || u.Failure == nil ||
		u.Failure.Code != twilio.CodeRecipientUnreachable || u.Failure.ProviderCode != "30003" {
		t.Fatalf("second callback = %+v (%+v), want failed RECIPIENT_UNREACHABLE 30003", u, u.Failure)
	}
}

func TestSendOneWay(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	cases := []struct {
		name, from, to      string
		wantFrom, wantMGSID string
	}{
		{"alphanumeric sender id", "ACME", "+447700900123", "ACME", ""},
		{"messaging service", serviceSID, "+14155550102", "", serviceSID},
		{"sender id that starts with MG", "MGM Resorts", "+447700900124", "MGM Resorts", ""},
	}
	for _, c := range cases {
		res, err := tr.Send(context.Background(), transport.Outbound{Channel: "sms_oneway", To: c.to, From: c.from, Text: "Sale ends today"})
		if err != nil {
			t.Fatalf("%s: Send: %v", c.name, err)
		}
		var got *twiliotest.Message
		for _, m := range peer.Messages() {
			if m.SID == res.ProviderMessageID {
				got = &m
			}
		}
		if got == nil || got.From != c.wantFrom || got.MessagingServiceSID != c.wantMGSID || got.To != c.to {
			t.Errorf("%s: Twilio got %+v, want From %q MessagingServiceSid %q", c.name, got, c.wantFrom, c.wantMGSID)
		}
	}
	// Twilio refuses an alphanumeric sender id to the US and Canada.
	_, err := tr.Send(context.Background(), transport.Outbound{Channel: "sms_oneway", To: "+14155550103", From: "ACME", Text: "x"})
	if f := transport.AsFailure(err); f == nil || f.Code != twilio.CodeDestinationNotReachable || f.ProviderCode != "21612" {
		t.Fatalf("alphanumeric to +1: %v, want DESTINATION_NOT_REACHABLE (21612)", err)
	}
}

func TestSendMMS(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	res, err := tr.Send(context.Background(), transport.Outbound{
		Channel: "sms", MessageType: "image", To: "+14155550104", From: "+15017122661", Text: "caption",
		Content: &transport.Content{MediaURL: "https://cdn.example.com/a.jpg"},
	})
	if err != nil {
		t.Fatalf("MMS to +1: %v", err)
	}
	msgs := peer.Messages()
	if !strings.HasPrefix(res.ProviderMessageID, "MM") || len(msgs) != 1 ||
		!reflect.DeepEqual(msgs[0].MediaURLs, []string{"https://cdn.example.com/a.jpg"}) || msgs[0].Body != "caption" {
		t.Fatalf("MMS: result %+v, Twilio got %+v", res, msgs)
	}

	refused := []struct {
		name string
		m    transport.Outbound
		code string
	}{
		{"image to +44", transport.Outbound{Channel: "sms", MessageType: "image", To: "+447700900125", From: "+15017122661",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/a.jpg"}}, twilio.CodeMMSUnsupportedDestination},
		{"document by media id", transport.Outbound{Channel: "sms", MessageType: "document", To: "+14155550105", From: "+15017122661",
			Content: &transport.Content{MediaID: "m_1"}}, twilio.CodeMediaURLRequired},
		{"location", transport.Outbound{Channel: "sms", MessageType: "location", To: "+14155550105", From: "+15017122661"},
			twilio.CodeMessageTypeUnsupported},
		{"email channel", transport.Outbound{Channel: "email", To: "a@example.com"}, twilio.CodeChannelUnsupported},
	}
	for _, c := range refused {
		_, err := tr.Send(context.Background(), c.m)
		if f := transport.AsFailure(err); f == nil || f.Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	if n := len(peer.Messages()); n != 1 {
		t.Fatalf("refused sends reached Twilio: %d messages", n)
	}
}

// say is the TwiML a voice message sends.
type say struct {
	XMLName xml.Name `xml:"Response"`
	Say     struct {
		Language string `xml:"language,attr"`
		Text     string `xml:",chardata"`
	} `xml:"Say"`
}

func TestSendVoice(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	cbURL, _ := newReceiver(t)
	cases := []struct {
		name, to, lang, text, wantLang string
	}{
		{"explicit language", "+33612345678", "es-MX", "Su cita es mañana", "es-MX"},
		{"inferred from +33", "+33612345679", "", "Votre rendez-vous est demain", "fr-FR"},
		{"inferred from +351", "+351912345678", "", "A sua consulta é amanhã", "pt-PT"},
		{"no entry: en-US", "+998901234567", "", "Hello", "en-US"},
		{"escaped", "+14155550106", "", `Tom & Jerry say "<hi>" it's </Say><Play>x</Play>`, "en-US"},
	}
	for _, c := range cases {
		res, err := tr.Send(context.Background(), transport.Outbound{Channel: "voice", To: c.to, From: "+15017122661",
			Text: c.text, VoiceLanguage: c.lang, StatusCallback: cbURL + "/call-status"})
		if err != nil {
			t.Fatalf("%s: Send: %v", c.name, err)
		}
		var call *twiliotest.Call
		for _, k := range peer.Calls() {
			if k.SID == res.ProviderMessageID {
				call = &k
			}
		}
		if !strings.HasPrefix(res.ProviderMessageID, "CA") || call == nil {
			t.Fatalf("%s: result %+v, Twilio has no such call", c.name, res)
		}
		var doc say
		if err := xml.Unmarshal([]byte(call.Twiml), &doc); err != nil {
			t.Fatalf("%s: TwiML %q: %v", c.name, call.Twiml, err)
		}
		if doc.Say.Language != c.wantLang || doc.Say.Text != c.text {
			t.Errorf("%s: TwiML %q says %q in %q, want %q in %q", c.name, call.Twiml, doc.Say.Text, doc.Say.Language, c.text, c.wantLang)
		}
		if want := []string{"initiated", "ringing", "answered", "completed"}; !reflect.DeepEqual(call.StatusCallbackEvents, want) {
			t.Errorf("%s: StatusCallbackEvent = %v, want %v", c.name, call.StatusCallbackEvents, want)
		}
	}
	_, err := tr.Send(context.Background(), transport.Outbound{Channel: "voice", To: "+14155550107", From: "+15017122661",
		Text: strings.Repeat("a", 4000)})
	if f := transport.AsFailure(err); f == nil || f.Code != twilio.CodeVoiceTextTooLong {
		t.Fatalf("4,000 characters: %v, want VOICE_TEXT_TOO_LONG", err)
	}
}

func TestVoiceCallbacks(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	peer.SetCallbackDelay(10 * time.Millisecond)
	peer.CallOutcome("+14155550109", "busy")
	cases := []struct {
		to   string
		want []string // Status of each callback, "" for no change
		code string   // Failure.Code of the last one
	}{
		{"+14155550108", []string{"", "", transport.StatusSent, transport.StatusDelivered}, ""},
		{"+14155550109", []string{"", "", transport.StatusFailed}, twilio.CodeVoiceBusy},
	}
	for _, c := range cases {
		cbURL, posts := newReceiver(t)
		res, err := tr.Send(context.Background(), transport.Outbound{Channel: "voice", To: c.to, From: "+15017122661",
			Text: "Hello", StatusCallback: cbURL + "/call-status"})
		if err != nil {
			t.Fatalf("%s: Send: %v", c.to, err)
		}
		for i, want := range c.want {
			u := twilio.ParseCallStatus(next(t, posts).form)
			if u.ProviderMessageID != res.ProviderMessageID || u.Status != want {
				t.Fatalf("%s: callback %d = %+v, want status %q", c.to, i, u, want)
			}
			if i == len(c.want)-1 && c.code != "" && (u.Failure == nil || u.Failure.Code != c.code) {
				t.Fatalf("%s: last callback failure %+v, want %s", c.to, u.Failure, c.code)
			}
		}
	}
}
