package app_test

import (
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// A live SMS whose status callback never arrives (here the installation has no public URL, so
// Twilio is given none) is asked of Twilio's Message resource once it has been sent a while: it
// reaches the status Twilio shows, delivered or failed with the code it reports.
func TestLostCallbacksAreReconciled(t *testing.T) {
	peer := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, rcv.trusted(), func(c *app.Config) {
		c.ReconcileSentAfter, c.ReconcileEvery = time.Second, 200*time.Millisecond
	})
	_, key := twilioProject(t, in, peer, rcv)
	peer.FailDelivery("+15005550702", 30003)

	send := func(to string) string {
		t.Helper()
		r := in.post("/v2/messages", key, `{"to":"`+to+`","text":"no callback"}`)
		if r.status != 202 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		return r.body["message"].(map[string]any)["id"].(string)
	}
	delivered, undelivered := send("+15005550701"), send("+15005550702")
	waitStatus(t, in, key, delivered, "delivered")
	m := waitStatus(t, in, key, undelivered, "failed")
	if m["errorCode"] != "RECIPIENT_UNREACHABLE" {
		t.Errorf("errorCode = %v, want RECIPIENT_UNREACHABLE (Twilio 30003)", m["errorCode"])
	}
	for _, cb := range peer.Callbacks() {
		t.Errorf("the peer posted a callback to %s: none was asked for", cb.URL)
	}
	if peer.Fetches() < 2 {
		t.Errorf("Twilio's Message resource was read %d times, want at least 2", peer.Fetches())
	}
	waitFor(t, func() bool {
		names := rcv.names(delivered)
		return len(names) > 0 && names[len(names)-1] == "message.delivered"
	})
}
