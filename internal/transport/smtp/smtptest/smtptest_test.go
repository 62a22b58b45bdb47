package smtptest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
)

const mail = "From: a@example.com\r\nTo: b@example.org\r\nSubject: hi\r\n\r\nHello.\r\n.leading dot\r\n"

// dial connects with go-smtp's client as the relay's mode wants, trusting its certificate.
func dial(t *testing.T, s *smtptest.Server, mode smtptest.TLSMode) *gosmtp.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: s.CertPool()}
	var c *gosmtp.Client
	var err error
	switch mode {
	case smtptest.TLSNone:
		c, err = gosmtp.Dial(s.Addr())
	case smtptest.TLSStartTLS:
		c, err = gosmtp.DialStartTLS(s.Addr(), cfg)
	case smtptest.TLSImplicit:
		c, err = gosmtp.DialTLS(s.Addr(), cfg)
	}
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// smtpCode is the reply code of err, or 0.
func smtpCode(err error) (int, gosmtp.EnhancedCode) {
	var e *gosmtp.SMTPError
	if errors.As(err, &e) {
		return e.Code, e.EnhancedCode
	}
	return 0, gosmtp.EnhancedCode{}
}

func TestRecordsMessages(t *testing.T) {
	t.Parallel()
	for _, mode := range []smtptest.TLSMode{smtptest.TLSNone, smtptest.TLSStartTLS, smtptest.TLSImplicit} {
		s := smtptest.NewServer(t, smtptest.Options{TLS: mode})
		c := dial(t, s, mode)
		if err := c.SendMail("a@example.com", []string{"b@example.org", "c@example.org"}, strings.NewReader(mail)); err != nil {
			t.Fatalf("mode %d: send: %v", mode, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := s.Wait(ctx, 1)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		m := got[0]
		if m.From != "a@example.com" || strings.Join(m.To, ",") != "b@example.org,c@example.org" ||
			string(m.Data) != mail || m.Authenticated != "" || time.Since(m.Received) > time.Minute {
			t.Errorf("mode %d: %+v", mode, m)
		}
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	for mode, want := range map[smtptest.TLSMode]string{
		smtptest.TLSNone: "smtp://%s?tls=none", smtptest.TLSStartTLS: "smtp://%s", smtptest.TLSImplicit: "smtps://%s",
	} {
		s := smtptest.NewServer(t, smtptest.Options{TLS: mode})
		if host, _, _ := net.SplitHostPort(s.Addr()); host != "127.0.0.1" {
			t.Errorf("listens on %s, want loopback", s.Addr())
		}
		if got := s.URL(); got != strings.Replace(want, "%s", s.Addr(), 1) {
			t.Errorf("mode %d: URL %q", mode, got)
		}
		if (s.CertPool() == nil) != (mode == smtptest.TLSNone) {
			t.Errorf("mode %d: cert pool %v", mode, s.CertPool())
		}
	}
}

func TestCertificateNames(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{TLS: smtptest.TLSImplicit})
	for _, name := range []string{"127.0.0.1", "localhost"} {
		conn, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: s.CertPool(), ServerName: name})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		_ = conn.Close()
	}
	if conn, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: s.CertPool(), ServerName: "relay.example.com"}); err == nil {
		_ = conn.Close()
		t.Error("the certificate is valid for relay.example.com")
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{TLS: smtptest.TLSStartTLS, Username: "u", Password: "p", Domain: "relay.test"})

	c := dial(t, s, smtptest.TLSStartTLS)
	if ok, mechs := c.Extension("AUTH"); !ok || mechs != "PLAIN LOGIN" {
		t.Errorf("AUTH %v %q", ok, mechs)
	}
	if err := c.Mail("a@example.com", nil); err != nil {
		if code, enh := smtpCode(err); code != 530 || enh != (gosmtp.EnhancedCode{5, 7, 0}) {
			t.Errorf("mail before auth: %v, want 530 5.7.0", err)
		}
	} else {
		t.Error("mail before auth accepted")
	}
	if code, enh := smtpCode(c.Auth(sasl.NewPlainClient("", "u", "wrong"))); code != 535 || enh != (gosmtp.EnhancedCode{5, 7, 8}) {
		t.Errorf("wrong password: %d %v, want 535 5.7.8", code, enh)
	}

	for _, a := range []sasl.Client{sasl.NewPlainClient("", "u", "p"), sasl.NewLoginClient("u", "p")} {
		c := dial(t, s, smtptest.TLSStartTLS)
		if err := c.Auth(a); err != nil {
			t.Fatalf("auth: %v", err)
		}
		if err := c.SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(mail)); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range s.Messages() {
		if m.Authenticated != "u" {
			t.Errorf("authenticated as %q", m.Authenticated)
		}
	}
	if n := len(s.Messages()); n != 2 {
		t.Errorf("%d messages, want 2", n)
	}

	// Before STARTTLS the relay offers no AUTH.
	plain, err := gosmtp.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Close() }()
	if ok, _ := plain.Extension("AUTH"); ok {
		t.Error("AUTH offered before STARTTLS")
	}
	if ok, _ := plain.Extension("STARTTLS"); !ok {
		t.Error("STARTTLS not offered")
	}

	login := smtptest.NewServer(t, smtptest.Options{Username: "u", Password: "p", AuthMechanisms: []string{sasl.Login}})
	c = dial(t, login, smtptest.TLSNone)
	if code, _ := smtpCode(c.Auth(sasl.NewPlainClient("", "u", "p"))); code != 504 {
		t.Errorf("PLAIN where only LOGIN is offered: %d, want 504", code)
	}
}

func TestKnobs(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{MaxMessageBytes: 1024})
	s.RejectRecipient("Nobody@Example.org", 550, "5.1.1", "User unknown")
	s.RejectRecipient("old@example.org", 550, "", "no such user")
	c := dial(t, s, smtptest.TLSNone)

	if err := c.Mail("a@example.com", nil); err != nil {
		t.Fatal(err)
	}
	err := c.Rcpt("nobody@example.org", nil)
	if code, enh := smtpCode(err); code != 550 || enh != (gosmtp.EnhancedCode{5, 1, 1}) {
		t.Errorf("rejected recipient: %v", err)
	}
	err = c.Rcpt("old@example.org", nil)
	if code, _ := smtpCode(err); code != 550 || !strings.Contains(err.Error(), "no such user") {
		t.Errorf("rejected recipient without enhanced status: %v", err)
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}

	s.FailNext(2, 451, "Greylisted")
	for i := range 3 {
		err := c.Mail("a@example.com", nil)
		code, _ := smtpCode(err)
		if (i < 2 && code != 451) || (i == 2 && err != nil) {
			t.Errorf("transaction %d: %v", i, err)
		}
		_ = c.Reset()
	}

	err = c.SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(mail+strings.Repeat("0123456789\r\n", 200)))
	if code, enh := smtpCode(err); code != 552 || enh != (gosmtp.EnhancedCode{5, 3, 4}) {
		t.Errorf("too large: %v", err)
	}

	s.Accepting(false)
	if code, _ := smtpCode(c.Mail("a@example.com", nil)); code != 421 {
		t.Errorf("not accepting, open session: %d, want 421", code)
	}
	fresh, err := gosmtp.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fresh.Close() }()
	if code, _ := smtpCode(fresh.Hello("client.test")); code != 421 {
		t.Errorf("not accepting, EHLO: %d, want 421", code)
	}
	s.Accepting(true)
	c = dial(t, s, smtptest.TLSNone)
	if err := c.SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(mail)); err != nil {
		t.Errorf("accepting again: %v", err)
	}
	if n := len(s.Messages()); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

func TestWaitAndClose(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Wait(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait with nothing sent: %v", err)
	}

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.Wait(ctx, 2)
		done <- err
	}()
	for range 2 {
		c := dial(t, s, smtptest.TLSNone)
		if err := c.SendMail("a@example.com", []string{"b@example.org"}, strings.NewReader(mail)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("wait for 2: %v", err)
	}

	addr := s.Addr()
	s.Close()
	s.Close()
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = conn.Close()
		t.Error("still listening after Close")
	}
}

func TestForgetCountsAndHandsEachMessageOver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	s := smtptest.NewServer(t, smtptest.Options{Forget: true, Received: func(m smtptest.Message) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, m.To[0])
	}})
	c := dial(t, s, smtptest.TLSNone)
	for _, to := range []string{"b@example.org", "c@example.org"} {
		if err := c.SendMail("a@example.com", []string{to}, strings.NewReader(mail)); err != nil {
			t.Fatalf("send to %s: %v", to, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if s.Count() != 2 || len(s.Messages()) != 0 || s.Connections() != 1 || strings.Join(seen, ",") != "b@example.org,c@example.org" {
		t.Fatalf("count %d, kept %d, connections %d, handed over %v", s.Count(), len(s.Messages()), s.Connections(), seen)
	}
}
