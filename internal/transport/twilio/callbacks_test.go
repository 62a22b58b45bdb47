package twilio_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// Twilio's documented example of request validation (twilio-php's validation guide, the
// values of https://www.twilio.com/docs/usage/security): auth token 12345.
var (
	docToken     = "12345"
	docURL       = "https://mycompany.com/myapp.php?foo=1&bar=2"
	docSignature = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
	docParams    = url.Values{
		"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+14158675309"}, "Digits": {"1234"},
		"From": {"+14158675309"}, "To": {"+18005551212"},
	}
)

func TestVerifySignatureDocumentedExample(t *testing.T) {
	t.Parallel()
	if !twilio.VerifySignature(docToken, docURL, docParams, docSignature) {
		t.Fatal("Twilio's documented example does not verify")
	}
	// The peer signs as Twilio does: the same signature.
	if got := twiliotest.Sign(docToken, docURL, docParams); got != docSignature {
		t.Fatalf("twiliotest.Sign = %q, want Twilio's %q", got, docSignature)
	}
	tampered := url.Values{}
	for k, v := range docParams {
		tampered[k] = v
	}
	tampered.Set("Digits", "1235")
	cases := []struct {
		name, token, url string
		params           url.Values
		signature        string
	}{
		{"tampered parameter", docToken, docURL, tampered, docSignature},
		{"wrong token", "54321", docURL, docParams, docSignature},
		{"missing signature", docToken, docURL, docParams, ""},
		{"empty token", "", docURL, docParams, docSignature},
		{"other URL", docToken, "https://mycompany.com/myapp.php?foo=1&bar=3", docParams, docSignature},
		{"garbage signature", docToken, docURL, docParams, "not base64!"},
	}
	for _, c := range cases {
		if twilio.VerifySignature(c.token, c.url, c.params, c.signature) {
			t.Errorf("%s: verified", c.name)
		}
	}
}

func TestVerifySignatureOfPeerCallbacks(t *testing.T) {
	t.Parallel()
	_, tr := newTransport(t)
	var got []url.Values
	var headers []string
	var fullURL string
	done := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		fullURL = "http://" + r.Host + r.URL.RequestURI()
		got = append(got, r.PostForm)
		headers = append(headers, r.Header.Get(twilio.SignatureHeader))
		done <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	if _, err := tr.Send(context.Background(), transport.Outbound{Channel: "sms", To: "+14155550130", From: "+15017122661",
		Text: "hi", StatusCallback: srv.URL + "/status?tenant=a%20b"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("no callback")
		}
	}
	for i, form := range got {
		if !twilio.VerifySignature(twiliotest.AuthToken, fullURL, form, headers[i]) {
			t.Fatalf("callback %d %v: signature refused", i, form)
		}
		tampered := url.Values{}
		for k, v := range form {
			tampered[k] = v
		}
		tampered.Set("MessageStatus", "delivered")
		tampered.Set("ErrorCode", "0")
		if twilio.VerifySignature(twiliotest.AuthToken, fullURL, tampered, headers[i]) {
			t.Errorf("callback %d: a tampered copy verified", i)
		}
		if twilio.VerifySignature("ffffffffffffffffffffffffffffffff", fullURL, form, headers[i]) {
			t.Errorf("callback %d: verified with another token", i)
		}
		if twilio.VerifySignature(twiliotest.AuthToken, fullURL, form, "") {
			t.Errorf("callback %d: verified without a signature", i)
		}
	}
}

func TestParseMessageStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status, errorCode string
		want              string
		failure           string
		provider          string
	}{
		{"accepted", "", "", "", ""},
		{"queued", "", "", "", ""},
		{"sending", "", "", "", ""},
		{"scheduled", "", "", "", ""},
		{"sent", "", transport.StatusSent, "", ""},
		{"delivered", "", transport.StatusDelivered, "", ""},
		{"read", "", transport.StatusRead, "", ""},
		{"undelivered", "30003", transport.StatusFailed, twilio.CodeRecipientUnreachable, "30003"},
		{"undelivered", "30007", transport.StatusFailed, twilio.CodeCarrierFiltered, "30007"},
		{"failed", "30008", transport.StatusFailed, twilio.CodeDeliveryFailed, "30008"},
		{"failed", "21610", transport.StatusFailed, twilio.CodeRecipientUnsubscribed, "21610"},
		{"failed", "", transport.StatusFailed, twilio.CodeDeliveryFailed, ""},
		{"undelivered", "39999", transport.StatusFailed, twilio.CodeProviderRejected, "39999"},
	}
	for _, c := range cases {
		form := url.Values{"MessageSid": {"SM1"}, "MessageStatus": {c.status}}
		if c.errorCode != "" {
			form.Set("ErrorCode", c.errorCode)
		}
		u := twilio.ParseMessageStatus(form)
		if u.ProviderMessageID != "SM1" || u.Status != c.want {
			t.Errorf("%s %s: %+v, want status %q", c.status, c.errorCode, u, c.want)
			continue
		}
		switch {
		case c.failure == "" && u.Failure != nil:
			t.Errorf("%s: failure %+v, want none", c.status, u.Failure)
		case c.failure != "" && (u.Failure == nil || u.Failure.Code != c.failure || u.Failure.ProviderCode != c.provider):
			t.Errorf("%s %s: failure %+v, want %s (%s)", c.status, c.errorCode, u.Failure, c.failure, c.provider)
		}
	}
}

func TestParseCallStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status, want, failure string
	}{
		{"queued", "", ""},
		{"initiated", "", ""},
		{"ringing", "", ""},
		{"in-progress", transport.StatusSent, ""},
		{"completed", transport.StatusDelivered, ""},
		{"busy", transport.StatusFailed, twilio.CodeVoiceBusy},
		{"no-answer", transport.StatusFailed, twilio.CodeVoiceNoAnswer},
		{"canceled", transport.StatusFailed, twilio.CodeVoiceFailed},
		{"failed", transport.StatusFailed, twilio.CodeVoiceFailed},
	}
	for _, c := range cases {
		u := twilio.ParseCallStatus(url.Values{"CallSid": {"CA1"}, "CallStatus": {c.status}})
		gotFailure := ""
		if u.Failure != nil {
			gotFailure = u.Failure.Code
		}
		if u.ProviderMessageID != "CA1" || u.Status != c.want || gotFailure != c.failure {
			t.Errorf("%s: %+v (%+v), want %q %q", c.status, u, u.Failure, c.want, c.failure)
		}
	}
}

func TestParseInbound(t *testing.T) {
	t.Parallel()
	base := func(extra url.Values) url.Values {
		f := url.Values{"From": {"+14155550140"}, "To": {"+15017122661"}, "Body": {"Hello"}, "MessageSid": {"SM9"}, "NumMedia": {"0"}}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	cases := []struct {
		name string
		form url.Values
		want transport.Inbound
		err  bool
	}{
		{name: "sms", form: base(nil), want: transport.Inbound{Channel: "sms", From: "+14155550140", To: "+15017122661",
			MessageType: "text", Text: "Hello", ProviderMessageID: "SM9"}},
		{name: "image", form: base(url.Values{"NumMedia": {"2"}, "MessageSid": {"MM9"}, "MediaContentType0": {"image/jpeg"},
			"MediaUrl0": {"https://api.twilio.com/m/0"}, "MediaContentType1": {"video/mp4"}, "MediaUrl1": {"https://api.twilio.com/m/1"}}),
			want: transport.Inbound{Channel: "sms", From: "+14155550140", To: "+15017122661", MessageType: "image", Text: "Hello",
				ProviderMessageID: "MM9", Content: &transport.Content{MediaURL: "https://api.twilio.com/m/0", MimeType: "image/jpeg"}}},
		{name: "pdf", form: base(url.Values{"NumMedia": {"1"}, "MediaContentType0": {"application/pdf"}, "MediaUrl0": {"https://x/0"}}),
			want: transport.Inbound{Channel: "sms", From: "+14155550140", To: "+15017122661", MessageType: "document", Text: "Hello",
				ProviderMessageID: "SM9", Content: &transport.Content{MediaURL: "https://x/0", MimeType: "application/pdf"}}},
		{name: "audio", form: base(url.Values{"NumMedia": {"1"}, "MediaContentType0": {"audio/amr"}, "MediaUrl0": {"https://x/0"}}),
			want: transport.Inbound{Channel: "sms", From: "+14155550140", To: "+15017122661", MessageType: "audio", Text: "Hello",
				ProviderMessageID: "SM9", Content: &transport.Content{MediaURL: "https://x/0", MimeType: "audio/amr"}}},
		{name: "no sid", form: base(url.Values{"MessageSid": {""}}), err: true},
		{name: "no from", form: base(url.Values{"From": {""}}), err: true},
		{name: "whatsapp", form: base(url.Values{"From": {"whatsapp:+14155550140"}}), err: true},
	}
	for _, c := range cases {
		got, err := twilio.ParseInbound(c.form)
		if c.err {
			if err == nil {
				t.Errorf("%s: no error", c.name)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v (%+v), %v; want %+v (%+v)", c.name, got, got.Content, err, c.want, c.want.Content)
		}
	}
}

// TestInboundThroughTheWebhook: the peer posts an MMS as Twilio would; the webhook verifies it,
// parses it and answers empty TwiML.
func TestInboundThroughTheWebhook(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	got := make(chan transport.Inbound, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if !twilio.VerifySignature(twiliotest.AuthToken, "http://"+r.Host+r.URL.RequestURI(), r.PostForm, r.Header.Get(twilio.SignatureHeader)) {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		in, err := twilio.ParseInbound(r.PostForm)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- in
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(twilio.EmptyTwiML))
	}))
	t.Cleanup(srv.Close)
	status, body, err := peer.SendInbound(context.Background(), srv.URL+"/twilio/inbound", "+14155550150", "+15017122661", "look",
		twiliotest.Media{URL: "https://api.twilio.com/media/1", ContentType: "image/png"})
	if err != nil || status != 200 || body != twilio.EmptyTwiML {
		t.Fatalf("SendInbound = %d %q, %v", status, body, err)
	}
	in := <-got
	if in.From != "+14155550150" || in.To != "+15017122661" || in.Text != "look" || in.MessageType != "image" ||
		in.Content == nil || in.Content.MediaURL != "https://api.twilio.com/media/1" || len(in.ProviderMessageID) != 34 {
		t.Fatalf("inbound = %+v (%+v)", in, in.Content)
	}
}

func TestOptOutKeyword(t *testing.T) {
	t.Parallel()
	cases := map[string][2]bool{
		"STOP": {true, false}, "stop": {true, false}, "  Stop \n": {true, false}, "STOPALL": {true, false},
		"unsubscribe": {true, false}, "CANCEL": {true, false}, "end": {true, false}, "Quit": {true, false},
		"START": {false, true}, "yes": {false, true}, "Unstop": {false, true},
		"stop please": {false, false}, "please stop": {false, false}, "HELP": {false, false}, "": {false, false},
		"STOP!": {false, false},
	}
	for body, want := range cases {
		out, in := twilio.OptOutKeyword(body)
		if out != want[0] || in != want[1] {
			t.Errorf("OptOutKeyword(%q) = %v, %v; want %v, %v", body, out, in, want[0], want[1])
		}
	}
	// Advanced Opt-Out names the type itself, for custom keywords.
	if out, _ := twilio.OptOut(url.Values{"Body": {"BAJA"}, "OptOutType": {"STOP"}}); !out {
		t.Error("OptOutType STOP is not an opt-out")
	}
	if out, in := twilio.OptOut(url.Values{"Body": {"stop"}}); !out || in {
		t.Error("a plain STOP is not an opt-out")
	}
}

func TestPeerPostsOnlyToLoopback(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	peer.SetCallbackDelay(time.Millisecond)
	if _, _, err := peer.SendInbound(context.Background(), "http://example.com/hook", "+14155550160", "+15017122661", "hi"); !errors.Is(err, twiliotest.ErrNotLoopback) {
		t.Fatalf("SendInbound to example.com: %v, want ErrNotLoopback", err)
	}
	if _, err := tr.Send(context.Background(), transport.Outbound{Channel: "sms", To: "+14155550160", From: "+15017122661",
		Text: "hi", StatusCallback: "http://192.0.2.1/status"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(peer.Callbacks()) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cbs := peer.Callbacks()
	if len(cbs) != 2 {
		t.Fatalf("callbacks = %+v, want 2 refused", cbs)
	}
	for _, cb := range cbs {
		if !errors.Is(cb.Err, twiliotest.ErrNotLoopback) || cb.Status != 0 {
			t.Errorf("callback to %s: %+v, want refused", cb.URL, cb)
		}
	}
}
