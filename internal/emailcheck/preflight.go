package emailcheck

import (
	"context"
	"fmt"
)

// The errorCodes of the email pre-flight (spec: States/Message).
const (
	CodeInvalidRecipient    = "EMAIL_INVALID_RECIPIENT"
	CodeDomainNotFound      = "EMAIL_DOMAIN_NOT_FOUND"
	CodeRecipientSuppressed = "EMAIL_RECIPIENT_SUPPRESSED"
)

// Preflight runs the spec's email pre-flight on a recipient before mail goes out: a malformed
// address, an address on the project's suppression list, a domain with no MX and no A record.
// It returns the errorCode and a message for the caller, or "" to let the mail go. An
// unsubscribe entry refuses the mail only when refuseUnsubscribed is set (a broadcast's mail,
// or any mail of a project whose unsubscribes stop everything); every other entry refuses it
// always. A domain DNS cannot answer for is let through: the relay finds out, and a passing DNS
// outage must not fail every mail. Live mail only asks DNS (test mail goes to the sandbox).
func (c *Checker) Preflight(ctx context.Context, project string, testMode bool, address string, refuseUnsubscribed bool) (code, message string, err error) {
	normalized, domain, err := Normalize(address)
	if err != nil {
		return CodeInvalidRecipient, fmt.Sprintf("The recipient address is malformed: %v.", err), nil
	}
	entry, err := c.Suppressed(ctx, project, testMode, normalized)
	if err != nil {
		return "", "", err
	}
	if entry != nil && (entry.Reason != ReasonUnsubscribe || refuseUnsubscribed) {
		return CodeRecipientSuppressed, fmt.Sprintf(
			"The recipient is on this project's suppression list (%s since %s); remove it there to send to it again.",
			entry.Reason, entry.CreatedAt.Format("2006-01-02")), nil
	}
	if !testMode && c.Domain(ctx, domain) == DomainNotFound {
		return CodeDomainNotFound, fmt.Sprintf("The recipient's domain %s has no MX and no A record: no mail can reach it.", domain), nil
	}
	return "", "", nil
}
