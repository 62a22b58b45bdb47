// Package twilio is the transport for Twilio (https://www.twilio.com/docs): SMS and MMS through
// the Messages resource, one-way SMS from an alphanumeric sender id or a Messaging Service, and
// voice messages read out by <Say> through the Calls resource. It also places calls held by a
// ConversationRelay (relay.go) and hangs up, redirects and fetches them (calls.go), reads what
// Twilio posts back (status callbacks, inbound messages and calls, relay session ends) and
// checks an account's credentials.
//
// Requests go through twilio-go's REST client (rest/api/v2010). The SDK takes no context and
// hides response headers, so each call gets its own http.Client whose RoundTripper carries the
// call's context, points the request at Config.BaseURL and keeps the status and Retry-After of
// the answer for the classification of errors.
//
// No error or log line of this package carries the auth token or a message's text.
package twilio

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	openapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// DefaultBaseURL is Twilio's REST API.
const DefaultBaseURL = "https://api.twilio.com"

// Channels the transport carries.
const (
	ChannelSMS       = "sms"
	ChannelSMSOneway = "sms_oneway"
	ChannelVoice     = "voice"
)

// Config is what the transport needs to reach Twilio.
type Config struct {
	// BaseURL replaces https://api.twilio.com in every request (a regional endpoint, a proxy,
	// the twiliotest peer); empty means Twilio itself.
	BaseURL    string
	AccountSID string
	AuthToken  string
	// HTTP is the client whose Transport and Timeout requests use; nil means a client with
	// a 10 s timeout over http.DefaultTransport, as the SDK has.
	HTTP *http.Client
}

// Transport sends SMS, one-way SMS and voice messages through one Twilio account.
type Transport struct {
	cfg     Config
	base    *url.URL // nil: Twilio itself
	baseErr error
}

// New returns the transport of cfg. A BaseURL that is not an absolute http(s) URL makes every
// request fail (it is reported then, without the URL's userinfo).
func New(cfg Config) *Transport {
	t := &Transport{cfg: cfg}
	if cfg.BaseURL != "" && strings.TrimRight(cfg.BaseURL, "/") != DefaultBaseURL {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.baseErr = fmt.Errorf("twilio: base URL is not an absolute http(s) URL")
		} else {
			t.base = u
		}
	}
	return t
}

var _ transport.Transport = (*Transport)(nil)

// Channels implements transport.Transport.
func (t *Transport) Channels() []string {
	return []string{ChannelSMS, ChannelSMSOneway, ChannelVoice}
}

// Send implements transport.Transport: a Message for sms and sms_oneway, a Call for voice.
func (t *Transport) Send(ctx context.Context, m transport.Outbound) (transport.Result, error) {
	switch m.Channel {
	case ChannelSMS, ChannelSMSOneway:
		return t.sendMessage(ctx, m)
	case ChannelVoice:
		return t.call(ctx, m)
	}
	return transport.Result{}, &transport.Failure{Code: CodeChannelUnsupported,
		Message: fmt.Sprintf("The Twilio transport does not carry the %q channel.", m.Channel)}
}

// messagingServiceSID is the shape of a Messaging Service's sid. Only a full sid is sent as
// MessagingServiceSid: an alphanumeric sender id may start with "MG" too ("MGM").
var messagingServiceSID = regexp.MustCompile(`^MG[0-9a-fA-F]{32}$`)

// mediaTypes are the message types sent as MMS.
var mediaTypes = map[string]bool{"image": true, "video": true, "audio": true, "document": true, "sticker": true}

func (t *Transport) sendMessage(ctx context.Context, m transport.Outbound) (transport.Result, error) {
	p := &openapi.CreateMessageParams{}
	p.SetTo(m.To)
	if messagingServiceSID.MatchString(m.From) {
		p.SetMessagingServiceSid(m.From)
	} else {
		p.SetFrom(m.From)
	}
	if m.Text != "" {
		p.SetBody(m.Text)
	}
	if m.StatusCallback != "" {
		p.SetStatusCallback(m.StatusCallback)
	}
	switch {
	case m.MessageType == "" || m.MessageType == "text":
	case mediaTypes[m.MessageType]:
		if m.Content == nil || m.Content.MediaURL == "" {
			return transport.Result{}, &transport.Failure{Code: CodeMediaURLRequired,
				Message: "Twilio sends media by URL: the content needs a mediaUrl."}
		}
		if !MMSAllowed(m.To) {
			return transport.Result{}, &transport.Failure{Code: CodeMMSUnsupportedDestination,
				Message: "MMS reaches only +1 (US and Canada) numbers; send the media on another channel or as a link."}
		}
		p.SetMediaUrl([]string{m.Content.MediaURL})
	default:
		return transport.Result{}, &transport.Failure{Code: CodeMessageTypeUnsupported,
			Message: fmt.Sprintf("SMS cannot carry a %q message.", m.MessageType)}
	}

	api, ex, err := t.api(ctx)
	if err != nil {
		return transport.Result{}, err
	}
	msg, err := api.CreateMessage(p)
	if err != nil {
		return transport.Result{}, t.classify(ctx, "create message", err, ex, false, m.Text)
	}
	if msg == nil || msg.Sid == nil || *msg.Sid == "" {
		return transport.Result{}, acceptedUnreadable("create message")
	}
	return transport.Result{ProviderMessageID: *msg.Sid}, nil
}

// MMSAllowed reports whether Twilio can deliver MMS to the number to: +1 numbers (US and
// Canada) only. Elsewhere a media message is refused with MMS_UNSUPPORTED_DESTINATION, so a
// caller can refuse it when the message is accepted.
func MMSAllowed(to string) bool {
	if len(to) != 12 || !strings.HasPrefix(to, "+1") {
		return false
	}
	for _, c := range to[2:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
