package mailin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/go-logr/logr"
	"github.com/jhillyerd/enmime/v2"

	"github.com/switchboard-io/switchboard/internal/dnsresolve"
)

// Defaults for the Config fields left zero.
const (
	DefaultAddr            = ":2525"
	DefaultMaxMessageBytes = 25 << 20
	DefaultMaxRecipients   = 50
	DefaultTimeout         = 60 * time.Second
	// DefaultMaxConnections and DefaultMaxConnectionsPerIP are Postfix's figures (its 100
	// smtpd processes, and a client's share of them): a sending server that finds them taken
	// hears 421 and comes back, as it does from any busy MX.
	DefaultMaxConnections      = 100
	DefaultMaxConnectionsPerIP = 10
	// DefaultSessionTimeout takes a message of the default size over a link of 350 kbit/s;
	// a mail server that has more to send connects again.
	DefaultSessionTimeout = 10 * time.Minute
	// DefaultMaxBufferedBytes holds two messages of the default size at once: parsing and
	// storing one takes a few times its size again, within the api role's 512 MiB.
	DefaultMaxBufferedBytes = 64 << 20
)

// Bounds on the work done for one command or message. A sending server waits 10 minutes for
// the answer to a message (RFC 5321 4.5.3.2.6): deliverTimeout answers 451 well before.
// shutdownGrace fits inside controller-runtime's 30-second graceful shutdown.
const (
	lookupTimeout  = 30 * time.Second
	authTimeout    = 30 * time.Second
	deliverTimeout = 5 * time.Minute
	shutdownGrace  = 20 * time.Second
)

// Limits bound what unauthenticated clients can hold of the server: connections, time and
// memory. Zero fields take their defaults.
type Limits struct {
	// MaxConnections bounds the connections served at once; one more is answered
	// 421 4.4.5 instead of the greeting, and closed. DefaultMaxConnections when zero.
	MaxConnections int
	// MaxConnectionsPerIP bounds those from one client address, an IPv4 address or an IPv6
	// /64 (what one host is given); one more is answered 421 4.7.0 and closed.
	// DefaultMaxConnectionsPerIP when zero.
	MaxConnectionsPerIP int
	// SessionTimeout bounds a connection from its accept, however busy it keeps: no read
	// waits past it, so a client sending a byte at a time is cut off (421) with what it sent
	// of a message dropped. DefaultSessionTimeout when zero.
	SessionTimeout time.Duration
	// MaxBufferedBytes bounds the bytes of messages all sessions hold at once, counted as
	// they are read and given back once the message is answered. A message that finds too
	// little left is answered 452 4.3.1 (at MAIL FROM when its SIZE= says so), and the
	// sending server tries later. At least MaxMessageBytes; DefaultMaxBufferedBytes when zero.
	MaxBufferedBytes int64
}

// Config configures a Server. Recipients and Handler are required.
type Config struct {
	Limits

	// Addr is where Start and ListenAndServe listen, as host:port; DefaultAddr when empty.
	Addr string
	// Listener, when set, is where Start serves instead of listening on Addr: the caller binds
	// the port early, so that a port taken fails the start of the process.
	Listener net.Listener
	// Hostname is the server's name in its banner and EHLO answer; the host's name when empty.
	Hostname string
	// MaxMessageBytes bounds a message, counted as received with its line ends; a larger one
	// is refused with 552 5.3.4 (declared in MAIL FROM SIZE= or found while reading it).
	// DefaultMaxMessageBytes when zero.
	MaxMessageBytes int64
	// MaxRecipients bounds the recipients of one message; DefaultMaxRecipients when zero.
	MaxRecipients int
	// ReadTimeout bounds the wait for a command and each pause while a message is sent,
	// within the session's SessionTimeout; WriteTimeout each write of an answer.
	// DefaultTimeout when zero.
	ReadTimeout, WriteTimeout time.Duration
	// TLSConfig, when set, offers STARTTLS. The server never requires it: mail servers send in
	// clear text to an MX that offers no TLS.
	TLSConfig *tls.Config
	// Resolver answers the SPF, DKIM and DMARC lookups; the system's resolvers when nil.
	Resolver   Resolver
	Recipients Recipients
	Handler    Handler
	// Now is the clock stamping Envelope.ReceivedAt; time.Now when nil.
	Now func() time.Time
	// Log receives the server's failures and, at V(1), a line per message: never a message's
	// content or a credential.
	Log logr.Logger
}

// Server is the inbound SMTP server. It serves once: after Shutdown or Close, make another.
type Server struct {
	cfg    Config
	smtp   *smtp.Server
	parser *enmime.Parser
	log    logr.Logger

	// ctx is the context of lookups and deliveries: it outlives a graceful shutdown, so that
	// a message being stored is answered, and ends with Close.
	ctx    context.Context
	cancel context.CancelFunc

	// buffered is what is left of MaxBufferedBytes.
	buffered budget

	mu      sync.Mutex
	addr    net.Addr
	closing bool
	conns   map[*trackedConn]struct{}
	perIP   map[netip.Prefix]int // the connections of each client address
}

// New returns a server for cfg, not yet listening.
func New(cfg Config) (*Server, error) {
	if cfg.Recipients == nil || cfg.Handler == nil {
		return nil, errors.New("new mail server: Recipients and Handler are required")
	}
	if cfg.MaxMessageBytes < 0 || cfg.MaxRecipients < 0 || cfg.MaxConnections < 0 || cfg.MaxConnectionsPerIP < 0 ||
		cfg.SessionTimeout < 0 || cfg.MaxBufferedBytes < 0 {
		return nil, errors.New("new mail server: limits must not be negative")
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Hostname == "" {
		name, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("new mail server: read host name: %w", err)
		}
		cfg.Hostname = name
	}
	cfg.MaxMessageBytes = orDefault(cfg.MaxMessageBytes, DefaultMaxMessageBytes)
	cfg.MaxRecipients = orDefault(cfg.MaxRecipients, DefaultMaxRecipients)
	cfg.ReadTimeout = orDefault(cfg.ReadTimeout, DefaultTimeout)
	cfg.WriteTimeout = orDefault(cfg.WriteTimeout, DefaultTimeout)
	cfg.MaxConnections = orDefault(cfg.MaxConnections, DefaultMaxConnections)
	cfg.MaxConnectionsPerIP = orDefault(cfg.MaxConnectionsPerIP, DefaultMaxConnectionsPerIP)
	cfg.SessionTimeout = orDefault(cfg.SessionTimeout, DefaultSessionTimeout)
	cfg.MaxBufferedBytes = orDefault(cfg.MaxBufferedBytes, DefaultMaxBufferedBytes)
	if cfg.MaxBufferedBytes < cfg.MaxMessageBytes {
		return nil, fmt.Errorf("new mail server: MaxBufferedBytes (%d) is below MaxMessageBytes (%d): the largest message could never be taken",
			cfg.MaxBufferedBytes, cfg.MaxMessageBytes)
	}
	if cfg.Resolver == nil {
		cfg.Resolver = dnsresolve.New("", 0)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log.GetSink() == nil {
		cfg.Log = logr.Discard()
	}

	s := &Server{
		cfg: cfg,
		log: cfg.Log,
		// Lenient: a part that does not parse becomes a warning, not a refused message.
		parser: enmime.NewParser(
			enmime.SkipMalformedParts(true),
			enmime.MultipartWOBoundaryAsSinglePart(true),
			enmime.MaxStoredPartErrors(maxWarnings),
		),
		conns:    map[*trackedConn]struct{}{},
		perIP:    map[netip.Prefix]int{},
		buffered: budget{free: cfg.MaxBufferedBytes},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())

	srv := smtp.NewServer(backend{s})
	srv.Addr = cfg.Addr
	srv.Domain = cfg.Hostname
	// go-smtp's reader refuses a message of exactly its limit (it counts the end of data
	// against it): one byte more makes MaxMessageBytes the largest message taken. The EHLO
	// answer's SIZE says one byte more than that; Mail and Data hold to the limit.
	srv.MaxMessageBytes = cfg.MaxMessageBytes + 1
	srv.MaxRecipients = cfg.MaxRecipients
	srv.ReadTimeout = cfg.ReadTimeout
	srv.WriteTimeout = cfg.WriteTimeout
	srv.TLSConfig = cfg.TLSConfig
	// An MX, not a submission server: no AUTH is offered, in clear text or over TLS (the
	// session does not implement smtp.AuthSession).
	srv.AllowInsecureAuth = false
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = errorLog{cfg.Log}
	s.smtp = srv
	return s, nil
}

// orDefault is v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Serve answers the connections l accepts until Shutdown or Close, then returns nil.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	s.addr = l.Addr()
	s.mu.Unlock()
	if err := s.smtp.Serve(trackedListener{Listener: l, s: s}); err != nil {
		return fmt.Errorf("serve smtp on %s: %w", l.Addr(), err)
	}
	return nil
}

// ListenAndServe listens on Config.Addr and serves as Serve does.
func (s *Server) ListenAndServe() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen smtp: %w", err)
	}
	return s.Serve(l)
}

// Addr returns the address the server listens on; nil until it serves.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start serves on Config.Listener, or listens on Config.Addr, until ctx ends, then shuts down
// gracefully: it waits up to 20 seconds for the messages under way to be answered. It makes
// the server a controller-runtime manager.Runnable.
func (s *Server) Start(ctx context.Context) error {
	l := s.cfg.Listener
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("listen smtp: %w", err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(l) }()
	s.log.Info("serving smtp", "address", l.Addr().String())
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := s.Shutdown(shutdownCtx); err != nil {
		return err
	}
	return <-errc
}

// NeedLeaderElection: every api replica takes mail.
func (s *Server) NeedLeaderElection() bool { return false }

// Shutdown stops taking connections, closes those between messages and waits until the
// messages under way are answered, or ctx ends: then it closes what is left, as Close does,
// and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	var idle []*trackedConn
	for c := range s.conns {
		if !c.busy {
			idle = append(idle, c)
		}
	}
	s.mu.Unlock()
	// Nothing was accepted on an idle connection: closing it loses nothing, where go-smtp
	// would wait for the client to quit or time out.
	for _, c := range idle {
		_ = c.Close()
	}
	err := s.smtp.Shutdown(ctx)
	if err != nil && !errors.Is(err, smtp.ErrServerClosed) {
		s.Close()
		return fmt.Errorf("shut down smtp server: %w", err)
	}
	s.cancel()
	return nil
}

// Close closes the listener and every connection at once; a message not yet answered is
// tried again by its sender.
func (s *Server) Close() {
	s.mu.Lock()
	s.closing = true
	conns := make([]*trackedConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.cancel()
	// After Shutdown go-smtp's Close does nothing: the connections are closed here.
	_ = s.smtp.Close()
	for _, c := range conns {
		_ = c.Close()
	}
}

// trackedListener registers each connection it accepts with the server, so that a shutdown
// can tell idle ones from those storing a message, and close them; it refuses those over the
// connection limits before go-smtp sees them.
type trackedListener struct {
	net.Listener
	s *Server
}

// Accept returns the next connection within the limits, tracked.
func (l trackedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, refusal := l.s.track(c)
		if refusal != nil {
			l.s.refuse(c, refusal)
			continue
		}
		if tc.closing {
			// Accepted as the shutdown began: go-smtp ends it at once.
			_ = tc.Close()
		}
		return tc, nil
	}
}

// The greetings of a connection over a limit (RFC 5321 3.1: 421 instead of 220).
var (
	replyTooManyConnections = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 4, 5}, Message: "too many connections, try again later"}
	replyTooManyFromAddress = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "too many connections from your address, try again later"}
)

// refuseWriteTimeout bounds the write of a refusal: a new connection's send buffer is empty,
// so it never waits unless the client is gone.
const refuseWriteTimeout = 2 * time.Second

// track registers c within the connection limits, or returns the refusal it gets.
func (s *Server) track(c net.Conn) (*trackedConn, *smtp.SMTPError) {
	key := clientKey(remoteIP(c))
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.conns) >= s.cfg.MaxConnections:
		return nil, replyTooManyConnections
	case s.perIP[key] >= s.cfg.MaxConnectionsPerIP:
		return nil, replyTooManyFromAddress
	}
	tc := &trackedConn{Conn: c, s: s, key: key, end: time.Now().Add(s.cfg.SessionTimeout), closing: s.closing}
	// Nothing go-smtp does later waits for a read past the end of the session.
	_ = c.SetReadDeadline(tc.end)
	s.conns[tc] = struct{}{}
	s.perIP[key]++
	return tc, nil
}

// refuse answers c with the refusal as its greeting and closes it.
func (s *Server) refuse(c net.Conn, refusal *smtp.SMTPError) {
	s.log.V(1).Info("refuse connection", "remoteIP", remoteIP(c).String(), "reason", refusal.Message)
	_ = c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	e := refusal.EnhancedCode
	_, _ = fmt.Fprintf(c, "%d %d.%d.%d %s %s\r\n", refusal.Code, e[0], e[1], e[2], s.cfg.Hostname, refusal.Message)
	_ = c.Close()
}

// clientKey is what the per-address limit counts by: an IPv4 address, or the /64 of an IPv6
// one, as a host is given a /64 and picks any address in it.
func clientKey(ip netip.Addr) netip.Prefix {
	bits := ip.BitLen()
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// trackedConn is a connection the server knows of until it is closed.
type trackedConn struct {
	net.Conn
	s       *Server
	key     netip.Prefix // the client address the per-address limit counts it under
	end     time.Time    // the end of the session: no read waits past it
	closing bool         // accepted as the server began shutting down
	busy    bool         // reading or storing a message; guarded by s.mu
	renew   atomic.Int64 // a time.Duration: when set, each read renews the read deadline by it
}

// renewReads makes each read renew the read deadline by d, or stops it when d is zero. While
// a message is read it makes ReadTimeout bound a pause in the transfer, not the whole of it:
// go-smtp sets the deadline once, when it reads the DATA command, and a large message on a
// slow link takes longer. The end of the session still bounds the whole.
func (c *trackedConn) renewReads(d time.Duration) { c.renew.Store(int64(d)) }

// Read reads from the connection, renewing its read deadline first when renewReads says so.
func (c *trackedConn) Read(p []byte) (int, error) {
	if d := time.Duration(c.renew.Load()); d > 0 {
		_ = c.SetReadDeadline(time.Now().Add(d))
	}
	return c.Conn.Read(p)
}

// SetReadDeadline sets the read deadline to t, or to the end of the session when that comes
// first: go-smtp renews it at every command, which alone would let a client that keeps
// talking hold the connection for ever.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	if t.IsZero() || t.After(c.end) {
		t = c.end
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets the write deadline to t and the read deadline as SetReadDeadline does.
// Writes are not held to the end of the session, so that the answer to a message stored
// just before it still reaches the client.
func (c *trackedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// Close closes the connection and forgets it, once.
func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	if _, ok := c.s.conns[c]; ok {
		delete(c.s.conns, c)
		if c.s.perIP[c.key]--; c.s.perIP[c.key] <= 0 {
			delete(c.s.perIP, c.key)
		}
	}
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// setBusy marks c as reading or storing a message, which a shutdown waits for; it reports
// false when the server is shutting down and takes no more messages.
func (s *Server) setBusy(c *trackedConn, busy bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if busy && s.closing {
		return false
	}
	c.busy = busy
	return true
}

// closingIdle reports whether the server is shutting down and c is between messages.
func (s *Server) closingIdle(c *trackedConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing && !c.busy
}

// errorLog writes go-smtp's own reports (connection errors, panics) to the logger. They name
// the remote address and the error, never a message's content.
type errorLog struct{ log logr.Logger }

// Printf logs a panic as an error and anything else, connection errors from the internet, at V(1).
func (l errorLog) Printf(format string, v ...any) { l.write(fmt.Sprintf(format, v...)) }

// Println logs as Printf does.
func (l errorLog) Println(v ...any) { l.write(fmt.Sprint(v...)) }

func (l errorLog) write(msg string) {
	if strings.HasPrefix(msg, "panic") {
		l.log.Error(nil, "smtp server", "detail", msg)
		return
	}
	l.log.V(1).Info("smtp server", "detail", msg)
}
