package twilio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

	"github.com/twilio/twilio-go/client"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// ErrMessageNotFound: Twilio does not know the message (deleted, or another account's).
var ErrMessageNotFound = errors.New("twilio: no such message")

var messageSID = regexp.MustCompile(`^(SM|MM)[0-9a-f]{32}$`)

// MessageStatus reads the message sid from Twilio's Message resource, as its status callback
// would have reported it: for a message whose callback was lost (Twilio does not retry one the
// receiver did not take). A status before Twilio handed the message on changes nothing.
func (t *Transport) MessageStatus(ctx context.Context, sid string) (transport.StatusUpdate, error) {
	if !messageSID.MatchString(sid) {
		return transport.StatusUpdate{}, fmt.Errorf("twilio: fetch message: %w", ErrMessageNotFound)
	}
	api, ex, err := t.api(ctx)
	if err != nil {
		return transport.StatusUpdate{}, err
	}
	m, err := api.FetchMessage(sid, nil)
	if err != nil {
		var re *client.TwilioRestError
		if status, _ := ex.get(); ctx.Err() == nil && (status == http.StatusNotFound || (errors.As(err, &re) && re.Code == 20404)) {
			return transport.StatusUpdate{}, fmt.Errorf("twilio: fetch message: %w", ErrMessageNotFound)
		}
		return transport.StatusUpdate{}, t.classify(ctx, "fetch message", err, ex, false, "")
	}
	if m == nil || m.Sid == nil {
		return transport.StatusUpdate{}, acceptedUnreadable("fetch message")
	}
	form := url.Values{"MessageSid": {*m.Sid}, "MessageStatus": {deref(m.Status)}}
	if m.ErrorCode != nil {
		form.Set("ErrorCode", strconv.Itoa(*m.ErrorCode))
	}
	return ParseMessageStatus(form), nil
}
