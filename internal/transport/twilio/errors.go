package twilio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twilio/twilio-go/client"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// Switchboard errorCodes the transport fails a message with (docs/transports.md, Twilio).
const (
	// CodeRecipientUnsubscribed: the recipient replied STOP (Twilio 21610). Callers remember
	// the opt-out; the recipient must reply START before the sender can reach them again.
	CodeRecipientUnsubscribed     = "RECIPIENT_UNSUBSCRIBED"
	CodeInvalidRecipient          = "INVALID_RECIPIENT"
	CodeTrialRecipientUnverified  = "TRIAL_RECIPIENT_UNVERIFIED"
	CodeDestinationNotReachable   = "DESTINATION_NOT_REACHABLE"
	CodeVoiceRouteUnavailable     = "VOICE_ROUTE_UNAVAILABLE"
	CodeSenderNotCapable          = "SENDER_NOT_CAPABLE"
	CodeTenDLCRequired            = "TEN_DLC_REQUIRED"
	CodeBodyRequired              = "BODY_REQUIRED"
	CodeBodyTooLong               = "BODY_TOO_LONG"
	CodeInvalidMediaURL           = "INVALID_MEDIA_URL"
	CodeMMSUnsupportedDestination = "MMS_UNSUPPORTED_DESTINATION"
	CodeRecipientUnreachable      = "RECIPIENT_UNREACHABLE"
	CodeRecipientBlocked          = "RECIPIENT_BLOCKED"
	CodeRecipientUnknown          = "RECIPIENT_UNKNOWN"
	CodeRecipientLandline         = "RECIPIENT_LANDLINE"
	CodeCarrierFiltered           = "CARRIER_FILTERED"
	CodeDeliveryFailed            = "DELIVERY_FAILED"
	CodeMessageCanceled           = "MESSAGE_CANCELED"
	CodeProviderAuthFailed        = "PROVIDER_AUTH_FAILED"
	CodeProviderAccountInactive   = "PROVIDER_ACCOUNT_INACTIVE"
	CodeProviderRejected          = "PROVIDER_REJECTED"
	CodeProviderResponseInvalid   = "PROVIDER_RESPONSE_INVALID"
	CodeRateLimited               = "RATE_LIMITED"
	CodeSenderQueueFull           = "SENDER_QUEUE_FULL"
	// Refusals of the transport itself, before Twilio is asked.
	CodeChannelUnsupported     = "CHANNEL_UNSUPPORTED"
	CodeMessageTypeUnsupported = "MESSAGE_TYPE_UNSUPPORTED"
	CodeMediaURLRequired       = "MEDIA_URL_REQUIRED"
	CodeVoiceTextRequired      = "VOICE_TEXT_REQUIRED"
	CodeVoiceTextTooLong       = "VOICE_TEXT_TOO_LONG"
	// Call outcomes (ParseCallStatus).
	CodeVoiceBusy     = "VOICE_BUSY"
	CodeVoiceNoAnswer = "VOICE_NO_ANSWER"
	CodeVoiceFailed   = "VOICE_FAILED"
)

// twilioError is one row of the table: what a Twilio error code means for a message.
type twilioError struct {
	code    string
	message string
	// retry: a refusal worth trying again later (a rate limit, a full queue), not a failure.
	retry bool
	// route: for a call, a destination the account may not dial (VOICE_ROUTE_UNAVAILABLE).
	route bool
}

// errorTable maps Twilio's error codes (https://www.twilio.com/docs/api/errors) to errorCodes.
// Codes 2xxxx and 1xxxx come back from a request; 3xxxx in a status callback after delivery
// failed. docs/transports.md carries the same table.
var errorTable = map[int]twilioError{
	// Account and credentials.
	20003: {code: CodeProviderAuthFailed, message: "Twilio refused the account's credentials."},
	21222: {code: CodeProviderAuthFailed, message: "The account SID has characters Twilio does not allow."},
	21224: {code: CodeProviderAuthFailed, message: "The auth token has characters Twilio does not allow."},
	10001: {code: CodeProviderAccountInactive, message: "The Twilio account is not active."},
	30002: {code: CodeProviderAccountInactive, message: "The Twilio account was suspended."},
	// Slow down: tried again later.
	20429: {code: CodeRateLimited, message: "Twilio asked to slow down (too many requests).", retry: true},
	14107: {code: CodeRateLimited, message: "The sender's SMS rate limit was exceeded.", retry: true},
	21611: {code: CodeSenderQueueFull, message: "The sender has too many messages queued at Twilio.", retry: true},
	// Recipient.
	21610: {code: CodeRecipientUnsubscribed, message: "The recipient replied STOP to this sender; they must reply START before they can be messaged again."},
	21211: {code: CodeInvalidRecipient, message: "The recipient is not a valid phone number."},
	21614: {code: CodeInvalidRecipient, message: "The recipient is not a valid mobile number."},
	21217: {code: CodeInvalidRecipient, message: "The recipient does not appear to be a valid phone number."},
	21604: {code: CodeInvalidRecipient, message: "The message has no recipient."},
	21265: {code: CodeInvalidRecipient, message: "The recipient is a short code, which cannot receive messages."},
	21266: {code: CodeInvalidRecipient, message: "The recipient and the sender are the same number."},
	21608: {code: CodeTrialRecipientUnverified, message: "A Twilio trial account can only send to verified numbers."},
	21219: {code: CodeTrialRecipientUnverified, message: "A Twilio trial account can only call verified numbers."},
	21408: {code: CodeDestinationNotReachable, message: "The account's geo permissions do not allow this destination.", route: true},
	21612: {code: CodeDestinationNotReachable, message: "Twilio cannot reach this recipient from this sender (for example an alphanumeric sender id to a +1 number).", route: true},
	21215: {code: CodeDestinationNotReachable, message: "The account's geo permissions do not allow calling this number.", route: true},
	13227: {code: CodeDestinationNotReachable, message: "The account has no international authorization for this number.", route: true},
	32205: {code: CodeDestinationNotReachable, message: "The account's geo permissions do not allow calling this number.", route: true},
	// Sender.
	21606: {code: CodeSenderNotCapable, message: "The sender cannot send this message to the recipient (not SMS-capable for it)."},
	21659: {code: CodeSenderNotCapable, message: "The sender is not a Twilio number."},
	21660: {code: CodeSenderNotCapable, message: "The sender does not belong to this Twilio account."},
	21212: {code: CodeSenderNotCapable, message: "The sender is not a valid phone number, short code or alphanumeric sender id."},
	21603: {code: CodeSenderNotCapable, message: "The message has no sender."},
	21701: {code: CodeSenderNotCapable, message: "The Messaging Service sid is not valid."},
	21210: {code: CodeSenderNotCapable, message: "The caller id is not a verified number of this account."},
	21213: {code: CodeSenderNotCapable, message: "The call has no caller id."},
	30032: {code: CodeSenderNotCapable, message: "The toll-free sender has not been verified."},
	30034: {code: CodeTenDLCRequired, message: "The +1 sender is not registered to an approved A2P 10DLC campaign."},
	// Content.
	21602: {code: CodeBodyRequired, message: "The message has neither text nor media."},
	21619: {code: CodeBodyRequired, message: "The message has neither text nor media."},
	21617: {code: CodeBodyTooLong, message: "The text exceeds Twilio's 1,600-character limit."},
	21658: {code: CodeBodyTooLong, message: "The text exceeds Twilio's 1,600-character limit."},
	21620: {code: CodeInvalidMediaURL, message: "A media URL is not valid or not reachable by Twilio."},
	30011: {code: CodeMMSUnsupportedDestination, message: "The recipient cannot receive MMS."},
	// Delivery (status callbacks).
	30001: {code: CodeDeliveryFailed, message: "The carrier's queue overflowed."},
	30003: {code: CodeRecipientUnreachable, message: "The recipient's phone is switched off or otherwise unreachable."},
	30004: {code: CodeRecipientBlocked, message: "The message was blocked (by the recipient or their carrier)."},
	30005: {code: CodeRecipientUnknown, message: "The recipient's number is unknown or no longer in service."},
	30006: {code: CodeRecipientLandline, message: "The recipient is a landline or their carrier cannot be reached."},
	30007: {code: CodeCarrierFiltered, message: "The carrier filtered the message as spam or unwanted."},
	30008: {code: CodeDeliveryFailed, message: "The carrier could not deliver the message (unknown error)."},
	30009: {code: CodeDeliveryFailed, message: "A segment of the message was lost."},
}

// ErrorCode translates a Twilio error code into the errorCode a message fails with and its
// message; a code the table does not know is PROVIDER_REJECTED.
func ErrorCode(twilioCode int) (code, message string) {
	if e, ok := errorTable[twilioCode]; ok {
		return e.code, e.message
	}
	return CodeProviderRejected, fmt.Sprintf("Twilio refused the message (code %d).", twilioCode)
}

// failure is the permanent failure of a Twilio code; call makes a route refusal VOICE_ROUTE_UNAVAILABLE.
func failure(twilioCode int, call bool) *transport.Failure {
	code, message := ErrorCode(twilioCode)
	if call && errorTable[twilioCode].route {
		code = CodeVoiceRouteUnavailable
	}
	f := &transport.Failure{Code: code, Message: message, ProviderFault: accountFault(twilioCode)}
	if twilioCode != 0 {
		f.ProviderCode = strconv.Itoa(twilioCode)
	}
	return f
}

// accountFault says whether a Twilio refusal is about the account rather than the message (its
// credentials, its state, its geo permissions, a sender it does not hold): another Provider's
// account may carry the message.
func accountFault(twilioCode int) bool {
	e, ok := errorTable[twilioCode]
	if !ok {
		return false
	}
	return e.code == CodeProviderAuthFailed || e.code == CodeProviderAccountInactive || e.route ||
		twilioCode == 21659 || twilioCode == 21660
}

// classify turns what a request to Twilio returned into the errors transport.Transport
// documents. secret is what the error must never repeat besides the auth token (the text).
func (t *Transport) classify(ctx context.Context, op string, err error, ex *exchange, call bool, secret string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("twilio: %s: %w", op, ctxErr)
	}
	status, header := ex.get()
	code, twilioMessage, fromTwilio := 0, "", false
	var re *client.TwilioRestError
	var v1 *client.RestErrorV1
	switch {
	case errors.As(err, &re):
		code, twilioMessage, fromTwilio = re.Code, re.Message, true
		if status == 0 { // refused by the SDK before sending (credentials with illegal characters)
			status = re.Status
		}
	case errors.As(err, &v1):
		code, twilioMessage, fromTwilio = v1.Code, v1.Message, true
		if status == 0 {
			status = v1.HttpStatusCode
		}
	}
	providerCode := ""
	if code != 0 {
		providerCode = strconv.Itoa(code)
	}
	switch {
	case status == http.StatusTooManyRequests || status >= 500 || (fromTwilio && errorTable[code].retry):
		what := fmt.Sprintf("HTTP %d", status)
		if code != 0 {
			what += fmt.Sprintf(", Twilio code %d", code)
		}
		// A 5xx is Twilio saying it did not take the message; a 429 asks to slow down.
		return &transport.Temporary{Err: fmt.Errorf("twilio: %s: %s", op, what),
			RetryAfter: retryAfter(header, time.Now()), ProviderCode: providerCode, NotTaken: status >= 500}
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		(fromTwilio && errorTable[code].code == CodeProviderAuthFailed):
		return &transport.Failure{Code: CodeProviderAuthFailed, ProviderCode: providerCode, ProviderFault: true,
			Message: "Twilio refused the account's credentials (account SID or auth token)."}
	case fromTwilio:
		f := failure(code, call)
		if f.Code == CodeProviderRejected && twilioMessage != "" {
			f.Message = fmt.Sprintf("Twilio refused the message (code %d): %s", code, scrub(twilioMessage, t.cfg.AuthToken, secret))
		}
		return f
	case status >= 200 && status < 300:
		return acceptedUnreadable(op)
	case status != 0:
		// Not Twilio's error shape (a proxy, a gateway): tried again.
		return fmt.Errorf("twilio: %s: HTTP %d without a Twilio error body", op, status)
	}
	// Nothing answered: the network. url.Error repeats the request URL; keep the cause only.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &transport.Temporary{Err: fmt.Errorf("twilio: %s: %w", op, err)}
}

// acceptedUnreadable: Twilio answered 2xx but its answer cannot be read. The message may well
// be on its way, so it is not tried again (that could send it twice); it fails instead.
func acceptedUnreadable(op string) error {
	return &transport.Failure{Code: CodeProviderResponseInvalid,
		Message: fmt.Sprintf("Twilio accepted the request (%s) but its answer could not be read; it was not sent again.", op)}
}

// retryAfter reads Retry-After (seconds or an HTTP date); zero when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// scrub removes the auth token and the message's text from s, should Twilio's answer or an
// error repeat them.
func scrub(s string, secrets ...string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}
