package twilio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"

	"github.com/twilio/twilio-go/client"
)

// ErrInvalidCredentials: Twilio does not know the account SID, or refused the auth token.
var ErrInvalidCredentials = errors.New("twilio: the account SID or auth token was rejected")

// ErrAccountInactive: the credentials are good but the account is suspended or closed; the
// error CheckAccount returns wraps it and names the status.
var ErrAccountInactive = errors.New("twilio: the account is not active")

// accountSID is the shape of an Account's sid.
var accountSID = regexp.MustCompile(`^AC[0-9a-fA-F]{32}$`)

// AccountInfo is what the Account resource says of the account.
type AccountInfo struct {
	FriendlyName string
	// Status is active, suspended or closed.
	Status string
	// Type is Trial or Full.
	Type string
}

// CheckAccount fetches the account (GET /2010-04-01/Accounts/{sid}.json) to check the
// credentials: ErrInvalidCredentials when Twilio refuses them (401, 403, 404), an error
// wrapping ErrAccountInactive (with the info) when the account is suspended or closed, any
// other error for trouble on the way.
func (t *Transport) CheckAccount(ctx context.Context) (AccountInfo, error) {
	if !accountSID.MatchString(t.cfg.AccountSID) || t.cfg.AuthToken == "" {
		return AccountInfo{}, ErrInvalidCredentials
	}
	api, ex, err := t.api(ctx)
	if err != nil {
		return AccountInfo{}, err
	}
	acc, err := api.FetchAccount(t.cfg.AccountSID)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return AccountInfo{}, fmt.Errorf("twilio: fetch account: %w", ctxErr)
		}
		status, _ := ex.get()
		var re *client.TwilioRestError
		if errors.As(err, &re) {
			if status == 0 {
				status = re.Status
			}
			switch {
			case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound,
				re.Code == 21222 || re.Code == 21224:
				return AccountInfo{}, ErrInvalidCredentials
			}
			return AccountInfo{}, fmt.Errorf("twilio: fetch account: HTTP %d, Twilio code %d", status, re.Code)
		}
		if status != 0 {
			return AccountInfo{}, fmt.Errorf("twilio: fetch account: HTTP %d without a Twilio answer", status)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return AccountInfo{}, fmt.Errorf("twilio: fetch account: %w", err)
	}
	info := AccountInfo{}
	if acc.FriendlyName != nil {
		info.FriendlyName = *acc.FriendlyName
	}
	if acc.Status != nil {
		info.Status = *acc.Status
	}
	if acc.Type != nil {
		info.Type = *acc.Type
	}
	if info.Status != "active" {
		return info, fmt.Errorf("%w: it is %q", ErrAccountInactive, info.Status)
	}
	return info, nil
}
