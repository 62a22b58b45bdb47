package twilio_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// What a send's error proves about whether Twilio took the message decides whether another
// Provider may carry it at once (docs/providers.md#failover): a refused connection, a 5xx and a
// refusal about the account prove it did not; a 429 asks to wait; no answer proves nothing; a
// refusal about the message is final.
func TestWhatAnErrorProvesAboutTheMessage(t *testing.T) {
	t.Parallel()
	msg := transport.Outbound{ID: "msg_1", Channel: "sms", MessageType: "text", To: "+15005550100", From: "+15005550006", Text: "hi"}
	send := func(tr *twilio.Transport, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := tr.Send(ctx, msg)
		return err
	}
	for _, c := range []struct {
		name       string
		set        func(*twiliotest.Server)
		notTaken   bool
		failure    bool // a permanent refusal of the message
		transitory bool // tried again later
	}{
		{"connection refused", func(p *twiliotest.Server) { p.Down() }, true, false, true},
		{"503", func(p *twiliotest.Server) { p.Storm(1, http.StatusServiceUnavailable) }, true, false, true},
		{"500", func(p *twiliotest.Server) { p.Storm(1, http.StatusInternalServerError) }, true, false, true},
		{"429", func(p *twiliotest.Server) { p.Storm(1, http.StatusTooManyRequests) }, false, false, true},
		{"geo permissions", func(p *twiliotest.Server) { p.Fail(msg.To, 21408, 400) }, true, true, false},
		{"inactive account", func(p *twiliotest.Server) { p.Fail(msg.To, 10001, 400) }, true, true, false},
		{"bad number", func(p *twiliotest.Server) { p.Fail(msg.To, 21211, 400) }, false, true, false},
		{"unsubscribed", func(p *twiliotest.Server) { p.Fail(msg.To, 21610, 400) }, false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			peer, tr := newTransport(t)
			c.set(peer)
			err := send(tr, 5*time.Second)
			if err == nil {
				t.Fatal("sent")
			}
			if got := transport.NotTaken(err); got != c.notTaken {
				t.Errorf("NotTaken(%v) = %v, want %v", err, got, c.notTaken)
			}
			if got := transport.AsFailure(err) != nil; got != c.failure {
				t.Errorf("%v is a failure: %v, want %v", err, got, c.failure)
			}
			if len(peer.Messages()) != 0 {
				t.Errorf("the peer took %d messages", len(peer.Messages()))
			}
		})
	}
	// No answer in time: the request was sent, and Twilio may have taken it.
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stop) }) // first: Close waits for the handler
	slow := twilio.New(twilio.Config{BaseURL: hang.URL, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken})
	if err := send(slow, 300*time.Millisecond); err == nil || transport.NotTaken(err) || transport.AsFailure(err) != nil {
		t.Errorf("a timeout: %v, NotTaken %v; want an error that proves nothing", err, transport.NotTaken(err))
	}
	// Back up, the same peer takes messages again.
	peer, tr := newTransport(t)
	peer.Down()
	peer.Up()
	if err := send(tr, 5*time.Second); err != nil || len(peer.Messages()) != 1 {
		t.Errorf("after Up: %v, %d messages", err, len(peer.Messages()))
	}
}
