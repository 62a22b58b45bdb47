package smtp

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/textproto"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// TestClassify: what a relay's reply means at each step of the conversation.
func TestClassify(t *testing.T) {
	t.Parallel()
	tr := &Transport{cfg: Config{Username: "u", Password: "hunter2-secret"}}
	cases := []struct {
		st           stage
		code         int
		msg          string
		want         string // a Failure code, "temporary", or "retry" for a plain error
		providerCode string
	}{
		{stageAuth, 535, "5.7.8 Authentication credentials invalid", CodeProviderAuthFailed, "535 5.7.8"},
		{stageAuth, 534, "5.7.9 Please log in with your web browser", CodeProviderAuthFailed, "534 5.7.9"},
		{stageAuth, 538, "5.7.11 Encryption required", CodeProviderAuthFailed, "538 5.7.11"},
		{stageAuth, 454, "4.7.0 Temporary authentication failure", "temporary", "454 4.7.0"},
		{stageMail, 530, "5.7.0 Authentication required", CodeProviderAuthFailed, "530 5.7.0"},
		{stageRcpt, 550, "5.1.1 <a@b>: Recipient address rejected: User unknown", CodeInvalidRecipient, "550 5.1.1"},
		{stageRcpt, 550, "5.1.10 Null MX", CodeInvalidRecipient, "550 5.1.10"},
		{stageRcpt, 553, "sorry, no such mailbox here", CodeInvalidRecipient, "553"},
		{stageRcpt, 550, "user unknown", CodeInvalidRecipient, "550"},
		{stageRcpt, 554, "5.7.1 Relay access denied", CodeRecipientRejected, "554 5.7.1"},
		{stageRcpt, 552, "5.2.2 Mailbox full", CodeRecipientRejected, "552 5.2.2"},
		{stageRcpt, 452, "4.5.3 Too many recipients", "temporary", "452 4.5.3"},
		{stageMail, 552, "Message size exceeds fixed limit", CodeTooLarge, "552"},
		{stageData, 552, "5.3.4 Message too big", CodeTooLarge, "552 5.3.4"},
		{stageData, 554, "5.6.0 Message content rejected", CodeRejected, "554 5.6.0"},
		{stageMail, 553, "5.7.1 Sender address rejected: not owned by user", CodeRejected, "553 5.7.1"},
		{stageData, 451, "4.3.0 Error: queue file write error", "temporary", "451 4.3.0"},
		{stageConnect, 554, "5.7.1 Your IP is on a block list", CodeProviderRejected, "554 5.7.1"},
		{stageConnect, 421, "4.7.0 Too many connections", "temporary", "421 4.7.0"},
		{stageTLS, 454, "4.7.0 TLS not available due to local problem", "temporary", "454 4.7.0"},
		{stageTLS, 502, "5.5.1 TLS not supported", CodeProviderTLSFailed, "502 5.5.1"},
		// An enhanced status of another class than the code is not taken as one.
		{stageRcpt, 550, "4.1.1 odd relay", CodeRecipientRejected, "550"},
	}
	for _, c := range cases {
		err := tr.classify(context.Background(), c.st, &textproto.Error{Code: c.code, Msg: c.msg})
		var tmp *transport.Temporary
		f := transport.AsFailure(err)
		switch {
		case c.want == "temporary":
			if !errors.As(err, &tmp) || tmp.ProviderCode != c.providerCode {
				t.Errorf("%s %d %q: %v, want a temporary %s", c.st, c.code, c.msg, err, c.providerCode)
			}
		case f == nil || f.Code != c.want || f.ProviderCode != c.providerCode:
			t.Errorf("%s %d %q: %v, want %s (%s)", c.st, c.code, c.msg, err, c.want, c.providerCode)
		}
	}

	// The network: tried again, neither a failure nor a temporary refusal.
	err := tr.classify(context.Background(), stageData, io.ErrUnexpectedEOF)
	var tmp *transport.Temporary
	if transport.AsFailure(err) != nil || errors.As(err, &tmp) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("network: %v", err)
	}
}

// TestClassifyScrubs: relay text that repeats the password, or the AUTH line carrying it, is
// redacted, and long or multi-line text is cut to one short line.
func TestClassifyScrubs(t *testing.T) {
	t.Parallel()
	tr := &Transport{cfg: Config{Username: "u", Password: "hunter2-secret"}}
	authLine := base64.StdEncoding.EncodeToString([]byte("\x00u\x00hunter2-secret"))
	for _, msg := range []string{
		"5.7.8 bad password hunter2-secret",
		"5.7.8 cannot decode " + authLine,
		"5.7.8 " + base64.StdEncoding.EncodeToString([]byte("hunter2-secret")),
	} {
		err := tr.classify(context.Background(), stageAuth, &textproto.Error{Code: 535, Msg: msg})
		if s := err.Error(); strings.Contains(s, "hunter2") || strings.Contains(s, authLine) ||
			strings.Contains(s, base64.StdEncoding.EncodeToString([]byte("hunter2-secret"))) || !strings.Contains(s, "[redacted]") {
			t.Errorf("%q: %s", msg, s)
		}
	}
	err := tr.classify(context.Background(), stageData, &textproto.Error{Code: 554,
		Msg: "5.6.0 first line\n5.6.0 " + strings.Repeat("x", 1000)})
	if s := transport.AsFailure(err).Message; strings.ContainsAny(s, "\r\n") || len(s) > 500 || !strings.Contains(s, "first line x") {
		t.Errorf("long reply: %q", s)
	}
}
