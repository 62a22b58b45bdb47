package mailin

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/emersion/go-smtp"
)

// The answers the server gives besides go-smtp's own. Their text is for the sending server's
// postmaster: it names no address, no content and no internal error.
var (
	replyUnknownRecipient = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such recipient"}
	replyTryLater         = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "temporary failure, try again later"}
	replyTooLarge         = &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4}, Message: "message too large"}
	// A line over the limit (RFC 5321 4.5.3.1.6 allows 1000 octets) is the sender's to fix:
	// refused for good, not answered "later" forever.
	replyLineTooLong  = &smtp.SMTPError{Code: 500, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "a line of the message is too long"}
	replyUnreadable   = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "message cannot be parsed"}
	replyShuttingDown = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "shutting down, try again later"}
)

// maxReplyText bounds the text of a 550 taken from a Handler's error.
const maxReplyText = 200

// backend makes a session per connection, at its first EHLO or HELO.
type backend struct{ s *Server }

// NewSession starts a session on c, unless the server is shutting down.
func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	conn := connOf(c)
	if conn == nil || b.s.closingIdle(conn) {
		return nil, replyShuttingDown
	}
	_, isTLS := c.TLSConnectionState()
	return &session{s: b.s, conn: conn, smtpConn: c, remoteIP: remoteIP(c.Conn()), tls: isTLS}, nil
}

// connOf is the tracked connection under c, below TLS if STARTTLS came first.
func connOf(c *smtp.Conn) *trackedConn {
	nc := c.Conn()
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	tracked, _ := nc.(*trackedConn)
	return tracked
}

// remoteIP is the address of the peer of nc, IPv4 unmapped; zero when it is not TCP.
func remoteIP(nc net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// session is one SMTP connection's state: the message under way. go-smtp calls its methods
// from the connection's goroutine, one at a time.
type session struct {
	s        *Server
	conn     *trackedConn
	smtpConn *smtp.Conn
	remoteIP netip.Addr
	tls      bool

	from   string
	rcpts  []Route
	routed map[string]bool // the addresses of rcpts, so that one given twice counts once
}

// Mail starts a message. The null sender (empty from) is taken: reports come from it.
func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	ss.reset()
	if opts != nil && opts.Size > ss.s.cfg.MaxMessageBytes {
		return replyTooLarge
	}
	// A message declared larger than what the budget has left would be refused at its end:
	// refused now, before it is sent.
	if opts != nil && opts.Size > ss.s.buffered.left() {
		return replyNoStorage
	}
	ss.from = from
	return nil
}

// Rcpt accepts to when Recipients knows it.
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	addr := normalizeAddress(to)
	if ss.routed[addr] {
		return nil
	}
	ctx, cancel := context.WithTimeout(ss.s.ctx, lookupTimeout)
	defer cancel()
	route, err := ss.s.cfg.Recipients.Lookup(ctx, addr)
	switch {
	case errors.Is(err, ErrUnknownRecipient):
		return replyUnknownRecipient
	case err != nil:
		ss.s.log.Error(err, "look up recipient", "remoteIP", ss.remoteIP.String())
		return replyTryLater
	}
	if route.Address == "" {
		route.Address = to
	}
	if ss.routed == nil {
		ss.routed = map[string]bool{}
	}
	ss.routed[addr] = true
	ss.rcpts = append(ss.rcpts, route)
	return nil
}

// normalizeAddress lower-cases the domain of an address; the local part is the domain's to
// interpret (RFC 5321 2.4), so it stays as written.
func normalizeAddress(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return addr
	}
	return addr[:at+1] + strings.ToLower(addr[at+1:])
}

// Data reads the message and answers 250 once the Handler has stored it.
func (ss *session) Data(r io.Reader) error {
	if !ss.s.setBusy(ss.conn, true) {
		return replyShuttingDown
	}
	defer ss.s.setBusy(ss.conn, false)

	// go-smtp's reader stops past MaxMessageBytes with ErrDataTooLarge (552 5.3.4), which
	// must reach go-smtp as it is to be answered so. Chunks (BDAT) are counted by go-smtp
	// against its limit, a byte above ours: readMessage holds them to ours.
	ss.conn.renewReads(ss.s.cfg.ReadTimeout)
	raw, err := ss.s.readMessage(r)
	ss.conn.renewReads(0)
	if err != nil {
		var smtpErr *smtp.SMTPError
		if errors.As(err, &smtpErr) {
			return smtpErr
		}
		if errors.Is(err, smtp.ErrTooLongLine) {
			return replyLineTooLong
		}
		return replyTryLater
	}
	// The message's bytes are the budget's again once it is answered.
	defer raw.release()
	env := Envelope{
		MailFrom:   ss.from,
		Recipients: ss.rcpts,
		RemoteIP:   ss.remoteIP,
		HELO:       ss.smtpConn.Hostname(),
		TLS:        ss.tls,
		ReceivedAt: ss.s.cfg.Now().UTC(),
	}
	return ss.s.receive(env, raw)
}

// Reset drops the message under way. After a message's answer, it closes the connection of a
// server shutting down: the message is answered, and the connection would only hold the
// shutdown up.
func (ss *session) Reset() {
	ss.reset()
	if ss.s.closingIdle(ss.conn) {
		_ = ss.conn.Close()
	}
}

func (ss *session) reset() {
	ss.from = ""
	ss.rcpts = nil
	ss.routed = nil
}

// Logout ends the session; the connection closes after it.
func (ss *session) Logout() error { return nil }

// receive builds the Mail of raw, delivers it and turns the outcome into the SMTP answer.
func (s *Server) receive(env Envelope, raw *RawMail) error {
	m, err := s.parse(raw)
	if err != nil {
		s.log.V(1).Info("refuse unreadable message", "remoteIP", env.RemoteIP.String(), "size", raw.Len())
		return replyUnreadable
	}
	m.Envelope = env
	m.Raw = raw

	authCtx, cancel := context.WithTimeout(s.ctx, authTimeout)
	m.Auth = s.authenticate(authCtx, env, raw, m.From.Address)
	cancel()
	m.Report = report(env, raw, m)

	ctx, cancel := context.WithTimeout(s.ctx, deliverTimeout)
	defer cancel()
	err = s.cfg.Handler.Deliver(ctx, m)
	log := s.log.WithValues("remoteIP", env.RemoteIP.String(), "messageId", m.MessageID)
	switch {
	case errors.Is(err, ErrRejected):
		log.V(1).Info("mail rejected by handler", "reason", err.Error())
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: replyText(err)}
	case err != nil:
		log.Error(err, "deliver mail")
		return replyTryLater
	}
	log.V(1).Info("mail received", "size", raw.Len(), "recipients", len(env.Recipients),
		"spf", m.Auth.SPF, "dmarc", m.Auth.DMARC, "report", m.Report != nil)
	return nil
}

// replyText is err's message fit for one SMTP reply line: printable ASCII, bounded.
func replyText(err error) string {
	msg := strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return ' '
		}
		return r
	}, err.Error())
	if len(msg) > maxReplyText {
		msg = msg[:maxReplyText]
	}
	return msg
}
