// Package mailreport reads the reports that come back to the platform's inbound SMTP listener
// about mail it sent: delivery status notifications (bounces, delays and positive
// notifications, RFC 3464) and abuse feedback reports (complaints, RFC 5965 ARF). Parse tells
// such a report from ordinary mail and returns who it is about and what happened.
package mailreport

import (
	"errors"
	"strings"
	"time"
)

var (
	// ErrNotAReport: the message is ordinary mail, not a delivery status notification or a
	// feedback report.
	ErrNotAReport = errors.New("not a delivery or feedback report")
	// ErrMalformed: the message says it is a report but cannot be read as one: broken MIME
	// structure, or a status part without a recipient or a feedback part without a type.
	ErrMalformed = errors.New("malformed report")
	// ErrTooLarge: the message is larger than MaxSize; it is not read.
	ErrTooLarge = errors.New("message too large")
)

// MaxSize is the largest message Parse reads, in bytes: far above a report (the returned
// message is usually its headers only) and a bound on the work hostile input can cause.
const MaxSize = 10 << 20

// Kind is what a report says happened.
type Kind string

const (
	// KindBounce: delivery to at least one recipient failed for good (a DSN).
	KindBounce Kind = "bounce"
	// KindDelay: delivery is delayed and the reporting server will go on trying; no recipient
	// failed (a DSN).
	KindDelay Kind = "delay"
	// KindDelivered: a positive DSN, sent when asked for (RFC 3461 NOTIFY=SUCCESS): every
	// recipient delivered, relayed on or expanded.
	KindDelivered Kind = "delivered"
	// KindComplaint: a feedback report (ARF), usually a recipient marking the mail as spam;
	// FeedbackType says which kind of feedback.
	KindComplaint Kind = "complaint"
)

// Report is a delivery status notification or a feedback report about one message the
// platform sent.
type Report struct {
	Kind Kind
	// Recipients are the addresses the report is about: one per recipient block of a DSN; for
	// a feedback report, its Original-Rcpt-To fields or, without them, the original's To.
	Recipients []Recipient
	// OriginalMessageID is the Message-ID of the returned original, without angle brackets;
	// empty when the report returns neither the message nor its headers.
	OriginalMessageID string
	// OriginalEnvelopeID is the ENVID given when the message was sent (RFC 3461), as a DSN's
	// Original-Envelope-Id or a feedback report's field of that name returns it.
	OriginalEnvelopeID string
	// OriginalFrom and OriginalTo are the original's From and To: the addresses, comma
	// separated, when they parse, else the field as written. A feedback report without the
	// original's From gives its Original-Mail-From.
	OriginalFrom, OriginalTo string
	// ReportingMTA is the host that wrote the report (Reporting-MTA, its type removed).
	ReportingMTA string
	// FeedbackType is a feedback report's Feedback-Type in lower case: abuse, fraud, virus,
	// other, not-spam or auth-failure (RFC 5965, RFC 6591). Empty for a DSN.
	FeedbackType string
	// Arrival is when the reporting server received the original (Arrival-Date), in UTC;
	// zero when not given or unreadable.
	Arrival time.Time
}

// Recipient is what a report says about one recipient of the original message.
type Recipient struct {
	// FinalRecipient is the address delivery was tried to; OriginalRecipient the one the
	// sender gave, when the report says (RFC 3461 ORCPT). Both without their "rfc822;" type.
	FinalRecipient, OriginalRecipient string
	// Action is failed, delayed, delivered, relayed or expanded, in lower case; empty in a
	// feedback report.
	Action string
	// Status is the enhanced status code (RFC 3463), as "5.1.1", without the comment that may
	// follow it; taken from the diagnostic when the Status field is missing.
	Status string
	// DiagnosticCode is the remote server's reply, as "550 5.1.1 user unknown", its type
	// ("smtp;") removed.
	DiagnosticCode string
	// RemoteMTA is the host that gave the diagnostic, its type ("dns;") removed.
	RemoteMTA string
}

// Permanent reports whether delivery to the recipient failed for good: the action is failed,
// or the status is of class 5. Such an address is not worth sending to again.
func (r Recipient) Permanent() bool {
	return r.Action == "failed" || strings.HasPrefix(r.Status, "5.")
}

// PermanentFailures returns the recipients whose delivery failed for good, the addresses to
// suppress after a bounce; none for a delay, a positive DSN or a complaint.
func (r *Report) PermanentFailures() []Recipient {
	var out []Recipient
	for _, rcpt := range r.Recipients {
		if rcpt.Permanent() {
			out = append(out, rcpt)
		}
	}
	return out
}

// kindOf is a DSN's kind from its recipients: any permanent failure makes a bounce, else any
// delay (action delayed, or a status of class 4) makes a delay, else it is a positive DSN.
func kindOf(rcpts []Recipient) Kind {
	delayed := false
	for _, r := range rcpts {
		if r.Permanent() {
			return KindBounce
		}
		if r.Action == "delayed" || strings.HasPrefix(r.Status, "4.") {
			delayed = true
		}
	}
	if delayed {
		return KindDelay
	}
	return KindDelivered
}
