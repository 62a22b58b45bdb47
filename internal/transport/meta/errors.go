package meta

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// Switchboard errorCodes the transport fails a message with (docs/transports.md, Meta).
const (
	// Account, token and rights.
	CodeAuthFailed       = "PROVIDER_AUTH_FAILED"
	CodePermissionDenied = "PROVIDER_PERMISSION_DENIED"
	// CodeAccountInactive: the WhatsApp Business Account cannot pay for messages (no valid
	// payment method).
	CodeAccountInactive = "PROVIDER_ACCOUNT_INACTIVE"
	CodeRejected        = "PROVIDER_REJECTED"
	CodeResponseInvalid = "PROVIDER_RESPONSE_INVALID"
	// Refusals for now (a *transport.Temporary carries them as its ProviderCode's meaning; a
	// status webhook that reports one gets these codes).
	CodeRateLimited = "RATE_LIMITED"
	CodeUnavailable = "PROVIDER_UNAVAILABLE"
	// The request.
	CodeInvalidRequest = "INVALID_REQUEST"
	// The recipient.
	CodeInvalidRecipient     = "INVALID_RECIPIENT"
	CodeRecipientUnreachable = "RECIPIENT_UNREACHABLE"
	// CodeWhatsAppUndeliverable: WhatsApp cannot deliver to the number (131026), the code the
	// sandbox's magic recipient gives too, and one of the failures a fallback to SMS follows.
	CodeWhatsAppUndeliverable = "WHATSAPP_UNDELIVERABLE"
	CodeRecipientNotFound     = "RECIPIENT_NOT_FOUND"
	CodeRecipientUnsubscribed = "RECIPIENT_UNSUBSCRIBED"
	// CodeMarketingLimited: Meta held a marketing message back for the health of the
	// recipient's experience (per-user marketing limits); try again days later, not now.
	CodeMarketingLimited = "WHATSAPP_MARKETING_LIMITED"
	// The conversation windows: a free-form message more than 24 hours after the contact's
	// last message (WhatsApp needs a template then; Messenger and Instagram a message tag).
	CodeWhatsAppWindowClosed  = "WHATSAPP_WINDOW_CLOSED"
	CodeMessengerWindowClosed = "MESSENGER_WINDOW_CLOSED"
	// Content.
	CodeMessageTypeUnsupported = "MESSAGE_TYPE_UNSUPPORTED"
	CodeMediaDownloadFailed    = "MEDIA_DOWNLOAD_FAILED"
	CodeMediaUploadFailed      = "MEDIA_UPLOAD_FAILED"
	// Templates.
	CodeTemplateParamsMismatch = "TEMPLATE_PARAMS_MISMATCH"
	CodeTemplateParamsInvalid  = "TEMPLATE_PARAMS_INVALID"
	CodeTemplateTextTooLong    = "TEMPLATE_TEXT_TOO_LONG"
	CodeTemplateNotFound       = "TEMPLATE_NOT_FOUND"
	CodeTemplatePaused         = "TEMPLATE_PAUSED"
	CodeTemplateDisabled       = "TEMPLATE_DISABLED"
	// The sender (the business phone number).
	CodeSenderBlocked       = "SENDER_BLOCKED"
	CodeSenderNotRegistered = "SENDER_NOT_REGISTERED"
	// A refusal of the transport itself, before Meta is asked.
	CodeChannelUnsupported = "CHANNEL_UNSUPPORTED"
)

// metaError is one row of the table: what a Graph API error means for a message.
type metaError struct {
	code    string
	message string
	// retry: a refusal for now (rate limits, outages), tried again.
	retry bool
}

// errorKey is a Graph error code and subcode; subcode 0 is any subcode of the code.
type errorKey struct{ code, subcode int }

// errorTable maps the Graph API's error codes to errorCodes: the Graph API's own
// (https://developers.facebook.com/docs/graph-api/guides/error-handling), the Cloud API's
// (https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes) and the Send
// API's. A (code, subcode) row wins over the code's row. Codes 200-299 are permission errors.
// WhatsApp reports codes 131026, 131047, 131049, 131050, 131051, 131052, 131053, 132xxx also
// asynchronously, in a failed status: MapErrorCode serves those too.
var errorTable = map[errorKey]metaError{
	// Token and rights.
	{190, 0}:    {code: CodeAuthFailed, message: "Meta refused the access token (expired, revoked or invalid)."},
	{102, 0}:    {code: CodeAuthFailed, message: "Meta refused the session of the access token."},
	{104, 0}:    {code: CodeAuthFailed, message: "Meta wants an access token for this request."},
	{463, 0}:    {code: CodeAuthFailed, message: "The access token has expired."},
	{467, 0}:    {code: CodeAuthFailed, message: "The access token is invalid."},
	{10, 0}:     {code: CodePermissionDenied, message: "The token lacks the permission this request needs."},
	{3, 0}:      {code: CodePermissionDenied, message: "The app lacks the capability this request needs."},
	{131005, 0}: {code: CodePermissionDenied, message: "The token lacks the permission this request needs (access denied)."},
	// Slow down, or Meta's trouble: tried again.
	{1, 0}:      {code: CodeUnavailable, message: "Meta reported an unknown error.", retry: true},
	{2, 0}:      {code: CodeUnavailable, message: "Meta's service is temporarily unavailable.", retry: true},
	{4, 0}:      {code: CodeRateLimited, message: "The app reached its Graph API call limit.", retry: true},
	{17, 0}:     {code: CodeRateLimited, message: "The user reached its Graph API call limit.", retry: true},
	{32, 0}:     {code: CodeRateLimited, message: "The Page reached its Graph API call limit.", retry: true},
	{613, 0}:    {code: CodeRateLimited, message: "Calls to this API exceeded the rate limit.", retry: true},
	{80007, 0}:  {code: CodeRateLimited, message: "The WhatsApp Business Account reached its rate limit.", retry: true},
	{130429, 0}: {code: CodeRateLimited, message: "The phone number reached its Cloud API throughput.", retry: true},
	{131048, 0}: {code: CodeRateLimited, message: "The phone number is held to a spam rate limit.", retry: true},
	{131056, 0}: {code: CodeRateLimited, message: "Too many messages from this phone number to this recipient in a short time (pair rate limit).", retry: true},
	{133016, 0}: {code: CodeRateLimited, message: "Too many registrations of this phone number in a short time.", retry: true},
	{131000, 0}: {code: CodeUnavailable, message: "Meta failed to send the message (unknown error).", retry: true},
	{131016, 0}: {code: CodeUnavailable, message: "The Cloud API is overloaded or unavailable.", retry: true},
	{131057, 0}: {code: CodeUnavailable, message: "The WhatsApp Business Account is in maintenance mode.", retry: true},
	{133004, 0}: {code: CodeUnavailable, message: "Meta's server is temporarily unavailable.", retry: true},
	// The request.
	{100, 0}:    {code: CodeInvalidRequest, message: "Meta refused a parameter of the request."},
	{131008, 0}: {code: CodeInvalidRequest, message: "The request misses a parameter Meta requires."},
	{131009, 0}: {code: CodeInvalidRequest, message: "A parameter value is not valid (for example too many buttons or too long a title)."},
	// The recipient and the windows.
	{100, 2018001}: {code: CodeRecipientNotFound, message: "Meta knows no user with this id for the Page."},
	{131021, 0}:    {code: CodeInvalidRecipient, message: "The recipient is the sending phone number itself."},
	{131062, 0}:    {code: CodeInvalidRecipient, message: "This message cannot go to a business-scoped user id; it needs the recipient's phone number."},
	{131026, 0}:    {code: CodeWhatsAppUndeliverable, message: "WhatsApp cannot deliver to the recipient (no WhatsApp account, outdated app, or terms not accepted)."},
	{551, 0}:       {code: CodeRecipientUnreachable, message: "The person is not available on Messenger right now (blocked the Page or left)."},
	{131050, 0}:    {code: CodeRecipientUnsubscribed, message: "The recipient stopped marketing messages from this business."},
	{131049, 0}:    {code: CodeMarketingLimited, message: "Meta held the marketing message back for the recipient's experience; try again later."},
	{130472, 0}:    {code: CodeMarketingLimited, message: "The recipient is part of a Meta marketing-message experiment."},
	{131047, 0}:    {code: CodeWhatsAppWindowClosed, message: "More than 24 hours passed since the contact's last message: only a template can reach them now."},
	{470, 0}:       {code: CodeWhatsAppWindowClosed, message: "More than 24 hours passed since the contact's last message: only a template can reach them now."},
	{10, 2018278}:  {code: CodeMessengerWindowClosed, message: "The message falls outside Messenger's 24-hour window."},
	{10, 2534022}:  {code: CodeMessengerWindowClosed, message: "The message falls outside Instagram's 24-hour window."},
	// Content.
	{131051, 0}: {code: CodeMessageTypeUnsupported, message: "WhatsApp does not support this message type."},
	{131052, 0}: {code: CodeMediaDownloadFailed, message: "WhatsApp could not download the media the message names."},
	{131053, 0}: {code: CodeMediaUploadFailed, message: "WhatsApp could not process the media the message names (type or size)."},
	// Templates.
	{132000, 0}: {code: CodeTemplateParamsMismatch, message: "The number of template parameters does not match the template."},
	{132001, 0}: {code: CodeTemplateNotFound, message: "The template does not exist in this language, or is not approved."},
	{132005, 0}: {code: CodeTemplateTextTooLong, message: "The template's text with its parameters is too long."},
	{132007, 0}: {code: CodeTemplateParamsInvalid, message: "A template parameter breaks WhatsApp's formatting policy."},
	{132012, 0}: {code: CodeTemplateParamsInvalid, message: "A template parameter is not of the format the template expects."},
	{132015, 0}: {code: CodeTemplatePaused, message: "The template is paused for its low quality."},
	{132016, 0}: {code: CodeTemplateDisabled, message: "The template is disabled for its low quality."},
	// The sender.
	{131031, 0}: {code: CodeSenderBlocked, message: "The WhatsApp Business Account is locked or restricted."},
	{368, 0}:    {code: CodeSenderBlocked, message: "The sender is temporarily blocked for policy violations."},
	{131042, 0}: {code: CodeAccountInactive, message: "The WhatsApp Business Account has a payment problem (no valid payment method)."},
	{131037, 0}: {code: CodeSenderNotRegistered, message: "The phone number's display name is not approved yet."},
	{131045, 0}: {code: CodeSenderNotRegistered, message: "The phone number is not registered (certificate missing)."},
	{133000, 0}: {code: CodeSenderNotRegistered, message: "The phone number's previous deregistration did not finish."},
	{133010, 0}: {code: CodeSenderNotRegistered, message: "The phone number is not registered on the Cloud API."},
}

// permissionRow is the meaning of codes 200-299 (API permission errors).
var permissionRow = metaError{code: CodePermissionDenied, message: "The token lacks the permission this request needs."}

func lookup(code, subcode int) (metaError, bool) {
	if e, ok := errorTable[errorKey{code, subcode}]; ok && subcode != 0 {
		return e, true
	}
	if e, ok := errorTable[errorKey{code, 0}]; ok {
		return e, true
	}
	if code >= 200 && code <= 299 {
		return permissionRow, true
	}
	return metaError{}, false
}

// MapErrorCode translates a Graph API error code and subcode (0 when none) into the errorCode a
// message fails with, and whether the refusal is for now (worth trying again) rather than for
// good. A code the table does not know is PROVIDER_REJECTED, for good.
func MapErrorCode(code, subcode int) (switchboardCode string, temporary bool) {
	if e, ok := lookup(code, subcode); ok {
		return e.code, e.retry
	}
	return CodeRejected, false
}

// ProviderCode is the form of a Graph error in Failure.ProviderCode: "code", or
// "code/subcode" when there is a subcode.
func ProviderCode(code, subcode int) string {
	if subcode != 0 {
		return strconv.Itoa(code) + "/" + strconv.Itoa(subcode)
	}
	return strconv.Itoa(code)
}

// graphError is the Graph API's error body, {"error": {…}}.
type graphError struct {
	Message     string          `json:"message"`
	Type        string          `json:"type"`
	Code        int             `json:"code"`
	Subcode     int             `json:"error_subcode"`
	IsTransient bool            `json:"is_transient"`
	Data        json.RawMessage `json:"error_data"`
	TraceID     string          `json:"fbtrace_id"`
}

// details is error_data.details; some Graph APIs send error_data as a string instead.
func (e *graphError) details() string {
	var d struct {
		Details string `json:"details"`
	}
	if json.Unmarshal(e.Data, &d) == nil && d.Details != "" {
		return d.Details
	}
	var s string
	if json.Unmarshal(e.Data, &s) == nil {
		return s
	}
	return ""
}

// maxDetail bounds Meta's words kept in an error.
const maxDetail = 500

// classify turns a non-2xx answer to op into the errors transport.Transport documents.
// secrets are what the error must never repeat (the token first).
func classify(op string, status int, header http.Header, body []byte, secrets []string) error {
	var env struct {
		Error *graphError `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil || (env.Error.Code == 0 && env.Error.Message == "") {
		if status == http.StatusTooManyRequests || status >= 500 {
			return &transport.Temporary{Err: fmt.Errorf("meta: %s: HTTP %d", op, status), RetryAfter: retryAfter(header, time.Now()),
				NotTaken: status >= 500}
		}
		// Not the Graph API's answer (a proxy, a gateway): tried again as trouble on the way.
		return fmt.Errorf("meta: %s: HTTP %d without a Graph API error body", op, status)
	}
	e := env.Error
	pc := ProviderCode(e.Code, e.Subcode)
	said := e.Message
	if d := e.details(); d != "" {
		said += ": " + d
	}
	said = truncate(scrub(said, secrets...), maxDetail)
	row, known := lookup(e.Code, e.Subcode)
	if row.retry || e.IsTransient || status == http.StatusTooManyRequests || status >= 500 {
		return &transport.Temporary{Err: fmt.Errorf("meta: %s: HTTP %d, Meta code %s: %s", op, status, pc, said),
			RetryAfter: retryAfter(header, time.Now()), ProviderCode: pc, NotTaken: status >= 500}
	}
	switch {
	case !known && status == http.StatusUnauthorized: // code 0, AuthException, among others
		row = errorTable[errorKey{190, 0}]
	case !known:
		row = metaError{code: CodeRejected, message: "Meta refused the request."}
	}
	msg := row.message
	if said != "" {
		msg += " Meta said: " + said
	}
	return &transport.Failure{Code: row.code, Message: msg, ProviderCode: pc, ProviderFault: row.code == CodeAuthFailed}
}

// retryAfter is how long Meta asked to wait: Retry-After (seconds or an HTTP date), else the
// longest estimated_time_to_regain_access (minutes) of X-Business-Use-Case-Usage; zero when
// neither says.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
		if at, err := http.ParseTime(v); err == nil && at.After(now) {
			return at.Sub(now)
		}
	}
	var usage map[string][]struct {
		Minutes int `json:"estimated_time_to_regain_access"`
	}
	if json.Unmarshal([]byte(h.Get("X-Business-Use-Case-Usage")), &usage) != nil {
		return 0
	}
	longest := 0
	for _, uses := range usage {
		for _, u := range uses {
			longest = max(longest, u.Minutes)
		}
	}
	return time.Duration(longest) * time.Minute
}

// scrub removes the secrets (four characters or more) from s, should Meta's answer repeat them.
func scrub(s string, secrets ...string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
