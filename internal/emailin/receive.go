package emailin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
	"github.com/switchboard-io/switchboard/internal/mailin"
	"github.com/switchboard-io/switchboard/internal/mailreport"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/unsubscribe"
)

// The errorCodes of a mail a bounce came back for (docs/email.md).
const (
	// CodeBounced: the receiving side refused the mail for good (a 5.x.x status).
	CodeBounced = "EMAIL_BOUNCED"
	// CodeSoftBounced: the relay gave up on a refusal for now (a 4.x.x status: a full
	// mailbox, a server refusing for the moment).
	CodeSoftBounced = "EMAIL_SOFT_BOUNCED"
)

// Receiver stores what the listener receives (mailin.Handler).
type Receiver struct {
	Messages *message.Service
	Checks   *emailcheck.Checker
	Pool     *pgxpool.Pool
	// Unsubscribes records the mail sent to unsubscribe addresses (Router.Unsubscribes).
	Unsubscribes Unsubscribes
	Log          logr.Logger
}

var _ mailin.Handler = (*Receiver)(nil)

// Deliver turns a report about a mail Switchboard sent into that mail's status and the
// project's suppression list, and any other mail into an inbound email message of each sender
// it was addressed to. A report that names no mail of the project it reached is kept as an
// ordinary mail where a sender received it (a human may need to read it), and dropped at a
// return path.
//
// A mail is stored once for its recipients: one message per sender, however many of its
// addresses (a catch-all's) the mail named, to the first of them; all of them in one
// transaction, so that a failure stores none and the sending server's retry stores each once;
// and each file once, whatever the number of senders.
func (h *Receiver) Deliver(ctx context.Context, m *mailin.Mail) error {
	if err := h.unsubscribe(ctx, m); err != nil {
		return err
	}
	if m.Report != nil {
		handled, err := h.report(ctx, m)
		if handled || err != nil {
			return err
		}
	}
	var ins []message.Inbound
	senders := map[[2]string]bool{}
	for _, route := range m.Envelope.Recipients {
		key := [2]string{route.Project, route.Sender}
		if route.Sender == "" || senders[key] {
			continue
		}
		senders[key] = true
		ins = append(ins, inbound(route, m))
	}
	if len(ins) == 0 {
		return nil
	}
	if _, err := h.Messages.ReceiveAll(ctx, ins); err != nil {
		return fmt.Errorf("store inbound mail: %w", err)
	}
	return nil
}

// unsubscribe records the unsubscribe each of m's unsubscribe addresses asks for (RFC 8058 3.2's
// mailto: form). The mail itself is not kept: whoever holds the address may use it, as whoever
// holds the link may.
func (h *Receiver) unsubscribe(ctx context.Context, m *mailin.Mail) error {
	for _, route := range m.Envelope.Recipients {
		if route.Unsubscribe == "" {
			continue
		}
		if h.Unsubscribes == nil {
			return fmt.Errorf("%w: this installation takes no unsubscribe mail", mailin.ErrRejected)
		}
		_, err := h.Unsubscribes.Unsubscribe(ctx, route.Unsubscribe)
		if errors.Is(err, unsubscribe.ErrInvalid) {
			// Its recipient went between RCPT TO and now.
			return fmt.Errorf("%w: this unsubscribe address is no longer valid", mailin.ErrRejected)
		}
		if err != nil {
			return fmt.Errorf("record an unsubscribe by mail: %w", err)
		}
	}
	return nil
}

// inbound is the message a sender received.
func inbound(route mailin.Route, m *mailin.Mail) message.Inbound {
	from := m.From.Address
	if from == "" {
		from = m.Envelope.MailFrom
	}
	in := message.Inbound{Project: route.Project, Sender: route.Sender, Inbound: transport.Inbound{
		Channel: string(v1alpha1.ChannelEmail), From: strings.ToLower(from), To: route.Address, MessageType: "text",
		Text: m.Text, Subject: m.Subject, HTMLBody: m.HTML, ProviderMessageID: m.MessageID, ProfileName: m.From.Name,
		EmailAuth: &transport.EmailAuth{SPF: m.Auth.SPF, DMARC: m.Auth.DMARC, DMARCPolicy: m.Auth.DMARCPolicy},
	}}
	// The mail it answers: In-Reply-To, else the last of References (RFC 5322 3.6.4).
	switch {
	case len(m.InReplyTo) > 0:
		in.ReplyToProviderMessageID = m.InReplyTo[0]
	case len(m.References) > 0:
		in.ReplyToProviderMessageID = m.References[len(m.References)-1]
	}
	for _, d := range m.Auth.DKIM {
		in.EmailAuth.DKIM = append(in.EmailAuth.DKIM, transport.DKIMResult{Domain: d.Domain, Selector: d.Selector, Result: d.Result, Reason: d.Reason})
	}
	for _, a := range append(append([]mailin.Attachment{}, m.Attachments...), m.Inlines...) {
		in.Attachments = append(in.Attachments, transport.Attachment{Filename: a.Filename, ContentType: a.ContentType,
			ContentID: a.ContentID, Content: a.Content})
	}
	return in
}

// report applies a delivery report or complaint to the mail it is about; handled is false when
// it names no mail of the project it reached.
func (h *Receiver) report(ctx context.Context, m *mailin.Mail) (handled bool, err error) {
	r := m.Report
	for _, route := range m.Envelope.Recipients {
		sent, err := h.original(ctx, route, r)
		if err != nil {
			return false, err
		}
		if sent == nil {
			if route.Bounce {
				handled = true // nothing to do, and no one to show it to
			}
			continue
		}
		if err := h.apply(ctx, *sent, r); err != nil {
			return false, err
		}
		handled = true
	}
	return handled, nil
}

// original finds the mail a report is about: the one its return path names, else the one whose
// Message-ID the report quotes, among the live mail of the route's project.
func (h *Receiver) original(ctx context.Context, route mailin.Route, r *mailreport.Report) (*db.Message, error) {
	q := db.Planned(h.Pool)
	var m db.Message
	var err error
	if id, _, ok := domainverify.ParseReturnPath(route.Address); ok && route.Bounce {
		m, err = q.GetMessageByID(ctx, id)
	} else if r.OriginalMessageID != "" {
		pid := r.OriginalMessageID
		m, err = q.GetOutboundEmail(ctx, db.GetOutboundEmailParams{Project: route.Project, ProviderMessageID: &pid,
			Since: time.Now().Add(-partition.Lookback)})
	} else {
		return nil, nil
	}
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && m.Project != route.Project) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find the mail a report is about: %w", err)
	}
	return &m, nil
}

// apply moves the mail a report is about and keeps its recipient off the list when it should be:
// a delivery report marks it delivered; a bounce fails it (hard: EMAIL_BOUNCED and the address
// suppressed; a 4.x.x status the relay gave up on: EMAIL_SOFT_BOUNCED, suppressed for a day); a
// complaint suppresses the address and leaves the mail as it is; a delay changes nothing.
func (h *Receiver) apply(ctx context.Context, sent db.Message, r *mailreport.Report) error {
	switch r.Kind {
	case mailreport.KindDelivered:
		_, err := h.Messages.ApplyStatus(ctx, message.StatusChange{MessageID: sent.ID, Status: transport.StatusDelivered})
		return err
	case mailreport.KindComplaint:
		detail := "complaint"
		if r.FeedbackType != "" {
			detail = "complaint (" + r.FeedbackType + ")"
		}
		return h.Checks.Suppress(ctx, sent.Project, sent.TestMode, sent.Recipient, emailcheck.ReasonComplaint, sent.ID, detail)
	case mailreport.KindBounce:
		for _, rcpt := range r.PermanentFailures() {
			if !sameAddress(rcpt, sent.Recipient) {
				continue
			}
			code, reason := CodeBounced, emailcheck.ReasonHardBounce
			if strings.HasPrefix(rcpt.Status, "4.") {
				code, reason = CodeSoftBounced, emailcheck.ReasonSoftBounce
			}
			detail := strings.TrimSpace(rcpt.Status + " " + rcpt.DiagnosticCode)
			if err := h.Checks.Suppress(ctx, sent.Project, sent.TestMode, sent.Recipient, reason, sent.ID, detail); err != nil {
				return err
			}
			_, err := h.Messages.ApplyStatus(ctx, message.StatusChange{MessageID: sent.ID, Status: transport.StatusFailed,
				Failure: &transport.Failure{Code: code, ProviderCode: rcpt.Status,
					Message: "The recipient's mail server refused the mail: " + shorten(detail, 300)}})
			return err
		}
	}
	return nil
}

// sameAddress tells whether a report's recipient is the mail's (a report without recipient
// addresses is about the mail's only one).
func sameAddress(r mailreport.Recipient, address string) bool {
	if r.FinalRecipient == "" && r.OriginalRecipient == "" {
		return true
	}
	return strings.EqualFold(r.FinalRecipient, address) || strings.EqualFold(r.OriginalRecipient, address)
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
