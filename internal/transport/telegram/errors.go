package telegram

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// The errorCode values a Bot API refusal maps to (docs/transports.md, Telegram).
const (
	CodeAuthFailed        = "PROVIDER_AUTH_FAILED"
	CodeRecipientBlocked  = "RECIPIENT_BLOCKED"
	CodeRecipientNotFound = "RECIPIENT_NOT_FOUND"
	CodeRejected          = "PROVIDER_REJECTED"
	// Refusals of the transport itself, before Telegram is asked (and PROVIDER_REJECTED for
	// content Telegram would refuse).
	CodeMessageTypeUnsupported = "MESSAGE_TYPE_UNSUPPORTED"
	CodeInvalidRecipient       = "INVALID_RECIPIENT"
)

// refusals map the Bot API's refusals ({ok:false, error_code, description}) to Switchboard's
// terms, first match wins. A row matches when error_code is code (0: any code from 500 up) and
// the description contains phrase (lower case; "": any). An empty failure code means "try
// again". The Bot API documents error_code as subject to change and gives no other codes, so
// the description decides between the refusals of one code.
var refusals = []struct {
	code    int
	phrase  string
	failure string
}{
	{429, "", ""}, // flood control: parameters.retry_after says how long
	{0, "", ""},   // Telegram's own trouble
	{401, "", CodeAuthFailed},
	{404, "", CodeAuthFailed}, // the Bot API answers 404 to a token of the wrong shape
	{403, "bot was blocked by the user", CodeRecipientBlocked},
	{403, "user is deactivated", CodeRecipientBlocked},
	{403, "bot was kicked", CodeRecipientBlocked},
	{400, "chat not found", CodeRecipientNotFound},
	{400, "", CodeRejected},
	{403, "", CodeRejected}, // e.g. "bot can't initiate conversation with a user"
}

// classify is the error of a refusal of method: *transport.Temporary or *transport.Failure, with
// the error code as ProviderCode. A code no row names (409, 413) is a refusal for good.
func classify(method string, code int, description string, retryAfter int) error {
	lower := strings.ToLower(description)
	for _, r := range refusals {
		if r.code != code && (r.code != 0 || code < 500) {
			continue
		}
		if r.phrase != "" && !strings.Contains(lower, r.phrase) {
			continue
		}
		if r.failure == "" {
			return temporary(method, code, description, retryAfter)
		}
		return failure(r.failure, code, description)
	}
	return failure(CodeRejected, code, description)
}

func failure(code string, errorCode int, description string) *transport.Failure {
	if description == "" {
		description = "the Bot API refused the request"
	}
	return &transport.Failure{Code: code, Message: description, ProviderCode: strconv.Itoa(errorCode)}
}

func temporary(method string, code int, description string, retryAfter int) *transport.Temporary {
	return newTemporary(fmt.Errorf("telegram: %s: %d %s", method, code, description),
		time.Duration(retryAfter)*time.Second, strconv.Itoa(code))
}

func newTemporary(err error, retryAfter time.Duration, providerCode string) *transport.Temporary {
	return &transport.Temporary{Err: err, RetryAfter: retryAfter, ProviderCode: providerCode}
}

// asTemporary returns the *transport.Temporary err carries, or nil.
func asTemporary(err error) *transport.Temporary {
	var t *transport.Temporary
	if errors.As(err, &t) {
		return t
	}
	return nil
}
