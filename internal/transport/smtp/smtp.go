// Package smtp is the transport of the email channel: it submits mail to an SMTP relay (a
// Provider of type smtp) over STARTTLS, implicit TLS or, for a relay on loopback, plain SMTP,
// with AUTH PLAIN or LOGIN (RFC 4954), and checks a relay's credentials for the Provider's status.
//
// The mail is built with go-mail (multipart/alternative for an HTML body, multipart/related for
// inline attachments, multipart/mixed for the others), signed with DKIM (RFC 6376, go-msgauth)
// when the From domain has a key, and submitted with go-mail's SMTP client, which lets the
// transport name itself in EHLO before and after STARTTLS and leaves the connection's deadline
// alone: the deadline is the context's, and a cancelled context closes the connection.
//
// No error of this package carries the password, the mail's body or an attachment.
package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// ChannelEmail is the channel the transport carries.
const ChannelEmail = "email"

// Defaults of Config.
const (
	DefaultHeloName           = "localhost"
	DefaultTimeout            = 30 * time.Second
	DefaultAttachmentTimeout  = 30 * time.Second
	DefaultMaxAttachmentBytes = 40 << 20 // the spec's 40 MB, counted as the API counts them
	DefaultSubmissionPort     = 587      // smtp://: submission (RFC 6409)
	DefaultImplicitTLSPort    = 465      // smtps://: submissions (RFC 8314)
)

// Security is how the transport protects its connection to the relay.
type Security int

const (
	// SecurityStartTLS: plain connection upgraded with STARTTLS, which the relay must offer.
	SecurityStartTLS Security = iota
	// SecurityImplicitTLS: TLS from the first byte (smtps, port 465 style).
	SecurityImplicitTLS
	// SecurityNone: plain SMTP, for a relay on loopback only (a local MTA, a test peer).
	SecurityNone
)

func (s Security) String() string {
	switch s {
	case SecurityStartTLS:
		return "STARTTLS"
	case SecurityImplicitTLS:
		return "implicit TLS"
	case SecurityNone:
		return "plain"
	}
	return "Security(" + strconv.Itoa(int(s)) + ")"
}

// Config is what the transport needs to reach the relay.
type Config struct {
	Host string
	// Port zero means 587, or 465 with SecurityImplicitTLS.
	Port     int
	Security Security
	// Username and Password are AUTH's credentials; no AUTH when Username is empty.
	Username, Password string
	// HeloName is the name the transport gives in EHLO; empty means "localhost".
	HeloName string
	// TLSConfig verifies the relay; nil means the system roots. Its ServerName, when empty, is Host.
	TLSConfig *tls.Config
	// Timeout bounds one conversation with the relay, from dialling to the answer to DATA (or
	// to QUIT for Check); zero means 30 s.
	Timeout time.Duration
	// HTTP fetches attachments given by URL; nil means a client with a 30 s timeout. Attachment
	// URLs come from API clients: an installation should pass a client that refuses internal
	// addresses, as webhook deliveries do.
	HTTP *http.Client
	// MaxAttachmentBytes bounds all of a mail's attachments together; zero means 40 MB.
	MaxAttachmentBytes int64
}

// Transport sends email through one relay.
type Transport struct {
	cfg      Config
	addr     string // host:port
	sessions sessions
}

var _ transport.Transport = (*Transport)(nil)

// New returns the transport of cfg, or an error naming what in cfg cannot work (no host, plain
// SMTP to a relay that is not on loopback).
func New(cfg Config) (*Transport, error) {
	if cfg.Host == "" || strings.ContainsAny(cfg.Host, " \t\r\n/@") {
		return nil, errors.New("smtp: the relay's host is missing or not a host name")
	}
	if cfg.Security < SecurityStartTLS || cfg.Security > SecurityNone {
		return nil, fmt.Errorf("smtp: unknown security %d", cfg.Security)
	}
	if err := checkPlain(cfg.Host, cfg.Security); err != nil {
		return nil, err
	}
	if cfg.Port == 0 {
		cfg.Port = defaultPort(cfg.Security)
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return nil, fmt.Errorf("smtp: port %d is out of range", cfg.Port)
	}
	if cfg.HeloName == "" {
		cfg.HeloName = DefaultHeloName
	}
	if strings.ContainsAny(cfg.HeloName, " \t\r\n") {
		return nil, errors.New("smtp: the HELO name may not contain white space")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: DefaultAttachmentTimeout}
	}
	if cfg.MaxAttachmentBytes <= 0 {
		cfg.MaxAttachmentBytes = DefaultMaxAttachmentBytes
	}
	return &Transport{cfg: cfg, addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))}, nil
}

// ParseURL reads a Provider's baseURL: smtp://host[:port] is STARTTLS (port 587 by default),
// smtps://host[:port] implicit TLS (465), smtp://host[:port]?tls=none plain SMTP, which only a
// loopback host may use. Credentials belong in the Provider's Secret, not in the URL.
func ParseURL(raw string) (host string, port int, security Security, err error) {
	bad := func(why string) (string, int, Security, error) {
		return "", 0, 0, fmt.Errorf("smtp: relay URL: %s", why)
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		return bad("not a URL")
	}
	switch u.Scheme {
	case "smtp":
		security = SecurityStartTLS
	case "smtps":
		security = SecurityImplicitTLS
	default:
		return bad("the scheme must be smtp or smtps")
	}
	switch {
	case u.User != nil:
		return bad("credentials belong in the Provider's Secret, not in the URL")
	case u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.Fragment != "":
		return bad("only a host, a port and ?tls= may be given")
	case u.Hostname() == "":
		return bad("the host is missing")
	}
	q := u.Query()
	for k := range q {
		if k != "tls" {
			return bad(fmt.Sprintf("unknown parameter %q (only tls)", k))
		}
	}
	switch q.Get("tls") {
	case "":
	case "none":
		if security == SecurityImplicitTLS {
			return bad("smtps cannot be tls=none")
		}
		security = SecurityNone
	case "starttls":
		if security == SecurityImplicitTLS {
			return bad("smtps cannot be tls=starttls")
		}
	default:
		return bad("tls must be none or starttls")
	}
	host, port = u.Hostname(), defaultPort(security)
	if p := u.Port(); p != "" {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return bad("the port is out of range")
		}
		port = n
	}
	if err := checkPlain(host, security); err != nil {
		return "", 0, 0, err
	}
	return host, port, security, nil
}

func defaultPort(s Security) int {
	if s == SecurityImplicitTLS {
		return DefaultImplicitTLSPort
	}
	return DefaultSubmissionPort
}

// checkPlain refuses plain SMTP to a host that is not on loopback: the password and the mail
// would cross the network in the clear.
func checkPlain(host string, s Security) error {
	if s != SecurityNone || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("smtp: plain SMTP (tls=none) is only for a relay on loopback, and %q is not; use STARTTLS or smtps", host)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Channels implements transport.Transport.
func (t *Transport) Channels() []string { return []string{ChannelEmail} }

// Send implements transport.Transport: it builds the mail (fetching attachments given by URL),
// signs it when m.DKIM is set, and submits it on a connection kept open from an earlier mail
// when one is (relay.go). The result's ProviderMessageID is the mail's
// Message-ID without its angle brackets.
func (t *Transport) Send(ctx context.Context, m transport.Outbound) (transport.Result, error) {
	if m.Channel != ChannelEmail {
		return transport.Result{}, &transport.Failure{Code: CodeChannelUnsupported,
			Message: fmt.Sprintf("The SMTP transport does not carry the %q channel.", m.Channel)}
	}
	mail, err := t.compose(ctx, m)
	if err != nil {
		return transport.Result{}, err
	}
	if err := t.submit(ctx, mail); err != nil {
		return transport.Result{}, err
	}
	return transport.Result{ProviderMessageID: mail.messageID}, nil
}

// Check connects to the relay, secures the connection, authenticates and quits without sending,
// and describes the relay: "relay.example.com:587 (STARTTLS, mx.example.com ESMTP Postfix)". An
// error wraps ErrInvalidCredentials when the relay refuses the credentials; any other error says
// why the relay could not be reached or secured.
func (t *Transport) Check(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	conv, err := t.open(ctx)
	if err != nil {
		if f := transport.AsFailure(err); f != nil && f.Code == CodeProviderAuthFailed {
			return "", fmt.Errorf("%w: %s", ErrInvalidCredentials, f.Message)
		}
		return "", fmt.Errorf("smtp: check %s: %w", t.addr, err)
	}
	conv.quit()
	desc := t.addr + " (" + t.cfg.Security.String()
	if conv.banner != "" {
		desc += ", " + conv.banner
	}
	return desc + ")", nil
}
