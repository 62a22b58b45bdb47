// Package mailin is the inbound SMTP listener behind the platform's MX records. It takes mail
// for the addresses a Recipients says exist, refusing every other one during the SMTP dialogue
// (never a bounce afterwards, so no backscatter), checks the message's SPF, DKIM and DMARC,
// parses it, reads it as a bounce or complaint report when it is one, and hands it whole to a
// Handler. The sending server hears 250 only once the Handler has stored the message; until
// then a failure answers 451 and the sender tries again.
//
// Anyone may connect, so what a client can hold of the server is bounded (Limits): the
// connections at once, in all and from one address; a session's whole length, not only each
// wait; and the bytes of messages all sessions hold at once. Over a limit a client hears a 4xx
// answer and comes back later.
package mailin

import (
	"context"
	"errors"
	"net"
	"net/mail"
	"net/netip"
	"time"

	"github.com/switchboard-io/switchboard/internal/mailreport"
)

var (
	// ErrUnknownRecipient: the address takes no mail. Recipients.Lookup returns it (wrapped) to
	// refuse the address with 550 5.1.1 at RCPT TO.
	ErrUnknownRecipient = errors.New("unknown recipient")
	// ErrRejected: the message is refused for good. Handler.Deliver returns it (wrapped) to
	// answer 550 5.7.1 with the error's message, which the sending server shows its user: it
	// must say nothing private.
	ErrRejected = errors.New("message rejected")
)

// Recipients decides at RCPT TO whether an address takes mail, so that unknown recipients are
// refused during the SMTP dialogue and never bounced later.
type Recipients interface {
	// Lookup returns where mail to address goes. The address's domain is in lower case; its
	// local part is as the sender wrote it. ErrUnknownRecipient (wrapped) refuses it with
	// 550 5.1.1; any other error answers 451 4.3.0, and the sending server tries later.
	Lookup(ctx context.Context, address string) (Route, error)
}

// Route is where one accepted recipient's mail goes.
type Route struct {
	Project string // the project (a Kubernetes namespace)
	Sender  string // the sender receiving it; empty for a bounce address
	// Bounce: the address is a bounce (MAIL FROM) address, where only delivery reports and
	// complaints are expected.
	Bounce bool
	// Unsubscribe is the token of a one-click unsubscribe address (RFC 2369's mailto:): the
	// mail is the request, and its content does not matter.
	Unsubscribe string
	// Address is the recipient as written (for a catch-all, with the original local part);
	// the RCPT TO address when Lookup leaves it empty.
	Address string
}

// Handler takes a received mail.
type Handler interface {
	// Deliver stores m. It is called once per message, with every accepted recipient; m is
	// the server's again once it returns. nil answers 250: the sending server forgets the
	// message, so it must be stored by then. An error wrapping ErrRejected answers 550 5.7.1
	// with its message; any other error answers 451 4.3.0 and the sending server tries again
	// later, so Deliver may see a message twice.
	Deliver(ctx context.Context, m *Mail) error
}

// Resolver is the DNS the checks ask: the methods blitiri.com.ar/go/spf uses, LookupTXT also
// for DKIM keys and DMARC policies. *dnsresolve.Resolver and *net.Resolver satisfy it. Errors
// must be *net.DNSError, unwrapped: the libraries tell a missing record from a failed lookup
// with type assertions on it.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupAddr(ctx context.Context, addr string) ([]string, error)
}

// Mail is one message as received, with what the checks found and what it says.
type Mail struct {
	Envelope Envelope
	Auth     Auth

	Subject string
	From    mail.Address // the first From address; zero when there is none
	To, Cc  []mail.Address
	Date    time.Time // zero when missing or unreadable
	// MessageID, and the ids InReplyTo and References name, are without angle brackets.
	MessageID  string
	InReplyTo  []string
	References []string
	Text, HTML string // the bodies; Text is made from HTML when the message has no text part
	// Attachments are the parts sent as files; Inlines the parts shown within the message
	// (images an HTML body names by Content-ID).
	Attachments, Inlines []Attachment
	// Warnings are what the MIME parser found wrong and read past; what they name may be
	// missing from the fields above.
	Warnings []string

	// Report is the delivery report or complaint the message is, read when a recipient is a
	// bounce address or the message is a multipart/report; nil for ordinary mail.
	Report *mailreport.Report
	// Raw is the message as received, byte for byte. Its bytes count against the server's
	// MaxBufferedBytes until Deliver returns: a Handler must not keep it.
	Raw *RawMail

	contentType string // the media type of the message's own Content-Type, in lower case
}

// Envelope is what the SMTP dialogue said about a message.
type Envelope struct {
	MailFrom   string  // the MAIL FROM address; empty for the null sender <> of bounces
	Recipients []Route // the accepted recipients, in RCPT TO order
	RemoteIP   netip.Addr
	HELO       string // the name the sending server gave in EHLO or HELO
	TLS        bool   // the message came over TLS (STARTTLS)
	ReceivedAt time.Time
}

// Results of SPF, DKIM and DMARC checks, as Authentication-Results writes them (RFC 8601).
const (
	ResultPass      = "pass"
	ResultFail      = "fail"
	ResultSoftFail  = "softfail"  // SPF only
	ResultNeutral   = "neutral"   // SPF only
	ResultNone      = "none"      // no record published
	ResultTempError = "temperror" // a lookup failed; a later check may tell
	ResultPermError = "permerror" // the record or signature is broken
)

// Auth is what the sender authentication checks found, an Authentication-Results in short.
// Nothing is refused for them: the user decides what a failure means.
type Auth struct {
	// SPF: pass, fail, softfail, neutral, none, temperror or permerror for the MAIL FROM
	// domain (the HELO name for the null sender) and the sending IP.
	SPF string
	// DKIM has one result per signature, in header order; broken or forged ones included.
	DKIM []DKIMResult
	// DMARC: pass, fail, none (no policy, or no From domain) or temperror, for the From
	// header's domain.
	DMARC string
	// DMARCPolicy is what the From domain asks for mail failing DMARC: none, quarantine or
	// reject; empty without a policy.
	DMARCPolicy string
}

// DKIMResult is the check of one DKIM signature.
type DKIMResult struct {
	Domain   string // the signing domain, d=
	Selector string // s=, when the signature gives it
	Result   string // pass, fail, temperror or permerror
	Reason   string // why it did not pass
}

// Attachment is one file or inline part of a message.
type Attachment struct {
	Filename    string
	ContentType string // without parameters, as "image/png"
	ContentID   string // without angle brackets; what an HTML body's cid: URLs name
	Content     []byte // decoded
}
