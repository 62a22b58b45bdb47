package twilio_test

import (
	"context"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

func TestLookupLineType(t *testing.T) {
	t.Parallel()
	peer, tr := newTransport(t)
	peer.SetLineType("+14155552671", "Verizon Wireless", "mobile")
	ctx := context.Background()
	lt, ok, err := tr.LookupLineType(ctx, "+14155552671")
	if err != nil || !ok || lt.Carrier != "Verizon Wireless" || lt.Type != "mobile" {
		t.Fatalf("lookup = %+v %v %v", lt, ok, err)
	}
	// A number Twilio has no line data for (error 60600 inside the answer) is not an error.
	if lt, ok, err := tr.LookupLineType(ctx, "+14155550000"); err != nil || ok {
		t.Fatalf("unknown number = %+v %v %v", lt, ok, err)
	}
	if peer.Lookups() != 2 {
		t.Fatalf("%d lookups", peer.Lookups())
	}
	// Bad credentials are Twilio's 20003, as for any call.
	bad := twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: "wrong"})
	if _, _, err := bad.LookupLineType(ctx, "+14155552671"); transport.AsFailure(err) == nil {
		t.Fatalf("bad credentials: %v", err)
	}
}
