package twilio_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

func TestCheckAccount(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	info, err := twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken}).
		CheckAccount(context.Background())
	if err != nil || info != (twilio.AccountInfo{FriendlyName: twiliotest.FriendlyName, Status: "active", Type: "Full"}) {
		t.Fatalf("CheckAccount = %+v, %v", info, err)
	}
}

func TestCheckAccountInvalidCredentials(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	cases := map[string]twilio.Config{
		"wrong token":           {AccountSID: twiliotest.AccountSID, AuthToken: "0123456789abcdef0123456789abcdef"},
		"unknown account":       {AccountSID: "ACffffffffffffffffffffffffffffffff", AuthToken: twiliotest.AuthToken},
		"malformed sid":         {AccountSID: "AC123", AuthToken: twiliotest.AuthToken},
		"empty token":           {AccountSID: twiliotest.AccountSID},
		"token the SDK refuses": {AccountSID: twiliotest.AccountSID, AuthToken: "a token"},
	}
	for name, cfg := range cases {
		cfg.BaseURL = peer.URL
		if _, err := twilio.New(cfg).CheckAccount(context.Background()); !errors.Is(err, twilio.ErrInvalidCredentials) {
			t.Errorf("%s: %v, want ErrInvalidCredentials", name, err)
		}
	}
}

func TestCheckAccountInactive(t *testing.T) {
	t.Parallel()
	for _, status := range []string{"suspended", "closed"} {
		peer := twiliotest.NewServer(t)
		peer.SetAccountStatus(status)
		info, err := twilio.New(twilio.Config{BaseURL: peer.URL, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken}).
			CheckAccount(context.Background())
		if !errors.Is(err, twilio.ErrAccountInactive) || errors.Is(err, twilio.ErrInvalidCredentials) ||
			!strings.Contains(err.Error(), status) || info.Status != status {
			t.Errorf("%s: %+v, %v; want ErrAccountInactive naming %q", status, info, err, status)
		}
	}
}

func TestCheckAccountTrouble(t *testing.T) {
	t.Parallel()
	peer := twiliotest.NewServer(t)
	peer.Storm(1, 500)
	cases := map[string]struct{ base, says string }{
		"twilio failing": {peer.URL, "HTTP 500"},
		"network":        {"http://127.0.0.1:1", "fetch account"},
	}
	for name, c := range cases {
		_, err := twilio.New(twilio.Config{BaseURL: c.base, AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken}).
			CheckAccount(context.Background())
		if err == nil || errors.Is(err, twilio.ErrInvalidCredentials) || errors.Is(err, twilio.ErrAccountInactive) ||
			!strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q, neither bad credentials nor an inactive account", name, err, c.says)
		}
	}
}
