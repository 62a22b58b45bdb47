package meta_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

func TestMapErrorCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code, subcode int
		want          string
		temporary     bool
	}{
		{190, 0, meta.CodeAuthFailed, false},
		{190, 463, meta.CodeAuthFailed, false},
		{190, 467, meta.CodeAuthFailed, false},
		{102, 0, meta.CodeAuthFailed, false},
		{10, 0, meta.CodePermissionDenied, false},
		{200, 0, meta.CodePermissionDenied, false},
		{294, 0, meta.CodePermissionDenied, false},
		{299, 0, meta.CodePermissionDenied, false},
		{300, 0, meta.CodeRejected, false},
		{4, 0, meta.CodeRateLimited, true},
		{80007, 0, meta.CodeRateLimited, true},
		{130429, 0, meta.CodeRateLimited, true},
		{131056, 0, meta.CodeRateLimited, true},
		{131000, 0, meta.CodeUnavailable, true},
		{2, 0, meta.CodeUnavailable, true},
		{131047, 0, meta.CodeWhatsAppWindowClosed, false},
		{131026, 0, meta.CodeWhatsAppUndeliverable, false},
		{131051, 0, meta.CodeMessageTypeUnsupported, false},
		{131052, 0, meta.CodeMediaDownloadFailed, false},
		{132000, 0, meta.CodeTemplateParamsMismatch, false},
		{132001, 0, meta.CodeTemplateNotFound, false},
		{132005, 0, meta.CodeTemplateTextTooLong, false},
		{132012, 0, meta.CodeTemplateParamsInvalid, false},
		{132015, 0, meta.CodeTemplatePaused, false},
		{132016, 0, meta.CodeTemplateDisabled, false},
		{131031, 0, meta.CodeSenderBlocked, false},
		{131021, 0, meta.CodeInvalidRecipient, false},
		{133010, 0, meta.CodeSenderNotRegistered, false},
		{131042, 0, meta.CodeAccountInactive, false},
		{131050, 0, meta.CodeRecipientUnsubscribed, false},
		{131049, 0, meta.CodeMarketingLimited, false},
		{100, 0, meta.CodeInvalidRequest, false},
		{100, 33, meta.CodeInvalidRequest, false},
		{100, 2018001, meta.CodeRecipientNotFound, false},
		{10, 2018278, meta.CodeMessengerWindowClosed, false},
		{10, 2534022, meta.CodeMessengerWindowClosed, false},
		{551, 0, meta.CodeRecipientUnreachable, false},
		{135000, 0, meta.CodeRejected, false},
		{0, 0, meta.CodeRejected, false},
	} {
		code, temporary := meta.MapErrorCode(c.code, c.subcode)
		if code != c.want || temporary != c.temporary {
			t.Errorf("MapErrorCode(%d, %d) = %s, %v; want %s, %v", c.code, c.subcode, code, temporary, c.want, c.temporary)
		}
	}
}

// TestSendErrors has the peer refuse sends and checks how each refusal classifies: Temporary
// (with Retry-After) or Failure with its errorCode and Meta's code.
func TestSendErrors(t *testing.T) {
	t.Parallel()
	const to = "15551234567"
	whatsapp := transport.Outbound{Channel: "whatsapp", To: to, From: graphPhoneID, Text: "Hello"}
	cases := []struct {
		name       string
		setup      func(*metatest.Server)
		token      string
		m          *transport.Outbound
		temporary  bool
		retryAfter time.Duration
		code       string
		provider   string
	}{
		{name: "expired token", token: metatest.ExpiredToken, code: meta.CodeAuthFailed, provider: "190/463"},
		{name: "unknown token", token: "EAAnotatoken", code: meta.CodeAuthFailed, provider: "190"},
		{name: "window closed", setup: func(p *metatest.Server) { p.Window("+"+to, false) }, code: meta.CodeWhatsAppWindowClosed, provider: "131047"},
		{name: "messenger window closed", setup: func(p *metatest.Server) { p.Window(graphPSID, false) },
			m: &transport.Outbound{Channel: "messenger", To: graphPSID, From: graphPage, Text: "Hi"}, code: meta.CodeMessengerWindowClosed, provider: "10/2018278"},
		{name: "rate limit 429", setup: func(p *metatest.Server) { p.FailNext(1, 429, 130429, 0, "Rate limit hit") },
			temporary: true, retryAfter: 3 * time.Second, provider: "130429"},
		{name: "pair rate limit", setup: func(p *metatest.Server) {
			p.FailNext(1, 400, 131056, 0, "(Business Account, Consumer Account) pair rate limit hit")
		},
			temporary: true, retryAfter: 0, provider: "131056"},
		{name: "500", setup: func(p *metatest.Server) { p.FailNext(1, 500, 1, 0, "An unknown error occurred") }, temporary: true, provider: "1"},
		{name: "503 with an unknown code", setup: func(p *metatest.Server) { p.FailNext(1, 503, 999999, 0, "Service unavailable") }, temporary: true, provider: "999999"},
		{name: "undeliverable", setup: func(p *metatest.Server) { p.FailNext(1, 400, 131026, 0, "Message Undeliverable") }, code: meta.CodeWhatsAppUndeliverable, provider: "131026"},
		{name: "not registered", setup: func(p *metatest.Server) { p.FailNext(1, 400, 133010, 0, "Phone number not registered") }, code: meta.CodeSenderNotRegistered, provider: "133010"},
		{name: "unknown 4xx code", setup: func(p *metatest.Server) { p.FailNext(1, 400, 135000, 0, "Generic user error") }, code: meta.CodeRejected, provider: "135000"},
		{name: "permission", setup: func(p *metatest.Server) { p.FailNext(1, 403, 200, 0, "Permissions error") }, code: meta.CodePermissionDenied, provider: "200"},
		{name: "unknown phone number id", m: &transport.Outbound{Channel: "whatsapp", To: to, From: "999", Text: "Hi"}, code: meta.CodeInvalidRequest, provider: "100/33"},
		{name: "unknown template", m: &transport.Outbound{Channel: "whatsapp", To: to, From: graphPhoneID, MessageType: "template",
			Template: &transport.OutboundTemplate{Name: "nope", Language: "en_US"}}, code: meta.CodeTemplateNotFound, provider: "132001"},
		{name: "template pending review", setup: func(p *metatest.Server) { p.SetTemplateStatus(graphWABA, "promo", "en_US", "PENDING", "MARKETING") },
			m: &transport.Outbound{Channel: "whatsapp", To: to, From: graphPhoneID, MessageType: "template",
				Template: &transport.OutboundTemplate{Name: "promo", Language: "en_US"}}, code: meta.CodeTemplateNotFound, provider: "132001"},
		{name: "template paused", setup: func(p *metatest.Server) { p.SetTemplateStatus(graphWABA, "promo", "en_US", "PAUSED", "MARKETING") },
			m: &transport.Outbound{Channel: "whatsapp", To: to, From: graphPhoneID, MessageType: "template",
				Template: &transport.OutboundTemplate{Name: "promo", Language: "en_US"}}, code: meta.CodeTemplatePaused, provider: "132015"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			peer, _ := graphPeer(t, metatest.Options{RetryAfter: 3 * time.Second})
			if c.setup != nil {
				c.setup(peer)
			}
			token := c.token
			if token == "" {
				token = metatest.Token
			}
			tr := meta.New(meta.Config{BaseURL: peer.URL, AccessToken: token})
			m := whatsapp
			if c.m != nil {
				m = *c.m
			}
			_, err := tr.Send(context.Background(), m)
			if err == nil {
				t.Fatal("Send succeeded")
			}
			if strings.Contains(err.Error(), token) || (m.Text != "" && strings.Contains(err.Error(), m.Text)) {
				t.Fatalf("the error repeats the token or the text: %v", err)
			}
			var tmp *transport.Temporary
			if c.temporary {
				if !errors.As(err, &tmp) || tmp.RetryAfter != c.retryAfter || tmp.ProviderCode != c.provider || transport.AsFailure(err) != nil {
					t.Fatalf("err = %#v, want Temporary (RetryAfter %v, ProviderCode %s)", err, c.retryAfter, c.provider)
				}
				return
			}
			f := transport.AsFailure(err)
			if f == nil || f.Code != c.code || f.ProviderCode != c.provider || errors.As(err, &tmp) {
				t.Fatalf("err = %v, want Failure %s (provider code %s)", err, c.code, c.provider)
			}
		})
	}
}

// TestTemplateGoesThroughClosedWindow: outside the window only a template reaches the contact.
func TestTemplateGoesThroughClosedWindow(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	peer.Window("15551234567", false)
	peer.SetTemplateStatus(graphWABA, "hello_world", "en_US", "APPROVED", "UTILITY")
	sendOK(t, peer, tr, transport.Outbound{Channel: "whatsapp", MessageType: "template", To: "+15551234567", From: graphPhoneID,
		Template: &transport.OutboundTemplate{Name: "hello_world", Language: "en_US"}})
	peer.Window("15551234567", true)
	sendOK(t, peer, tr, transport.Outbound{Channel: "whatsapp", To: "+15551234567", From: graphPhoneID, Text: "Thanks for replying"})
}

// TestErrorsCarryNoSecret: Meta's words are kept in errors, without the token or the message's
// text and template parameters should Meta repeat them.
func TestErrorsCarryNoSecret(t *testing.T) {
	t.Parallel()
	const code = "482910"
	peer, tr := graphPeer(t, metatest.Options{})
	peer.SetTemplateStatus(graphWABA, "otp", "en_US", "APPROVED", "AUTHENTICATION")
	peer.FailNext(1, 400, 131009, 0, "Parameter value is not valid: "+code+" sent with "+metatest.Token)
	_, err := tr.Send(context.Background(), transport.Outbound{Channel: "whatsapp", MessageType: "template", To: "15551234567", From: graphPhoneID,
		Template: &transport.OutboundTemplate{Name: "otp", Language: "en_US", BodyParams: []string{code}}})
	f := transport.AsFailure(err)
	if f == nil || f.Code != meta.CodeInvalidRequest || f.ProviderCode != "131009" {
		t.Fatalf("err = %v, want INVALID_REQUEST 131009", err)
	}
	if strings.Contains(err.Error(), code) || strings.Contains(err.Error(), metatest.Token) || !strings.Contains(f.Message, "[redacted]") {
		t.Fatalf("err = %v: it should keep Meta's words without the code and the token", err)
	}
}

// TestClassifyAnswers covers answers the peer does not give: rate-limit headers, answers that
// are not the Graph API's, an unreachable server, a 2xx that cannot be read.
func TestClassifyAnswers(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		name      string
		status    int
		header    map[string]string
		body      string
		temporary bool
		minWait   time.Duration
		maxWait   time.Duration
		code      string // Failure code; "" with temporary false: another error
	}{
		{name: "business use case usage", status: 400, header: map[string]string{
			"X-Business-Use-Case-Usage": `{"102290129340398":[{"type":"whatsapp","call_count":100,"estimated_time_to_regain_access":7},{"type":"x","estimated_time_to_regain_access":2}]}`},
			body:      `{"error":{"message":"(#80007) Rate limit issues","type":"OAuthException","code":80007,"fbtrace_id":"A1"}}`,
			temporary: true, minWait: 7 * time.Minute, maxWait: 7 * time.Minute},
		{name: "Retry-After as a date", status: 429, header: map[string]string{"Retry-After": date},
			body:      `{"error":{"message":"(#4) Application request limit reached","type":"OAuthException","code":4,"fbtrace_id":"A1"}}`,
			temporary: true, minWait: 80 * time.Second, maxWait: 90 * time.Second},
		{name: "is_transient", status: 400,
			body:      `{"error":{"message":"An unexpected error has occurred.","type":"OAuthException","code":135000,"is_transient":true,"fbtrace_id":"A1"}}`,
			temporary: true},
		{name: "a gateway's 502", status: 502, body: "<html>Bad Gateway</html>", temporary: true},
		{name: "a proxy's 404", status: 404, body: "<html>Not Found</html>"},
		{name: "401 with code 0", status: 401, body: `{"error":{"message":"AuthException","type":"OAuthException","code":0}}`, code: meta.CodeAuthFailed},
		{name: "error_data as a string", status: 400,
			body: `{"error":{"message":"(#100) Invalid parameter","type":"OAuthException","code":100,"error_data":"to is invalid","fbtrace_id":"A1"}}`,
			code: meta.CodeInvalidRequest},
		{name: "2xx that cannot be read", status: 200, body: "not json", code: meta.CodeResponseInvalid},
		{name: "2xx without a message id", status: 200, body: `{"messaging_product":"whatsapp","messages":[]}`, code: meta.CodeResponseInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			t.Cleanup(srv.Close)
			tr := meta.New(meta.Config{BaseURL: srv.URL, AccessToken: "EAAtoken0000"})
			_, err := tr.Send(context.Background(), transport.Outbound{Channel: "whatsapp", To: "15551234567", From: graphPhoneID, Text: "Hi"})
			var tmp *transport.Temporary
			switch {
			case c.temporary:
				if !errors.As(err, &tmp) || tmp.RetryAfter < c.minWait || tmp.RetryAfter > c.maxWait {
					t.Fatalf("err = %#v, want Temporary waiting %v to %v", err, c.minWait, c.maxWait)
				}
			case c.code != "":
				if f := transport.AsFailure(err); f == nil || f.Code != c.code {
					t.Fatalf("err = %v, want Failure %s", err, c.code)
				}
			default:
				if err == nil || transport.AsFailure(err) != nil || errors.As(err, &tmp) {
					t.Fatalf("err = %#v, want a plain error (tried again)", err)
				}
			}
		})
	}
	t.Run("nobody answers", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		_, err := meta.New(meta.Config{BaseURL: srv.URL, AccessToken: "EAAtoken0000"}).Send(context.Background(),
			transport.Outbound{Channel: "whatsapp", To: "15551234567", From: graphPhoneID, Text: "Hi"})
		var tmp *transport.Temporary
		if !errors.As(err, &tmp) || strings.Contains(err.Error(), srv.URL) {
			t.Fatalf("err = %v, want Temporary without the URL", err)
		}
	})
	t.Run("a base URL that is not one", func(t *testing.T) {
		t.Parallel()
		_, err := meta.New(meta.Config{BaseURL: "ftp://user:pass@example.com", AccessToken: "EAAtoken0000"}).Send(context.Background(),
			transport.Outbound{Channel: "whatsapp", To: "15551234567", From: graphPhoneID, Text: "Hi"})
		if err == nil || strings.Contains(err.Error(), "pass") {
			t.Fatalf("err = %v, want an error without the URL", err)
		}
	})
	t.Run("no token", func(t *testing.T) {
		t.Parallel()
		_, err := meta.New(meta.Config{BaseURL: "http://127.0.0.1:1"}).Send(context.Background(),
			transport.Outbound{Channel: "whatsapp", To: "15551234567", From: graphPhoneID, Text: "Hi"})
		if f := transport.AsFailure(err); f == nil || f.Code != meta.CodeAuthFailed {
			t.Fatalf("err = %v, want PROVIDER_AUTH_FAILED", err)
		}
	})
}
