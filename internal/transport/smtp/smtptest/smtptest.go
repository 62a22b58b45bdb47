// Package smtptest runs a local SMTP relay for tests: a real ESMTP server (RFC 5321, built on
// github.com/emersion/go-smtp) that speaks EHLO, STARTTLS (RFC 3207) or implicit TLS, AUTH
// PLAIN and LOGIN (RFC 4954), SIZE (RFC 1870), ENHANCEDSTATUSCODES (RFC 2034) and 8BITMIME, and
// answers as relays do: 530 5.7.0 before AUTH when credentials are required, 535 5.7.8 to wrong
// ones, 552 5.3.4 past the size limit. It records every message it accepts, and tests can make
// it refuse a recipient, fail the next transactions for now, or stop taking mail.
//
// It listens only on 127.0.0.1, with a self-signed certificate for 127.0.0.1, ::1 and localhost
// made when it starts.
package smtptest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
)

// TLSMode is how a client reaches the relay.
type TLSMode int

const (
	// TLSNone: plain SMTP, no STARTTLS offered; AUTH is offered in the clear (loopback only).
	TLSNone TLSMode = iota
	// TLSStartTLS: plain SMTP that offers STARTTLS; AUTH only after it.
	TLSStartTLS
	// TLSImplicit: TLS from the first byte (smtps, port 465 style).
	TLSImplicit
)

// DefaultMaxMessageBytes is the size limit when Options sets none: above a message with the
// 40 MB of attachments the API allows, once base64 encoded.
const DefaultMaxMessageBytes = 64 << 20

// Options shape the relay.
type Options struct {
	// Username and Password, when Username is set, are the only credentials AUTH PLAIN and
	// LOGIN take; a transaction before AUTH gets 530 5.7.0. Empty: no AUTH offered or needed.
	Username, Password string
	// AuthMechanisms are the mechanisms AUTH offers, of sasl.Plain and sasl.Login; empty means both.
	AuthMechanisms []string
	TLS            TLSMode
	// MaxMessageBytes is the SIZE the relay announces and enforces (552 5.3.4 beyond); zero
	// means DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// Domain is the name in the relay's greeting ("220 <Domain> ESMTP Service Ready"); empty
	// means "smtptest.localhost".
	Domain string
	// Received, when set, is called with each message the relay accepts, on the client's
	// connection before DATA is answered (a benchmark counts and checks mail with it).
	Received func(Message)
	// Forget keeps no message: Messages is empty and Wait sees none, Count still counts. For
	// runs too large to keep (a benchmark's 100,000 mails), with Received.
	Forget bool
}

// Message is a message the relay accepted.
type Message struct {
	// From is the envelope sender (MAIL FROM), To the envelope recipients (RCPT TO).
	From string
	To   []string
	// Data is the message as received after DATA (CRLF line ends, dot-stuffing undone).
	Data     []byte
	Received time.Time
	// Authenticated is the username the client authenticated as; empty without AUTH.
	Authenticated string
}

// Server is a running relay.
type Server struct {
	opts  Options
	srv   *gosmtp.Server
	ln    net.Listener
	pool  *x509.CertPool
	serve chan struct{} // closed when Serve returned

	mu          sync.Mutex
	messages    []Message
	count       int // accepted, kept or not
	connections int
	conns       map[*trackedConn]bool // the connections open, for Drop
	arrived     chan struct{}         // closed and replaced at each accepted message
	rejects     map[string]*gosmtp.SMTPError
	failLeft    int
	failErr     *gosmtp.SMTPError
	accepting   bool
	closed      bool
}

// New starts a relay on 127.0.0.1 on a free port.
func New(opts Options) (*Server, error) {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.Domain == "" {
		opts.Domain = "smtptest.localhost"
	}
	s := &Server{opts: opts, serve: make(chan struct{}), arrived: make(chan struct{}),
		rejects: map[string]*gosmtp.SMTPError{}, accepting: true, conns: map[*trackedConn]bool{}}

	srv := gosmtp.NewServer(gosmtp.BackendFunc(s.newSession))
	srv.Domain = opts.Domain
	srv.MaxMessageBytes = opts.MaxMessageBytes
	srv.MaxRecipients = 100
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0) // clients that give up mid-handshake are expected
	srv.AllowInsecureAuth = opts.TLS == TLSNone
	s.srv = srv

	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("smtptest: listen: %w", err)
	}
	var ln net.Listener = trackingListener{Listener: tcp, s: s}
	if opts.TLS != TLSNone {
		cfg, pool, err := selfSigned()
		if err != nil {
			_ = ln.Close()
			return nil, err
		}
		s.pool = pool
		if opts.TLS == TLSImplicit {
			ln = tls.NewListener(ln, cfg)
		} else {
			srv.TLSConfig = cfg
		}
	}
	s.ln = ln
	go func() {
		defer close(s.serve)
		_ = srv.Serve(ln)
	}()
	return s, nil
}

// NewServer starts a relay for a test (or benchmark), which it stops when the test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Addr is the relay's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the relay as a Provider's baseURL names it: smtp://127.0.0.1:port (STARTTLS),
// with ?tls=none when TLS is off, smtps:// for implicit TLS.
func (s *Server) URL() string {
	switch s.opts.TLS {
	case TLSImplicit:
		return "smtps://" + s.Addr()
	case TLSStartTLS:
		return "smtp://" + s.Addr()
	}
	return "smtp://" + s.Addr() + "?tls=none"
}

// CertPool holds the relay's certificate, for clients to trust; nil when TLS is off.
func (s *Server) CertPool() *x509.CertPool { return s.pool }

// Close stops the relay and drops its connections; it may be called more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.srv.Close()
	_ = s.ln.Close() // Serve may not have registered it yet
	<-s.serve
}

// Messages are the messages accepted so far, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.messages))
	for i, m := range s.messages {
		m.To = append([]string(nil), m.To...)
		out[i] = m
	}
	return out
}

// Count is how many messages the relay accepted, kept or not (Options.Forget).
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Connections is how many connections clients opened to the relay.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// Wait returns the accepted messages once there are at least n, or ctx's error.
func (s *Server) Wait(ctx context.Context, n int) ([]Message, error) {
	for {
		s.mu.Lock()
		count, arrived := len(s.messages), s.arrived
		s.mu.Unlock()
		if count >= n {
			return s.Messages(), nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, fmt.Errorf("smtptest: wait for %d messages (have %d): %w", n, count, ctx.Err())
		}
	}
}

// RejectRecipient makes RCPT TO:<addr> (any case) answer code with the enhanced status (such as
// "5.1.1"; empty for a reply without one) and msg.
func (s *Server) RejectRecipient(addr string, code int, enhanced string, msg string) {
	e := &gosmtp.SMTPError{Code: code, EnhancedCode: gosmtp.NoEnhancedCode, Message: msg}
	if enhanced != "" {
		e.EnhancedCode = parseEnhanced(enhanced)
	}
	s.mu.Lock()
	s.rejects[strings.ToLower(addr)] = e
	s.mu.Unlock()
}

// FailNext makes the next n transactions answer code (a 4xx, such as 451) and msg at MAIL FROM.
func (s *Server) FailNext(n int, code int, msg string) {
	s.mu.Lock()
	s.failLeft = n
	s.failErr = &gosmtp.SMTPError{Code: code, EnhancedCode: gosmtp.EnhancedCodeNotSet, Message: msg}
	s.mu.Unlock()
}

// Drop closes every connection clients hold open, as a relay timing out idle clients does;
// the relay takes new ones.
func (s *Server) Drop() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[*trackedConn]bool{}
	s.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// Accepting false makes the relay stop taking mail, as one shutting down does: EHLO and MAIL
// FROM are answered 421 4.3.2 until Accepting(true).
func (s *Server) Accepting(on bool) {
	s.mu.Lock()
	s.accepting = on
	s.mu.Unlock()
}

var errNotAccepting = &gosmtp.SMTPError{Code: 421, EnhancedCode: gosmtp.EnhancedCode{4, 3, 2},
	Message: "Service not available, not accepting messages"}

var errAuthRequired = &gosmtp.SMTPError{Code: 530, EnhancedCode: gosmtp.EnhancedCode{5, 7, 0},
	Message: "Authentication required"}

func (s *Server) newSession(*gosmtp.Conn) (gosmtp.Session, error) {
	s.mu.Lock()
	accepting := s.accepting
	s.mu.Unlock()
	if !accepting {
		return nil, errNotAccepting
	}
	sess := &session{s: s}
	if s.opts.Username != "" {
		return &authSession{sess}, nil
	}
	return sess, nil
}

// record keeps an accepted message and wakes the waiters.
func (s *Server) record(m Message) {
	if s.opts.Received != nil {
		s.opts.Received(m)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	if !s.opts.Forget {
		s.messages = append(s.messages, m)
	}
	close(s.arrived)
	s.arrived = make(chan struct{})
}

// session is one client's conversation.
type session struct {
	s    *Server
	user string // authenticated as
	from string
	to   []string
}

func (ss *session) Reset() {
	ss.from, ss.to = "", nil
}

func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, _ *gosmtp.MailOptions) error {
	s := ss.s
	if s.opts.Username != "" && ss.user == "" {
		return errAuthRequired
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accepting {
		return errNotAccepting
	}
	if s.failLeft > 0 {
		s.failLeft--
		return s.failErr
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	ss.s.mu.Lock()
	reject := ss.s.rejects[strings.ToLower(to)]
	ss.s.mu.Unlock()
	if reject != nil {
		return reject
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err // past MaxMessageBytes: go-smtp's 552 5.3.4
	}
	ss.s.record(Message{From: ss.from, To: append([]string(nil), ss.to...), Data: data,
		Received: time.Now(), Authenticated: ss.user})
	return nil
}

// authSession is a session of a relay that requires AUTH.
type authSession struct{ *session }

func (as *authSession) AuthMechanisms() []string {
	if m := as.s.opts.AuthMechanisms; len(m) > 0 {
		return m
	}
	return []string{sasl.Plain, sasl.Login}
}

func (as *authSession) Auth(mech string) (sasl.Server, error) {
	if !slices.Contains(as.AuthMechanisms(), mech) {
		return nil, gosmtp.ErrAuthUnknownMechanism
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, username, password string) error {
			if identity != "" && identity != username {
				return gosmtp.ErrAuthFailed
			}
			return as.login(username, password)
		}), nil
	case sasl.Login:
		return &loginServer{check: as.login}, nil
	}
	return nil, gosmtp.ErrAuthUnknownMechanism
}

// login checks credentials: 535 5.7.8 unless they are the relay's.
func (as *authSession) login(username, password string) error {
	o := as.s.opts
	userOK := subtle.ConstantTimeCompare([]byte(username), []byte(o.Username)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(password), []byte(o.Password)) == 1
	if !userOK || !passOK {
		return gosmtp.ErrAuthFailed
	}
	as.user = username
	return nil
}

// loginServer is the server side of AUTH LOGIN (draft-murchison-sasl-login), which go-sasl
// does not provide: it asks for the username, then the password.
type loginServer struct {
	check    func(username, password string) error
	step     int
	username string
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		l.step = 1
		if response == nil { // no initial response: ask for the username
			return []byte("Username:"), false, nil
		}
		fallthrough
	case 1:
		l.username, l.step = string(response), 2
		return []byte("Password:"), false, nil
	case 2:
		l.step = 3
		if err := l.check(l.username, string(response)); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	return nil, false, sasl.ErrUnexpectedClientResponse
}

// trackingListener counts the connections clients open and keeps those open for Drop.
type trackingListener struct {
	net.Listener
	s *Server
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, s: l.s}
	l.s.mu.Lock()
	l.s.connections++
	l.s.conns[tc] = true
	l.s.mu.Unlock()
	return tc, nil
}

// trackedConn is a client's connection, forgotten when it closes.
type trackedConn struct {
	net.Conn
	s    *Server
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}

// parseEnhanced reads "5.1.1"; anything else is no enhanced status.
func parseEnhanced(s string) gosmtp.EnhancedCode {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return gosmtp.NoEnhancedCode
	}
	var code gosmtp.EnhancedCode
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return gosmtp.NoEnhancedCode
		}
		code[i] = n
	}
	return code
}

// selfSigned makes a certificate for 127.0.0.1, ::1 and localhost, valid for a day, and a pool
// that trusts it.
func selfSigned() (*tls.Config, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("smtptest: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("smtptest: generate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "smtptest", Organization: []string{"Switchboard tests"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("smtptest: create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("smtptest: parse certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	cfg := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		MinVersion:   tls.VersionTLS12,
	}
	return cfg, pool, nil
}
