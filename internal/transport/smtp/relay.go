package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"sync"
	"syscall"
	"time"

	mailsmtp "github.com/wneessen/go-mail/smtp"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// conversation is one connection to the relay: greeted, secured and authenticated.
type conversation struct {
	raw    net.Conn
	client *mailsmtp.Client
	// banner is the relay's greeting without its code ("mx.example.com ESMTP Postfix").
	banner string
	stop   func() bool // undoes the close on cancel of the mail it carries now
	mails  int         // mails submitted on it
	idle   time.Time   // since when it waits for the next mail
}

// Connections are kept open between mails, as relays expect of a client sending many (a
// handshake with STARTTLS and AUTH costs several round trips and a TLS key exchange per mail
// otherwise): a mail takes the connection used last, says RSET on it (a connection the relay
// dropped meanwhile is closed and the next one tried, then a new one opened), and puts it back
// when the relay took the mail. A connection a mail failed on is closed.
const (
	// maxIdle bounds the connections kept open for the next mails; the dispatch jobs running
	// at once open more when they need them, and those past maxIdle are closed after their mail.
	maxIdle = 16
	// idleFor: a connection no mail took for this long is closed. RFC 5321 §4.5.3.2.7 lets a
	// relay wait 5 minutes for the next command; many drop idle clients sooner.
	idleFor = 30 * time.Second
	// mailsPerConnection: a connection is closed after this many mails and another opened, so a
	// relay that limits the mails of one session never refuses one for it, and the load
	// spreads again over a relay's servers behind one name.
	mailsPerConnection = 100
	// quitWithin bounds the QUIT of a connection that is let go between mails.
	quitWithin = 5 * time.Second
)

// sessions are the connections waiting for the next mail, the one used last at the end.
type sessions struct {
	mu     sync.Mutex
	idle   []*conversation
	sweep  *time.Timer // closes the connections idle past idleFor; armed while any waits
	closed bool
}

// session returns a connection ready for a mail: one kept open, once it answered RSET, else a
// new one. The connection's deadline is ctx's, and cancelling ctx closes it.
func (t *Transport) session(ctx context.Context) (*conversation, error) {
	for conv := t.takeIdle(); conv != nil; conv = t.takeIdle() {
		conv.stop = context.AfterFunc(ctx, func() { _ = conv.raw.Close() })
		if deadline, ok := ctx.Deadline(); ok {
			_ = conv.raw.SetDeadline(deadline)
		}
		if err := conv.client.Reset(); err == nil {
			return conv, nil
		}
		conv.close() // the relay dropped it, or answered RSET with an error: nothing was sent on it
		if ctx.Err() != nil {
			return nil, t.classify(ctx, stageConnect, ctx.Err())
		}
	}
	return t.open(ctx)
}

// takeIdle takes the connection used last; nil when none waits. Connections idle past idleFor
// are closed on the way.
func (t *Transport) takeIdle() *conversation {
	p := &t.sessions
	p.mu.Lock()
	var conv *conversation
	var stale []*conversation
	for len(p.idle) > 0 && conv == nil {
		last := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if time.Since(last.idle) > idleFor {
			stale = append(stale, last)
		} else {
			conv = last
		}
	}
	p.mu.Unlock()
	for _, c := range stale {
		c.letGo()
	}
	return conv
}

// release puts back the connection a mail went through, or closes it when it carried its
// last mail, enough wait already, or its mail's context ended (and closed it).
func (t *Transport) release(conv *conversation) {
	if !conv.stop() {
		conv.close() // the mail's context ended as it finished: the connection is closed
		return
	}
	_ = conv.raw.SetDeadline(time.Time{})
	conv.mails++
	conv.idle = time.Now()
	p := &t.sessions
	p.mu.Lock()
	keep := !p.closed && conv.mails < mailsPerConnection && len(p.idle) < maxIdle
	if keep {
		p.idle = append(p.idle, conv)
		if p.sweep == nil {
			p.sweep = time.AfterFunc(idleFor, t.sweepIdle)
		}
	}
	p.mu.Unlock()
	if !keep {
		conv.letGo()
	}
}

// sweepIdle closes the connections idle past idleFor, and comes back while any wait.
func (t *Transport) sweepIdle() {
	p := &t.sessions
	p.mu.Lock()
	var stale, kept []*conversation
	for _, c := range p.idle {
		if time.Since(c.idle) >= idleFor {
			stale = append(stale, c)
		} else {
			kept = append(kept, c)
		}
	}
	p.idle = kept
	if len(kept) > 0 && !p.closed {
		p.sweep = time.AfterFunc(idleFor-time.Since(kept[0].idle), t.sweepIdle)
	} else {
		p.sweep = nil
	}
	p.mu.Unlock()
	for _, c := range stale {
		c.letGo()
	}
}

// Close says QUIT on the connections kept open and keeps no more. The transport still sends,
// each mail on a connection of its own.
func (t *Transport) Close() {
	p := &t.sessions
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
	p.mu.Unlock()
	for _, c := range idle {
		c.letGo()
	}
}

// letGo says QUIT on a connection between mails, waiting at most quitWithin for the relay.
func (c *conversation) letGo() {
	_ = c.raw.SetDeadline(time.Now().Add(quitWithin))
	_ = c.client.Quit()
	_ = c.raw.Close()
}

// quit says QUIT when the relay can still hear it, and closes the connection.
func (c *conversation) quit() {
	if c.client != nil {
		_ = c.client.Quit()
	}
	c.close()
}

func (c *conversation) close() {
	c.stop()
	_ = c.raw.Close()
}

// errNotLoopback: plain SMTP resolved to an address off loopback; nothing was sent.
var errNotLoopback = errors.New("plain SMTP may only connect to a loopback address")

// open connects to the relay as Config says: TLS (implicit, or STARTTLS, which the relay must
// offer), EHLO with HeloName, AUTH when there is a username. The connection's deadline is ctx's;
// cancelling ctx closes it.
func (t *Transport) open(ctx context.Context) (_ *conversation, err error) {
	d := &net.Dialer{}
	if t.cfg.Security == SecurityNone {
		// Checked on the address dialled, whatever the host name resolved to.
		d.Control = func(_, address string, _ syscall.RawConn) error {
			if host, _, err := net.SplitHostPort(address); err != nil || !isLoopback(host) {
				return errNotLoopback
			}
			return nil
		}
	}
	raw, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, t.classify(ctx, stageConnect, err)
	}
	conv := &conversation{raw: raw, stop: context.AfterFunc(ctx, func() { _ = raw.Close() })}
	defer func() {
		if err != nil {
			conv.close()
		}
	}()
	if deadline, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(deadline)
	}

	var conn net.Conn = raw
	if t.cfg.Security == SecurityImplicitTLS {
		tc := tls.Client(raw, t.tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, t.classify(ctx, stageTLS, err)
		}
		conn = tc
	}
	greeting := &greetingConn{Conn: conn}
	c, err := mailsmtp.NewClient(greeting, t.cfg.Host)
	if err != nil {
		return nil, t.classify(ctx, stageConnect, err)
	}
	conv.client, conv.banner = c, greeting.banner()
	if err := c.Hello(t.cfg.HeloName); err != nil {
		return nil, t.replied(ctx, conv, stageConnect, err)
	}
	if t.cfg.Security == SecurityStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			conv.quit()
			return nil, &transport.Failure{Code: CodeProviderTLSFailed,
				Message: "The relay does not offer STARTTLS, which the Provider requires (smtp://); use smtps:// if it speaks TLS from the start."}
		}
		if err := c.StartTLS(t.tlsConfig()); err != nil {
			return nil, t.replied(ctx, conv, stageTLS, err)
		}
	}
	if t.cfg.Username != "" {
		if err := t.auth(ctx, conv); err != nil {
			return nil, err
		}
	}
	return conv, nil
}

// auth authenticates with PLAIN, or LOGIN when the relay offers only that.
func (t *Transport) auth(ctx context.Context, conv *conversation) error {
	offered, mechs := conv.client.Extension("AUTH")
	var a mailsmtp.Auth
	// The connection is TLS, or plain to loopback (New refuses anything else): the credentials
	// may go, hence allowUnenc, which go-mail would otherwise judge from the host name.
	switch {
	case hasWord(mechs, "PLAIN"):
		a = mailsmtp.PlainAuth("", t.cfg.Username, t.cfg.Password, t.cfg.Host, true)
	case hasWord(mechs, "LOGIN"):
		a = mailsmtp.LoginAuth(t.cfg.Username, t.cfg.Password, t.cfg.Host, true)
	case !offered:
		conv.quit()
		return &transport.Failure{Code: CodeProviderAuthFailed,
			Message: "The relay does not offer AUTH, but the Provider has a username: remove it, or check the relay."}
	default:
		conv.quit()
		return &transport.Failure{Code: CodeProviderAuthFailed,
			Message: "The relay offers neither AUTH PLAIN nor LOGIN (it offers " + t.scrub(mechs) + ")."}
	}
	if err := conv.client.Auth(a); err != nil {
		return t.replied(ctx, conv, stageAuth, err)
	}
	return nil
}

// replied classifies err; when it is the relay's answer, the relay is still listening and is
// told QUIT.
func (t *Transport) replied(ctx context.Context, conv *conversation, st stage, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) {
		conv.quit()
	}
	return t.classify(ctx, st, err)
}

// submit hands the mail to the relay: MAIL FROM the return path (else the From address), RCPT
// TO the recipient, DATA.
func (t *Transport) submit(ctx context.Context, m *outgoing) error {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	conv, err := t.session(ctx)
	if err != nil {
		return err
	}
	sent := false
	defer func() {
		if sent {
			t.release(conv)
		} else {
			conv.close()
		}
	}()
	c := conv.client
	if err := c.Mail(angle(m.from)); err != nil {
		return t.replied(ctx, conv, stageMail, err)
	}
	if err := c.Rcpt(angle(m.to)); err != nil {
		return t.replied(ctx, conv, stageRcpt, err)
	}
	w, err := c.Data()
	if err != nil {
		return t.replied(ctx, conv, stageData, err)
	}
	_, werr := w.Write(m.data)
	if cerr := w.Close(); cerr != nil || werr != nil {
		// The relay's answer says more than a write it cut short.
		var te *textproto.Error
		if werr == nil || errors.As(cerr, &te) {
			return t.replied(ctx, conv, stageData, cerr)
		}
		return t.classify(ctx, stageData, werr)
	}
	sent = true
	return nil
}

// angle is an address as MAIL FROM and RCPT TO take it: <local@domain>.
func angle(addr string) string { return (&mail.Address{Address: addr}).String() }

// hasWord reports whether the space-separated list has w (any case).
func hasWord(list, w string) bool {
	for _, f := range strings.Fields(list) {
		if strings.EqualFold(f, w) {
			return true
		}
	}
	return false
}

// tlsConfig is Config.TLSConfig (or the system roots) naming the relay's host, TLS 1.2 at least.
func (t *Transport) tlsConfig() *tls.Config {
	cfg := &tls.Config{}
	if t.cfg.TLSConfig != nil {
		cfg = t.cfg.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = t.cfg.Host
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

// maxBanner bounds the greeting kept from the relay.
const maxBanner = 200

// greetingConn keeps the first line the relay sends, its greeting ("220 mx.example.com ESMTP
// Postfix"), which go-mail's client reads and drops.
type greetingConn struct {
	net.Conn
	line []byte
	done bool
}

func (g *greetingConn) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	for _, b := range p[:n] {
		if g.done {
			break
		}
		if b == '\n' {
			g.done = true
		} else if len(g.line) < maxBanner+4 {
			g.line = append(g.line, b)
		}
	}
	return n, err
}

// banner is the greeting without its reply code.
func (g *greetingConn) banner() string {
	s := strings.TrimRight(string(g.line), "\r")
	if len(s) >= 4 && (s[3] == ' ' || s[3] == '-') {
		s = s[4:]
	}
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return -1
		}
		return r
	}, s)
	if len(s) > maxBanner {
		s = s[:maxBanner]
	}
	return strings.TrimSpace(s)
}
