package twilio_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// TestSendErrors sends to a peer set up to refuse and checks how each refusal classifies:
// Temporary (tried again, with Retry-After), Failure (with its errorCode and Twilio's code), or
// another error.
func TestSendErrors(t *testing.T) {
	t.Parallel()
	const to = "+14155550123"
	cases := []struct {
		name       string
		setup      func(*twiliotest.Server)
		channel    string
		token      string // auth token; the peer's when empty
		temporary  bool
		retryAfter time.Duration
		code       string // Failure.Code, when permanent
		provider   string
	}{
		{name: "429", setup: func(p *twiliotest.Server) { p.Storm(1, 429) }, temporary: true, retryAfter: twiliotest.StormRetryAfter, provider: "20429"},
		{name: "500", setup: func(p *twiliotest.Server) { p.Storm(1, 500) }, temporary: true, provider: "20500"},
		{name: "503 on a call", setup: func(p *twiliotest.Server) { p.Storm(1, 503) }, channel: "voice", temporary: true, provider: "20503"},
		{name: "queue full (400)", setup: func(p *twiliotest.Server) { p.Fail(to, 21611, 400) }, temporary: true, provider: "21611"},
		{name: "21610 STOP", setup: func(p *twiliotest.Server) { p.Fail(to, 21610, 400) }, code: twilio.CodeRecipientUnsubscribed, provider: "21610"},
		{name: "21211", setup: func(p *twiliotest.Server) { p.Fail(to, 21211, 400) }, code: twilio.CodeInvalidRecipient, provider: "21211"},
		{name: "21408 sms", setup: func(p *twiliotest.Server) { p.Fail(to, 21408, 400) }, code: twilio.CodeDestinationNotReachable, provider: "21408"},
		{name: "21215 call", setup: func(p *twiliotest.Server) { p.Fail(to, 21215, 400) }, channel: "voice", code: twilio.CodeVoiceRouteUnavailable, provider: "21215"},
		{name: "13227 call", setup: func(p *twiliotest.Server) { p.Fail(to, 13227, 400) }, channel: "voice", code: twilio.CodeVoiceRouteUnavailable, provider: "13227"},
		{name: "21606", setup: func(p *twiliotest.Server) { p.Fail(to, 21606, 400) }, code: twilio.CodeSenderNotCapable, provider: "21606"},
		{name: "30034", setup: func(p *twiliotest.Server) { p.Fail(to, 30034, 400) }, code: twilio.CodeTenDLCRequired, provider: "30034"},
		{name: "unknown code", setup: func(p *twiliotest.Server) { p.Fail(to, 21999, 400) }, code: twilio.CodeProviderRejected, provider: "21999"},
		{name: "wrong token", token: "00000000000000000000000000000000", code: twilio.CodeProviderAuthFailed, provider: "20003"},
		{name: "403", setup: func(p *twiliotest.Server) { p.Fail(to, 20003, 403) }, code: twilio.CodeProviderAuthFailed, provider: "20003"},
		{name: "token with characters the SDK refuses", token: "not/a+token", code: twilio.CodeProviderAuthFailed, provider: "21224"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			peer := twiliotest.NewServer(t)
			if c.setup != nil {
				c.setup(peer)
			}
			token := c.token
			if token == "" {
				token = twiliotest.AuthToken
			}
			tr := twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: token})
			channel := c.channel
			if channel == "" {
				channel = "sms"
			}
			_, err := tr.Send(context.Background(), transport.Outbound{Channel: channel, To: to, From: "+15017122661", Text: "hello"})
			if err == nil {
				t.Fatal("Send succeeded")
			}
			var tmp *transport.Temporary
			if c.temporary {
				if !errors.As(err, &tmp) || tmp.RetryAfter != c.retryAfter || tmp.ProviderCode != c.provider {
					t.Fatalf("err = %#v, want Temporary (RetryAfter %v, ProviderCode %s)", err, c.retryAfter, c.provider)
				}
				if transport.AsFailure(err) != nil {
					t.Fatalf("a temporary refusal is also a Failure: %v", err)
				}
				return
			}
			f := transport.AsFailure(err)
			if f == nil || f.Code != c.code || f.ProviderCode != c.provider || errors.As(err, &tmp) {
				t.Fatalf("err = %#v, want Failure %s (provider code %s)", err, c.code, c.provider)
			}
		})
	}
}

// TestSendUnusualAnswers: what is not Twilio's JSON error.
func TestSendUnusualAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    string // temporary, failure:<code>, other
		waitFor time.Duration
	}{
		{name: "gateway 502 html", status: 502, body: "<html>bad gateway</html>", want: "temporary"},
		{name: "429 retry-after date", status: 429, header: map[string]string{"Retry-After": "DATE"}, body: "slow down", want: "temporary", waitFor: time.Minute},
		{name: "proxy 404 html", status: 404, body: "<html>not found</html>", want: "other"},
		{name: "201 unreadable", status: 201, body: "{not json", want: "failure:" + twilio.CodeProviderResponseInvalid},
		{name: "201 without sid", status: 201, body: `{"status":"queued"}`, want: "failure:" + twilio.CodeProviderResponseInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range c.header {
					if v == "DATE" {
						v = time.Now().Add(time.Minute).UTC().Format(http.TimeFormat)
					}
					w.Header().Set(k, v)
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			t.Cleanup(srv.Close)
			tr := twilio.New(twilio.Config{BaseURL: srv.URL, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken})
			_, err := tr.Send(context.Background(), transport.Outbound{Channel: "sms", To: "+14155550123", From: "+15017122661", Text: "hi"})
			var tmp *transport.Temporary
			f := transport.AsFailure(err)
			switch {
			case c.want == "temporary":
				if !errors.As(err, &tmp) {
					t.Fatalf("err = %v, want Temporary", err)
				}
				if c.waitFor != 0 && (tmp.RetryAfter < c.waitFor-5*time.Second || tmp.RetryAfter > c.waitFor) {
					t.Fatalf("RetryAfter = %v, want about %v", tmp.RetryAfter, c.waitFor)
				}
			case strings.HasPrefix(c.want, "failure:"):
				if f == nil || f.Code != strings.TrimPrefix(c.want, "failure:") {
					t.Fatalf("err = %v, want %s", err, c.want)
				}
			default:
				if err == nil || f != nil || errors.As(err, &tmp) {
					t.Fatalf("err = %#v, want a plain error (tried again)", err)
				}
			}
		})
	}
}

func TestSendNetworkErrorIsTemporary(t *testing.T) {
	t.Parallel()
	tr := twilio.New(twilio.Config{BaseURL: "http://127.0.0.1:1", AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken})
	_, err := tr.Send(context.Background(), transport.Outbound{Channel: "sms", To: "+14155550123", From: "+15017122661", Text: "secret text"})
	var tmp *transport.Temporary
	if !errors.As(err, &tmp) {
		t.Fatalf("err = %v, want Temporary", err)
	}
}

func TestSendHonoursContext(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(block); srv.Close() })
	tr := twilio.New(twilio.Config{BaseURL: srv.URL, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tr.Send(ctx, transport.Outbound{Channel: "sms", To: "+14155550123", From: "+15017122661", Text: "hi"})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v, want context.DeadlineExceeded at once", err, time.Since(start))
	}
}

// TestErrorsNeverCarryTheTokenOrTheText: not from Twilio's message, not from a network error,
// not from an auth refusal.
func TestErrorsNeverCarryTheTokenOrTheText(t *testing.T) {
	t.Parallel()
	const text = "my one-time code is 918273"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		_, token, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"code":21999,"status":400,"message":"token ` + token + ` body ` + r.PostForm.Get("Body") + `"}`))
	}))
	t.Cleanup(echo.Close)
	peer := twiliotest.NewServer(t)

	cases := []struct {
		name, base, token string
	}{
		{"twilio echoes both", echo.URL, twiliotest.AuthToken},
		{"network", "http://127.0.0.1:1", twiliotest.AuthToken},
		{"wrong token", peer.URL, "ffffffffffffffffffffffffffffffff"},
	}
	for _, c := range cases {
		tr := twilio.New(twilio.Config{BaseURL: c.base, AccountSID: twiliotest.AccountSID, AuthToken: c.token})
		for _, channel := range []string{"sms", "voice"} {
			_, err := tr.Send(context.Background(), transport.Outbound{Channel: channel, To: "+14155550123", From: "+15017122661", Text: text})
			if err == nil {
				t.Fatalf("%s %s: Send succeeded", c.name, channel)
			}
			if s := err.Error(); strings.Contains(s, c.token) || strings.Contains(s, text) {
				t.Errorf("%s %s: error %q repeats the token or the text", c.name, channel, s)
			}
		}
		_, err := tr.CheckAccount(context.Background())
		if err == nil || strings.Contains(err.Error(), c.token) {
			t.Errorf("%s: CheckAccount error %v repeats the token", c.name, err)
		}
	}
	// The echoed message is kept, redacted: the check above looked at it.
	tr := twilio.New(twilio.Config{BaseURL: echo.URL, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken})
	_, err := tr.Send(context.Background(), transport.Outbound{Channel: "sms", To: "+14155550123", From: "+15017122661", Text: text})
	if f := transport.AsFailure(err); f == nil || f.Code != twilio.CodeProviderRejected || strings.Count(f.Message, "[redacted]") != 2 {
		t.Fatalf("err = %v, want PROVIDER_REJECTED with Twilio's message, token and text redacted", err)
	}
}

func TestErrorCodeTable(t *testing.T) {
	t.Parallel()
	cases := map[int]string{
		21610: twilio.CodeRecipientUnsubscribed,
		21211: twilio.CodeInvalidRecipient, 21614: twilio.CodeInvalidRecipient, 21217: twilio.CodeInvalidRecipient,
		21408: twilio.CodeDestinationNotReachable, 21612: twilio.CodeDestinationNotReachable,
		21215: twilio.CodeDestinationNotReachable, 13227: twilio.CodeDestinationNotReachable,
		21606: twilio.CodeSenderNotCapable, 21659: twilio.CodeSenderNotCapable, 21660: twilio.CodeSenderNotCapable, 21212: twilio.CodeSenderNotCapable,
		30003: twilio.CodeRecipientUnreachable, 30004: twilio.CodeRecipientBlocked, 30005: twilio.CodeRecipientUnknown,
		30006: twilio.CodeRecipientLandline, 30007: twilio.CodeCarrierFiltered, 30008: twilio.CodeDeliveryFailed,
		21617: twilio.CodeBodyTooLong, 30034: twilio.CodeTenDLCRequired, 20003: twilio.CodeProviderAuthFailed,
		12345: twilio.CodeProviderRejected, 0: twilio.CodeProviderRejected,
	}
	for twilioCode, want := range cases {
		code, message := twilio.ErrorCode(twilioCode)
		if code != want || message == "" {
			t.Errorf("ErrorCode(%d) = %q, %q; want %q with a message", twilioCode, code, message, want)
		}
	}
	if twilio.CodeRecipientUnsubscribed != "RECIPIENT_UNSUBSCRIBED" {
		t.Fatal("the opt-out errorCode changed")
	}
}
