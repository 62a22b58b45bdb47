package mailin_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-smtp"
	"github.com/miekg/dns"

	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/mailin"
	"github.com/switchboard-io/switchboard/internal/mailreport"
)

// The addresses the test servers take mail for.
var testRoutes = map[string]mailin.Route{
	"hello@mail.example.com":      {Project: "shop", Sender: "support", Address: "hello@mail.example.com"},
	"sales@mail.example.com":      {Project: "shop", Sender: "sales", Address: "sales@mail.example.com"},
	"bounces+m1@mail.example.com": {Project: "shop", Bounce: true, Address: "bounces+m1@mail.example.com"},
	"broken@mail.example.com":     {}, // Lookup fails for it
}

// recipients is a Recipients over testRoutes.
type recipients struct{}

func (recipients) Lookup(_ context.Context, address string) (mailin.Route, error) {
	if address == "broken@mail.example.com" {
		return mailin.Route{}, errors.New("database unavailable")
	}
	r, ok := testRoutes[address]
	if !ok {
		return mailin.Route{}, fmt.Errorf("look up %s: %w", address, mailin.ErrUnknownRecipient)
	}
	return r, nil
}

// handler records the mails delivered to it. err, when set, is returned instead; gate, when
// set, holds Deliver until it is closed, after signalling entered.
type handler struct {
	mu    sync.Mutex
	mails []*mailin.Mail
	// raws are the mails' raw messages, read in Deliver: the server takes them back after.
	raws    map[*mailin.Mail]string
	err     error
	gate    chan struct{}
	entered chan struct{}
}

func (h *handler) Deliver(ctx context.Context, m *mailin.Mail) error {
	if h.gate != nil {
		close(h.entered)
		select {
		case <-h.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if h.err != nil {
		return h.err
	}
	raw, err := io.ReadAll(m.Raw.Reader())
	if err != nil {
		return err
	}
	if len(raw) != m.Raw.Len() {
		return fmt.Errorf("raw reads %d bytes, Len says %d", len(raw), m.Raw.Len())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mails = append(h.mails, m)
	if h.raws == nil {
		h.raws = map[*mailin.Mail]string{}
	}
	h.raws[m] = string(raw)
	return nil
}

// raw returns the raw message of m as Deliver read it.
func (h *handler) raw(m *mailin.Mail) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.raws[m]
}

// delivered returns the mails delivered so far.
func (h *handler) delivered() []*mailin.Mail {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*mailin.Mail(nil), h.mails...)
}

// only returns the one mail delivered, or fails the test.
func (h *handler) only(t *testing.T) *mailin.Mail {
	t.Helper()
	mails := h.delivered()
	if len(mails) != 1 {
		t.Fatalf("delivered %d mails, want 1", len(mails))
	}
	return mails[0]
}

// deliver sends msg from from to hello@mail.example.com and returns the mail h got for it.
func (h *handler) deliver(t *testing.T, addr, from, msg string) *mailin.Mail {
	t.Helper()
	before := len(h.delivered())
	mustDeliver(t, addr, from, []string{"hello@mail.example.com"}, msg)
	mails := h.delivered()
	if len(mails) != before+1 {
		t.Fatalf("delivered %d mails, want 1", len(mails)-before)
	}
	return mails[before]
}

// gated returns a handler whose Deliver waits for its gate.
func gated() *handler {
	return &handler{gate: make(chan struct{}), entered: make(chan struct{})}
}

// testDNS starts a DNS server for the test and returns it with a resolver asking it.
func testDNS(t *testing.T) (*dnstest.Server, *dnsresolve.Resolver) {
	t.Helper()
	srv, err := dnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, dnsresolve.New(srv.Addr(), 2*time.Second)
}

// newServer makes a server for cfg, completed with the test recipients, a new handler unless
// cfg has one, and a DNS server of the test's own, with no records, unless cfg has a resolver.
func newServer(t *testing.T, cfg *mailin.Config) *mailin.Server {
	t.Helper()
	cfg.Hostname = "mx.example.com"
	cfg.Recipients = recipients{}
	if cfg.Handler == nil {
		cfg.Handler = &handler{}
	}
	if cfg.Resolver == nil {
		_, cfg.Resolver = testDNS(t)
	}
	srv, err := mailin.New(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// serve starts a server for cfg (see newServer) on 127.0.0.1 and returns its handler and
// address.
func serve(t *testing.T, cfg mailin.Config) (*handler, string) {
	t.Helper()
	srv := newServer(t, &cfg)
	h, _ := cfg.Handler.(*handler)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return h, l.Addr().String()
}

// receiveOne serves cfg, sends msg from from to rcpt and returns the mail delivered.
func receiveOne(t *testing.T, cfg mailin.Config, from, rcpt, msg string) *mailin.Mail {
	t.Helper()
	_, m := receiveOneRaw(t, cfg, from, rcpt, msg)
	return m
}

// receiveOneRaw is receiveOne, with the raw message the handler read.
func receiveOneRaw(t *testing.T, cfg mailin.Config, from, rcpt, msg string) (string, *mailin.Mail) {
	t.Helper()
	h, addr := serve(t, cfg)
	mustDeliver(t, addr, from, []string{rcpt}, msg)
	m := h.only(t)
	return h.raw(m), m
}

// outcome is what a server answered to one message: MAIL, each RCPT and DATA; failed is an
// error of the connection itself.
type outcome struct {
	mail   error
	rcpt   []error
	data   error
	failed error
}

// send sends msg from from to each of to over a new connection, as a mail server does: the
// message goes when one recipient at least is taken. It may run outside the test's goroutine.
func send(addr, from string, to []string, msg string, opts *smtp.MailOptions) (out outcome) {
	c, err := smtp.Dial(addr)
	if err != nil {
		return outcome{failed: err}
	}
	defer c.Close()
	if err := c.Hello("client.example.org"); err != nil {
		return outcome{failed: err}
	}
	if out.mail = c.Mail(from, opts); out.mail != nil {
		return out
	}
	taken := 0
	for _, rcpt := range to {
		err := c.Rcpt(rcpt, nil)
		out.rcpt = append(out.rcpt, err)
		if err == nil {
			taken++
		}
	}
	if taken == 0 {
		return out
	}
	w, err := c.Data()
	if err != nil {
		out.failed = err
		return out
	}
	if _, err := w.Write([]byte(msg)); err != nil {
		out.failed = err
		return out
	}
	out.data = w.Close()
	_ = c.Quit()
	return out
}

// dial connects to the server at addr and greets it, as a mail server does.
func dial(t *testing.T, addr string) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Hello("client.example.org"); err != nil {
		t.Fatal(err)
	}
	return c
}

// mustSend is send, failing the test when the connection fails.
func mustSend(t *testing.T, addr, from string, to []string, msg string, opts *smtp.MailOptions) outcome {
	t.Helper()
	out := send(addr, from, to, msg, opts)
	if out.failed != nil {
		t.Fatalf("send: %v", out.failed)
	}
	return out
}

// mustDeliver sends msg and fails the test unless the server took it.
func mustDeliver(t *testing.T, addr, from string, to []string, msg string) {
	t.Helper()
	if out := mustSend(t, addr, from, to, msg, nil); out.data != nil {
		t.Fatalf("data: %v", out.data)
	}
}

// wantReply fails the test unless err is the SMTP reply code and enhanced code.
func wantReply(t *testing.T, err error, code int, enhanced smtp.EnhancedCode) {
	t.Helper()
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != code || se.EnhancedCode != enhanced {
		t.Fatalf("reply %v, want %d %v", err, code, enhanced)
	}
}

// crlf writes a message written with \n line ends as it goes on the wire.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

const plainMessage = `From: "Ada Lovelace" <ada@example.org>
To: hello@mail.example.com, Someone <someone@example.net>
Cc: sales@mail.example.com
Subject: =?utf-8?q?Caf=C3=A9?= order
Date: Mon, 02 Mar 2026 10:00:00 +0100
Message-ID: <reply-1@example.org>
In-Reply-To: <sent-1@mail.example.com>
References: <sent-0@mail.example.com>
 <sent-1@mail.example.com>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

Hello, I'd like to order two coffees.
`

func TestPlainTextMailIsDeliveredWithItsFields(t *testing.T) {
	t.Parallel()
	received := time.Date(2026, 3, 2, 9, 0, 1, 0, time.UTC)
	raw := crlf(plainMessage)
	got, m := receiveOneRaw(t, mailin.Config{Now: func() time.Time { return received }}, "ada@example.org", "hello@mail.example.com", raw)

	env := m.Envelope
	if env.MailFrom != "ada@example.org" || env.HELO != "client.example.org" || env.RemoteIP.String() != "127.0.0.1" ||
		!env.ReceivedAt.Equal(received) || env.TLS {
		t.Errorf("envelope = %+v", env)
	}
	if len(env.Recipients) != 1 || env.Recipients[0] != testRoutes["hello@mail.example.com"] {
		t.Errorf("recipients = %+v", env.Recipients)
	}
	if m.Subject != "Café order" || m.MessageID != "reply-1@example.org" {
		t.Errorf("subject %q, message id %q", m.Subject, m.MessageID)
	}
	if fmt.Sprint(m.InReplyTo) != "[sent-1@mail.example.com]" ||
		fmt.Sprint(m.References) != "[sent-0@mail.example.com sent-1@mail.example.com]" {
		t.Errorf("in-reply-to %q, references %q", m.InReplyTo, m.References)
	}
	if m.From.Name != "Ada Lovelace" || m.From.Address != "ada@example.org" {
		t.Errorf("from = %+v", m.From)
	}
	if len(m.To) != 2 || m.To[1].Address != "someone@example.net" || len(m.Cc) != 1 || m.Cc[0].Address != "sales@mail.example.com" {
		t.Errorf("to %+v, cc %+v", m.To, m.Cc)
	}
	if want := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC); !m.Date.Equal(want) {
		t.Errorf("date = %v, want %v", m.Date, want)
	}
	if !strings.Contains(m.Text, "two coffees") || m.HTML != "" || m.Report != nil {
		t.Errorf("text %q, html %q, report %v", m.Text, m.HTML, m.Report)
	}
	if got != raw {
		t.Errorf("raw differs from what was sent:\n%q\n%q", got, raw)
	}
}

func TestAnswerWaitsForDeliver(t *testing.T) {
	t.Parallel()
	h := gated()
	_, addr := serve(t, mailin.Config{Handler: h})

	answered := make(chan outcome, 1)
	go func() {
		answered <- send(addr, "ada@example.org", []string{"hello@mail.example.com"}, crlf(plainMessage), nil)
	}()
	<-h.entered
	select {
	case out := <-answered:
		t.Fatalf("answered %v before Deliver returned", out.data)
	case <-time.After(200 * time.Millisecond):
	}
	close(h.gate)
	if out := <-answered; out.failed != nil || out.data != nil {
		t.Fatalf("answer: %v, data: %v", out.failed, out.data)
	}
	h.only(t)
}

const richMessage = `From: ada@example.org
To: hello@mail.example.com
Subject: Photos
Message-ID: <rich-1@example.org>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="mixed"

--mixed
Content-Type: multipart/related; boundary="related"

--related
Content-Type: multipart/alternative; boundary="alt"

--alt
Content-Type: text/plain; charset=utf-8

See the logo.
--alt
Content-Type: text/html; charset=utf-8

<p>See the <img src="cid:logo@example.org"></p>
--alt--
--related
Content-Type: image/png
Content-ID: <logo@example.org>
Content-Disposition: inline; filename="logo.png"
Content-Transfer-Encoding: base64

iVBORw0KGgo=
--related--
--mixed
Content-Type: application/pdf; name="invoice.pdf"
Content-Disposition: attachment; filename="invoice.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--mixed--
`

func TestMultipartMailKeepsBodiesAttachmentsAndInlines(t *testing.T) {
	t.Parallel()
	m := receiveOne(t, mailin.Config{}, "ada@example.org", "hello@mail.example.com", crlf(richMessage))
	if !strings.Contains(m.Text, "See the logo.") || !strings.Contains(m.HTML, `<img src="cid:logo@example.org">`) {
		t.Errorf("text %q, html %q", m.Text, m.HTML)
	}
	if len(m.Attachments) != 1 {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	if a := m.Attachments[0]; a.Filename != "invoice.pdf" || a.ContentType != "application/pdf" || string(a.Content) != "%PDF-1.4\n" {
		t.Errorf("attachment = %q %q %q", a.Filename, a.ContentType, a.Content)
	}
	if len(m.Inlines) != 1 {
		t.Fatalf("inlines = %+v", m.Inlines)
	}
	if in := m.Inlines[0]; in.Filename != "logo.png" || in.ContentType != "image/png" || in.ContentID != "logo@example.org" ||
		!bytes.Equal(in.Content, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("inline = %q %q %q %q", in.Filename, in.ContentType, in.ContentID, in.Content)
	}
}

func TestUnknownRecipientsAreRefusedAtRcpt(t *testing.T) {
	t.Parallel()
	h, addr := serve(t, mailin.Config{})

	out := mustSend(t, addr, "ada@example.org", []string{"nobody@mail.example.com"}, crlf(plainMessage), nil)
	wantReply(t, out.rcpt[0], 550, smtp.EnhancedCode{5, 1, 1})
	if n := len(h.delivered()); n != 0 {
		t.Fatalf("delivered %d mails to an unknown recipient", n)
	}

	// The domain is compared without regard to case; the local part is passed as written.
	out = mustSend(t, addr, "ada@example.org", []string{"nobody@mail.example.com", "hello@MAIL.Example.COM"}, crlf(plainMessage), nil)
	wantReply(t, out.rcpt[0], 550, smtp.EnhancedCode{5, 1, 1})
	if out.rcpt[1] != nil || out.data != nil {
		t.Fatalf("known recipient: rcpt %v, data %v", out.rcpt[1], out.data)
	}
	if rcpts := h.only(t).Envelope.Recipients; len(rcpts) != 1 || rcpts[0].Sender != "support" {
		t.Errorf("recipients = %+v", rcpts)
	}
}

func TestRecipientLookupFailureAsksToRetry(t *testing.T) {
	t.Parallel()
	_, addr := serve(t, mailin.Config{})

	out := mustSend(t, addr, "ada@example.org", []string{"broken@mail.example.com"}, crlf(plainMessage), nil)
	wantReply(t, out.rcpt[0], 451, smtp.EnhancedCode{4, 3, 0})
}

// sized is a message of n bytes as received: a header, then lines of x of up to 64 bytes with
// their line ends.
func sized(n int) string {
	header := crlf("From: ada@example.org\nTo: hello@mail.example.com\nSubject: big\n\n")
	var b strings.Builder
	b.WriteString(header)
	for rest := n - len(header); rest > 0; {
		line := min(rest, 64)
		if rest-line == 1 {
			line-- // leave the last line room for its line end
		}
		b.WriteString(strings.Repeat("x", line-2) + "\r\n")
		rest -= line
	}
	return b.String()
}

func TestMessagesOverTheSizeLimitAreRefused(t *testing.T) {
	t.Parallel()
	const limit = 4096
	h, addr := serve(t, mailin.Config{MaxMessageBytes: limit})
	to := []string{"hello@mail.example.com"}

	out := mustSend(t, addr, "ada@example.org", to, sized(100), &smtp.MailOptions{Size: limit + 1})
	wantReply(t, out.mail, 552, smtp.EnhancedCode{5, 3, 4})

	for _, n := range []int{limit + 1, 3 * limit} {
		out = mustSend(t, addr, "ada@example.org", to, sized(n), nil)
		wantReply(t, out.data, 552, smtp.EnhancedCode{5, 3, 4})
	}
	// Sent in chunks (BDAT), the message is counted as well.
	if reply := sendChunked(t, addr, to[0], sized(limit+1)); !strings.HasPrefix(reply, "552 5.3.4 ") {
		t.Errorf("chunked message over the limit: reply %q", reply)
	}
	if n := len(h.delivered()); n != 0 {
		t.Fatalf("delivered %d mails over the limit", n)
	}

	// A message of the limit goes through, declared or not.
	mustDeliver(t, addr, "ada@example.org", to, sized(limit))
	if out := mustSend(t, addr, "ada@example.org", to, sized(limit), &smtp.MailOptions{Size: limit}); out.data != nil {
		t.Fatalf("declared message of the limit: %v", out.data)
	}
	for _, m := range h.delivered() {
		if n := len(h.raw(m)); n != limit {
			t.Errorf("raw is %d bytes, want %d", n, limit)
		}
	}
}

// dialRaw starts a message to rcpt on a connection of the test's own, for what go-smtp's
// client does not do.
func dialRaw(t *testing.T, addr, rcpt string) *textproto.Conn {
	t.Helper()
	c, err := textproto.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, _, err := c.ReadResponse(220); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"EHLO client.example.org", "MAIL FROM:<ada@example.org>", "RCPT TO:<" + rcpt + ">"} {
		if _, err := c.Cmd("%s", cmd); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ReadResponse(250); err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
	}
	return c
}

// sendChunked sends msg to rcpt in one BDAT chunk, which go-smtp's client does not do, and
// returns the server's reply to it.
func sendChunked(t *testing.T, addr, rcpt, msg string) string {
	t.Helper()
	c := dialRaw(t, addr, rcpt)
	if _, err := fmt.Fprintf(c.W, "BDAT %d LAST\r\n%s", len(msg), msg); err != nil {
		t.Fatal(err)
	}
	if err := c.W.Flush(); err != nil {
		t.Fatal(err)
	}
	line, err := c.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestFlawsAreWarningsAndOnlyUnreadableMailIsRefused(t *testing.T) {
	t.Parallel()
	h, addr := serve(t, mailin.Config{})
	to := []string{"hello@mail.example.com"}

	out := mustSend(t, addr, "ada@example.org", to, "this is no header\r\n", nil)
	wantReply(t, out.data, 554, smtp.EnhancedCode{5, 6, 0})
	if n := len(h.delivered()); n != 0 {
		t.Fatalf("delivered %d unreadable mails", n)
	}

	flawed := crlf("From: ada@example.org\nDate: yesterday\nContent-Transfer-Encoding: base64\n\n!!!!\n")
	mustDeliver(t, addr, "ada@example.org", to, flawed)
	m := h.only(t)
	if len(m.Warnings) < 2 || !slices.Contains(m.Warnings, "Date: unreadable") || !m.Date.IsZero() {
		t.Errorf("warnings %q, date %v", m.Warnings, m.Date)
	}
}

func TestSlowTransferIsBoundedByPausesNotItsLength(t *testing.T) {
	t.Parallel()
	const timeout = 400 * time.Millisecond
	h, addr := serve(t, mailin.Config{ReadTimeout: timeout})

	c := dialRaw(t, addr, "hello@mail.example.com")
	if _, err := c.Cmd("DATA"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ReadResponse(354); err != nil {
		t.Fatal(err)
	}
	// Eight pauses of a quarter of the timeout: twice the timeout in all.
	const pieces = 8
	msg := crlf(plainMessage) + ".\r\n"
	for i := range pieces {
		time.Sleep(timeout / 4)
		if _, err := c.W.WriteString(msg[i*len(msg)/pieces : (i+1)*len(msg)/pieces]); err != nil {
			t.Fatal(err)
		}
		if err := c.W.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.ReadResponse(250); err != nil {
		t.Fatalf("data: %v", err)
	}
	h.only(t)
}

// dkimKey makes an Ed25519 key, publishes it at selector._domainkey.domain and returns it.
func dkimKey(t *testing.T, srv *dnstest.Server, domain, selector string) ed25519.PrivateKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if srv != nil {
		srv.Set(selector+"._domainkey."+domain, dns.TypeTXT, "v=DKIM1; k=ed25519; p="+base64.StdEncoding.EncodeToString(pub))
	}
	return priv
}

// sign returns msg with a DKIM signature of domain and selector by key.
func sign(t *testing.T, msg, domain, selector string, key ed25519.PrivateKey) string {
	t.Helper()
	var signed strings.Builder
	err := dkim.Sign(&signed, strings.NewReader(msg), &dkim.SignOptions{Domain: domain, Selector: selector, Signer: key})
	if err != nil {
		t.Fatal(err)
	}
	return signed.String()
}

func TestDKIMSignaturesAreCheckedAndKept(t *testing.T) {
	t.Parallel()
	dnsSrv, res := testDNS(t)
	key := dkimKey(t, dnsSrv, "example.org", "s1")
	unpublished := dkimKey(t, nil, "example.org", "gone")
	h, addr := serve(t, mailin.Config{Resolver: res})
	msg := crlf(plainMessage)
	signed := sign(t, msg, "example.org", "s1", key)

	tests := []struct {
		name, msg, result, reason string
		selector                  string
	}{
		{"valid", signed, mailin.ResultPass, "", "s1"},
		{"body altered", strings.Replace(signed, "two coffees", "ten coffees", 1), mailin.ResultFail, "body hash did not verify", "s1"},
		{"key not published", sign(t, msg, "example.org", "gone", unpublished), mailin.ResultPermError, "no key for signature", "gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := h.deliver(t, addr, "ada@example.org", tt.msg).Auth.DKIM
			if len(got) != 1 || got[0].Domain != "example.org" || got[0].Selector != tt.selector || got[0].Result != tt.result ||
				!strings.HasPrefix(got[0].Reason, tt.reason) {
				t.Errorf("dkim = %+v, want %s %q", got, tt.result, tt.reason)
			}
		})
	}
}

func TestSPF(t *testing.T) {
	t.Parallel()
	dnsSrv, res := testDNS(t)
	dnsSrv.Set("pass.example.org", dns.TypeTXT, "v=spf1 ip4:127.0.0.1 -all")
	dnsSrv.Set("fail.example.org", dns.TypeTXT, "v=spf1 -all")
	h, addr := serve(t, mailin.Config{Resolver: res})

	tests := []struct{ from, want string }{
		{"ada@pass.example.org", mailin.ResultPass},
		{"ada@fail.example.org", mailin.ResultFail},
		{"ada@none.example.org", mailin.ResultNone},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			if got := h.deliver(t, addr, tt.from, crlf(plainMessage)).Auth.SPF; got != tt.want {
				t.Errorf("spf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDMARC(t *testing.T) {
	t.Parallel()
	dnsSrv, res := testDNS(t)
	dnsSrv.Set("_dmarc.example.org", dns.TypeTXT, "v=DMARC1; p=reject")
	dnsSrv.Set("_dmarc.strict.example", dns.TypeTXT, "v=DMARC1; p=quarantine; adkim=s")
	orgKey := dkimKey(t, dnsSrv, "example.org", "s1")
	subKey := dkimKey(t, dnsSrv, "news.strict.example", "s1")
	otherKey := dkimKey(t, dnsSrv, "other.example", "s1")
	h, addr := serve(t, mailin.Config{Resolver: res})
	from := func(addr string) string {
		return strings.Replace(crlf(plainMessage), `"Ada Lovelace" <ada@example.org>`, addr, 1)
	}

	tests := []struct {
		name, msg, result, policy string
	}{
		{"aligned dkim", sign(t, from("ada@example.org"), "example.org", "s1", orgKey), mailin.ResultPass, "reject"},
		{"relaxed: subdomain From", sign(t, from("ada@mail.example.org"), "example.org", "s1", orgKey), mailin.ResultPass, "reject"},
		{"unaligned dkim", sign(t, from("ada@example.org"), "other.example", "s1", otherKey), mailin.ResultFail, "reject"},
		{"strict: subdomain signature", sign(t, from("ada@strict.example"), "news.strict.example", "s1", subKey), mailin.ResultFail, "quarantine"},
		{"no policy", sign(t, from("ada@other.example"), "other.example", "s1", otherKey), mailin.ResultNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The MAIL FROM domain publishes no SPF: only DKIM can align.
			a := h.deliver(t, addr, "bounce@spf.example", tt.msg).Auth
			if a.DMARC != tt.result || a.DMARCPolicy != tt.policy {
				t.Errorf("dmarc %q policy %q, want %q %q (dkim %+v)", a.DMARC, a.DMARCPolicy, tt.result, tt.policy, a.DKIM)
			}
		})
	}
}

func TestDMARCPassesOnAlignedSPF(t *testing.T) {
	t.Parallel()
	dnsSrv, res := testDNS(t)
	dnsSrv.Set("_dmarc.example.org", dns.TypeTXT, "v=DMARC1; p=reject")
	dnsSrv.Set("bounce.example.org", dns.TypeTXT, "v=spf1 ip4:127.0.0.1 -all")
	m := receiveOne(t, mailin.Config{Resolver: res}, "b@bounce.example.org", "hello@mail.example.com", crlf(plainMessage))
	if a := m.Auth; a.SPF != mailin.ResultPass || a.DMARC != mailin.ResultPass || len(a.DKIM) != 0 {
		t.Errorf("auth = %+v", a)
	}
}

const bounceReport = `From: Mail Delivery System <MAILER-DAEMON@mx.example.net>
To: bounces+m1@mail.example.com
Subject: Undelivered Mail Returned to Sender
Message-ID: <dsn-1@mx.example.net>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="report"

--report
Content-Type: text/plain

Your message could not be delivered.

--report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net

Final-Recipient: rfc822; gone@example.net
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 user unknown

--report
Content-Type: text/rfc822-headers

From: hello@mail.example.com
To: gone@example.net
Message-ID: <sent-9@mail.example.com>

--report--
`

func TestBounceToABounceAddressCarriesItsReport(t *testing.T) {
	t.Parallel()
	m := receiveOne(t, mailin.Config{}, "", "bounces+m1@mail.example.com", crlf(bounceReport))
	if m.Envelope.MailFrom != "" || !m.Envelope.Recipients[0].Bounce {
		t.Errorf("envelope = %+v", m.Envelope)
	}
	rep := m.Report
	if rep == nil {
		t.Fatalf("no report; warnings %q", m.Warnings)
	}
	if rep.Kind != mailreport.KindBounce || rep.OriginalMessageID != "sent-9@mail.example.com" || len(rep.Recipients) != 1 ||
		rep.Recipients[0].FinalRecipient != "gone@example.net" || rep.Recipients[0].Status != "5.1.1" {
		t.Errorf("report = %+v", rep)
	}
}

func TestHandlerErrorsAnswerRetryOrRefusal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      error
		code     int
		enhanced smtp.EnhancedCode
		message  string
	}{
		{"temporary", errors.New("store mail: connection refused"), 451, smtp.EnhancedCode{4, 3, 0}, "temporary failure, try again later"},
		{"rejected", fmt.Errorf("receiving is off for this domain: %w", mailin.ErrRejected), 550, smtp.EnhancedCode{5, 7, 1},
			"receiving is off for this domain: message rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, addr := serve(t, mailin.Config{Handler: &handler{err: tt.err}})
			out := mustSend(t, addr, "ada@example.org", []string{"hello@mail.example.com"}, crlf(plainMessage), nil)
			wantReply(t, out.data, tt.code, tt.enhanced)
			if msg := out.data.(*smtp.SMTPError).Message; msg != tt.message {
				t.Errorf("message %q, want %q", msg, tt.message)
			}
		})
	}
}

// selfSigned returns a certificate for name, and a pool trusting it.
func selfSigned(t *testing.T, name string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		DNSNames:              []string{name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func TestSTARTTLSIsOfferedAndAUTHIsNot(t *testing.T) {
	t.Parallel()
	cert, pool := selfSigned(t, "mx.example.com")
	h, addr := serve(t, mailin.Config{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})

	c, err := smtp.DialStartTLS(addr, &tls.Config{RootCAs: pool, ServerName: "mx.example.com", MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _ := c.Extension("AUTH"); ok {
		t.Error("AUTH offered over TLS")
	}
	if err := c.SendMail("ada@example.org", []string{"hello@mail.example.com"}, strings.NewReader(crlf(plainMessage))); err != nil {
		t.Fatal(err)
	}
	if !h.only(t).Envelope.TLS {
		t.Error("envelope does not say TLS")
	}

	plain := dial(t, addr)
	if ok, _ := plain.Extension("STARTTLS"); !ok {
		t.Error("STARTTLS not offered")
	}
	if ok, _ := plain.Extension("AUTH"); ok {
		t.Error("AUTH offered in clear text")
	}
}

// startServer runs Start(ctx) of a server for cfg, on 127.0.0.1 unless cfg has a listener,
// and returns the address it listens on and Start's result.
func startServer(t *testing.T, ctx context.Context, cfg mailin.Config) (string, <-chan error) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	srv := newServer(t, &cfg)
	if srv.NeedLeaderElection() {
		t.Error("the server asks for leader election: every replica must take mail")
	}
	started := make(chan error, 1)
	go func() { started <- srv.Start(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Addr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not listen")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return srv.Addr().String(), started
}

func TestStartShutsDownWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, started := startServer(t, ctx, mailin.Config{Handler: &handler{}})

	idle := dial(t, addr)

	cancel()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("start did not return: an idle connection holds the shutdown")
	}
	if err := idle.Noop(); err == nil {
		t.Error("idle connection still open after shutdown")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.Close()
		t.Error("still listening after shutdown")
	}
}

func TestShutdownAnswersTheMessageUnderWay(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := gated()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr, started := startServer(t, ctx, mailin.Config{Handler: h, Listener: l})
	if addr != l.Addr().String() {
		t.Fatalf("serving on %s, not on the listener given (%s)", addr, l.Addr())
	}

	answered := make(chan outcome, 1)
	go func() {
		answered <- send(addr, "ada@example.org", []string{"hello@mail.example.com"}, crlf(plainMessage), nil)
	}()
	<-h.entered
	cancel()
	select {
	case err := <-started:
		t.Fatalf("start returned %v while a message was being stored", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(h.gate)
	if out := <-answered; out.failed != nil || out.data != nil {
		t.Fatalf("answer: %v, data: %v", out.failed, out.data)
	}
	if err := <-started; err != nil {
		t.Fatalf("start: %v", err)
	}
	h.only(t)
}
