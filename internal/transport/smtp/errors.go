package smtp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// Switchboard errorCodes the transport fails a message with (docs/transports.md, SMTP).
const (
	// CodeProviderAuthFailed: the relay refused the username and password (5xx to AUTH), or offers no AUTH PLAIN or LOGIN.
	CodeProviderAuthFailed = "PROVIDER_AUTH_FAILED"
	// CodeProviderTLSFailed: the relay's certificate did not verify, or it does not offer the STARTTLS the Provider requires.
	CodeProviderTLSFailed = "PROVIDER_TLS_FAILED"
	// CodeProviderRejected: the relay refused the connection itself (5xx to the greeting or to EHLO).
	CodeProviderRejected = "PROVIDER_REJECTED"
	// CodeInvalidRecipient: the recipient's mailbox does not exist (5.1.1, 5.1.2, 5.1.3, 5.1.10, "user unknown"), or the address is malformed.
	CodeInvalidRecipient = "EMAIL_INVALID_RECIPIENT"
	// CodeRecipientRejected: the relay refused the recipient for another reason (policy, relaying denied, mailbox disabled).
	CodeRecipientRejected = "EMAIL_RECIPIENT_REJECTED"
	// CodeTooLarge: the mail is larger than the relay takes (552, 5.3.4, 5.2.3).
	CodeTooLarge = "EMAIL_TOO_LARGE"
	// CodeRejected: the relay refused the mail at MAIL FROM or after DATA (sender policy, content).
	CodeRejected = "EMAIL_REJECTED"
	// CodeAttachmentTooLarge: the attachments together exceed Config.MaxAttachmentBytes (40 MB by default).
	CodeAttachmentTooLarge = "EMAIL_ATTACHMENT_TOO_LARGE"
	// CodeAttachmentUnavailable: an attachment's URL answered 4xx or is not http(s), or the attachment has neither content nor URL.
	CodeAttachmentUnavailable = "EMAIL_ATTACHMENT_UNAVAILABLE"
	// CodeInvalidSender: the From address is malformed.
	CodeInvalidSender = "EMAIL_INVALID_SENDER"
	// CodeInvalidReplyTo: the Reply-To address is malformed.
	CodeInvalidReplyTo = "EMAIL_INVALID_REPLY_TO"
	// CodeInvalidHeader: an extra header (or an inline attachment's Content-ID) cannot be written, or would replace one the transport writes.
	CodeInvalidHeader = "EMAIL_INVALID_HEADER"
	// CodeDKIMFailed: the From domain's DKIM key cannot sign (incomplete, or neither RSA nor Ed25519).
	CodeDKIMFailed = "EMAIL_DKIM_FAILED"
	// CodeChannelUnsupported: the message is not on the email channel.
	CodeChannelUnsupported = "CHANNEL_UNSUPPORTED"
)

// ErrInvalidCredentials: the relay refused the Provider's username and password; Check's error
// wraps it.
var ErrInvalidCredentials = errors.New("smtp: the relay refused the username or password")

// stage is the step of the conversation an answer came to: what a reply code means depends on it.
type stage string

const (
	stageConnect stage = "connect" // the greeting and EHLO
	stageTLS     stage = "starttls"
	stageAuth    stage = "auth"
	stageMail    stage = "mail from"
	stageRcpt    stage = "rcpt to"
	stageData    stage = "data"
)

// reply is a relay's refusal: its code, enhanced status (RFC 3463; "" when it gave none) and text.
type reply struct {
	code     int
	enhanced string
	text     string
}

// enhancedStatus is an RFC 3463 status at the start of a reply's text.
var enhancedStatus = regexp.MustCompile(`^([245]\.\d{1,3}\.\d{1,3})(?:\s+|$)`)

// parseReply reads a textproto error: the enhanced status of its first line (dropped from every
// line, as RFC 2034 repeats it) and the text, on one line.
func parseReply(e *textproto.Error) reply {
	r := reply{code: e.Code}
	lines := strings.Split(e.Msg, "\n")
	if m := enhancedStatus.FindStringSubmatch(lines[0]); m != nil && m[1][0] == strconv.Itoa(e.Code)[0] {
		r.enhanced = m[1]
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(strings.TrimPrefix(l, r.enhanced), " ")
		}
	}
	r.text = strings.Join(lines, " ")
	return r
}

// providerCode is the reply as ProviderCode carries it: "550 5.1.1", or "550".
func (r reply) providerCode() string {
	if r.enhanced != "" {
		return strconv.Itoa(r.code) + " " + r.enhanced
	}
	return strconv.Itoa(r.code)
}

// invalidMailbox: the recipient's address does not exist (RFC 3463 5.1.1 bad mailbox, 5.1.2
// bad domain, 5.1.3 bad syntax; RFC 7505 5.1.10 null MX), or an old relay says so in words.
func (r reply) invalidMailbox() bool {
	switch r.enhanced {
	case "5.1.1", "5.1.2", "5.1.3", "5.1.10":
		return true
	}
	if r.code != 550 && r.code != 553 {
		return false
	}
	t := strings.ToLower(r.text)
	return strings.Contains(t, "user unknown") || strings.Contains(t, "unknown user") || strings.Contains(t, "no such")
}

// tooLarge: the mail exceeds what the relay takes (5.3.4 message too big, 5.2.3 over the
// administrative limit; 552 at MAIL FROM or after DATA, where it means the size).
func (r reply) tooLarge(st stage) bool {
	if r.enhanced == "5.3.4" || r.enhanced == "5.2.3" {
		return true
	}
	return r.code == 552 && (st == stageMail || st == stageData) && r.enhanced != "5.2.2"
}

// classify turns what a step of the conversation returned into the errors transport.Transport
// documents. Relay text is kept (cut short, without the password); the mail is never quoted.
func (t *Transport) classify(ctx context.Context, st stage, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("smtp: %s: %w", st, ctxErr)
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		// The connection's deadline is ctx's, which may pass a moment before ctx says so.
		return fmt.Errorf("smtp: %s: the relay did not answer in time: %w", st, context.DeadlineExceeded)
	}
	if certificateError(err) {
		return &transport.Failure{Code: CodeProviderTLSFailed,
			Message: fmt.Sprintf("The relay's TLS certificate could not be verified: %s", t.scrub(err.Error()))}
	}
	var te *textproto.Error
	if !errors.As(err, &te) {
		// The network, a TLS handshake, a timeout: tried again.
		return fmt.Errorf("smtp: %s: %w", st, err)
	}
	r := parseReply(te)
	said := fmt.Sprintf("(%s) %s", r.providerCode(), t.scrub(r.text))
	fail := func(code, what string) error {
		// Refusals of the connection, TLS or the login are about the relay's account, not the
		// mail: another relay may take it.
		return &transport.Failure{Code: code, ProviderCode: r.providerCode(), Message: what + " " + said,
			ProviderFault: st == stageAuth || st == stageTLS || st == stageConnect || code == CodeProviderAuthFailed}
	}
	switch {
	case r.code >= 400 && r.code < 500:
		// Whatever the stage, a 4xx reply means the relay did not take the mail (RFC 5321 §4.2.1).
		return &transport.Temporary{ProviderCode: r.providerCode(), NotTaken: true,
			Err: fmt.Errorf("smtp: %s: the relay answered %s", st, said)}
	case r.code < 500 || r.code > 599:
		return fmt.Errorf("smtp: %s: unexpected reply %s", st, said)
	}
	if r.code == 530 && st != stageAuth { // RFC 4954: authentication required
		return fail(CodeProviderAuthFailed, "The relay requires the Provider to authenticate.")
	}
	switch st {
	case stageAuth:
		return fail(CodeProviderAuthFailed, "The relay refused the Provider's username or password.")
	case stageTLS:
		return fail(CodeProviderTLSFailed, "The relay refused to start TLS.")
	case stageConnect:
		return fail(CodeProviderRejected, "The relay refused the connection.")
	case stageRcpt:
		switch {
		case r.invalidMailbox():
			return fail(CodeInvalidRecipient, "The recipient's mailbox does not exist.")
		case r.tooLarge(st):
			return fail(CodeTooLarge, "The mail is larger than the relay takes.")
		}
		return fail(CodeRecipientRejected, "The relay refused the recipient.")
	}
	if r.tooLarge(st) {
		return fail(CodeTooLarge, "The mail is larger than the relay takes.")
	}
	return fail(CodeRejected, "The relay refused the mail.")
}

// certificateError: the relay's certificate did not verify (unknown authority, wrong name,
// expired), as opposed to a handshake the network broke.
func certificateError(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &hostname) ||
		errors.As(err, &invalid)
}

// maxReplyText bounds the relay text an error repeats.
const maxReplyText = 300

// scrub makes relay text fit for an error: the password (and the AUTH lines that carry it, in
// base64) removed, control characters dropped, cut to maxReplyText.
func (t *Transport) scrub(s string) string {
	if p := t.cfg.Password; p != "" {
		for _, secret := range []string{
			p,
			base64.StdEncoding.EncodeToString([]byte(p)),
			base64.StdEncoding.EncodeToString([]byte("\x00" + t.cfg.Username + "\x00" + p)),
		} {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxReplyText {
		s = strings.ToValidUTF8(s[:maxReplyText], "") + "…"
	}
	return s
}
