package mailin_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/switchboard-io/switchboard/internal/mailin"
)

// connect opens a connection from the loopback address from (127.0.0.1 when empty) and
// returns the server's first line: its greeting, or its refusal.
func connect(t *testing.T, addr, from string) (*textproto.Conn, string) {
	t.Helper()
	if from == "" {
		from = "127.0.0.1"
	}
	c := textproto.NewConn(dialFrom(t, addr, from))
	line, err := c.ReadLine()
	if err != nil {
		t.Fatalf("read the greeting: %v", err)
	}
	return c, line
}

// wantClosed fails the test unless the server closes c without another line.
func wantClosed(t *testing.T, c *textproto.Conn) {
	t.Helper()
	if line, err := c.ReadLine(); err == nil {
		t.Fatalf("the refused connection goes on: %q", line)
	}
}

// greetedAgain waits until a new connection from from is greeted: the server forgets a closed
// connection once its goroutine ends, a moment after the client closes it.
func greetedAgain(t *testing.T, addr, from string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, line := connect(t, addr, from)
		_ = c.Close()
		if strings.HasPrefix(line, "220 ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused after a connection closed: %q", line)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConnectionsOverTheLimitAreRefused(t *testing.T) {
	t.Parallel()
	h, addr := serve(t, mailin.Config{Limits: mailin.Limits{MaxConnections: 2, MaxConnectionsPerIP: 10}})

	first, line := connect(t, addr, "")
	if !strings.HasPrefix(line, "220 ") {
		t.Fatalf("first connection: %q", line)
	}
	if _, line = connect(t, addr, ""); !strings.HasPrefix(line, "220 ") {
		t.Fatalf("second connection: %q", line)
	}
	// The third is told to come back later, before any command, and closed.
	third, line := connect(t, addr, "")
	if !strings.HasPrefix(line, "421 4.4.5 ") {
		t.Fatalf("third connection: %q, want 421 4.4.5", line)
	}
	wantClosed(t, third)

	// A connection that ends gives its place back.
	_ = first.Close()
	greetedAgain(t, addr, "")
	if n := len(h.delivered()); n != 0 {
		t.Fatalf("delivered %d mails", n)
	}
}

func TestConnectionsFromOneAddressAreLimited(t *testing.T) {
	t.Parallel()
	h, addr := serve(t, mailin.Config{Limits: mailin.Limits{MaxConnections: 10, MaxConnectionsPerIP: 2}})

	for i := range 2 {
		if _, line := connect(t, addr, "127.0.0.1"); !strings.HasPrefix(line, "220 ") {
			t.Fatalf("connection %d from 127.0.0.1: %q", i+1, line)
		}
	}
	over, line := connect(t, addr, "127.0.0.1")
	if !strings.HasPrefix(line, "421 4.7.0 ") {
		t.Fatalf("third connection from 127.0.0.1: %q, want 421 4.7.0", line)
	}
	wantClosed(t, over)

	// Another address still gets in, and its mail is taken.
	if _, line := connect(t, addr, "127.0.0.2"); !strings.HasPrefix(line, "220 ") {
		t.Fatalf("connection from 127.0.0.2: %q", line)
	}
	c := smtp.NewClient(dialFrom(t, addr, "127.0.0.2"))
	defer c.Close()
	if err := c.SendMail("ada@example.org", []string{"hello@mail.example.com"}, strings.NewReader(crlf(plainMessage))); err != nil {
		t.Fatalf("send from 127.0.0.2: %v", err)
	}
	if m := h.only(t); m.Envelope.RemoteIP.String() != "127.0.0.2" {
		t.Errorf("mail from %s, want 127.0.0.2", m.Envelope.RemoteIP)
	}
}

// dialFrom connects to addr from the loopback address from. The connection's deadline bounds
// the test, it measures no speed: a server that never answers or never closes fails it.
func dialFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	return nc
}

// startData starts a message to hello@mail.example.com on c, greeted, up to the 354 of DATA.
func startData(t *testing.T, c *textproto.Conn) {
	t.Helper()
	for _, step := range []struct {
		cmd  string
		code int
	}{{"EHLO client.example.org", 250}, {"MAIL FROM:<ada@example.org>", 250}, {"RCPT TO:<hello@mail.example.com>", 250}, {"DATA", 354}} {
		if _, err := c.Cmd("%s", step.cmd); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ReadResponse(step.code); err != nil {
			t.Fatalf("%q: %v", step.cmd, err)
		}
	}
}

// replies reads the server's lines on c until the connection ends: then it closes lines and
// sends why on end.
func replies(c *textproto.Conn) (lines <-chan string, end <-chan error) {
	l, e := make(chan string, 16), make(chan error, 1)
	go func() {
		for {
			line, err := c.ReadLine()
			if err != nil {
				close(l)
				e <- err
				return
			}
			l <- line
		}
	}()
	return l, e
}

func TestSessionTimeoutCutsOffAClientThatKeepsTalking(t *testing.T) {
	t.Parallel()
	// Every pause of the clients below is far within ReadTimeout: only the session's own
	// deadline can end them.
	const pause = 20 * time.Millisecond
	h, addr := serve(t, mailin.Config{ReadTimeout: 5 * time.Second, Limits: mailin.Limits{SessionTimeout: 400 * time.Millisecond}})

	tests := []struct {
		name  string
		start func(*textproto.Conn)
		drip  string // what the client sends at each pause
		want  string // the first answer it gets
	}{
		{"a message sent a byte at a time", func(c *textproto.Conn) { startData(t, c) }, "x", "451 4.3.0 "},
		{"commands that never end", func(*textproto.Conn) {}, "NOOP\r\n", "421 4.4.2 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, line := connect(t, addr, "")
			if !strings.HasPrefix(line, "220 ") {
				t.Fatalf("greeting: %q", line)
			}
			tt.start(c)
			lines, end := replies(c)
			var got []string
		drip:
			for {
				select {
				case line, open := <-lines:
					if !open {
						break drip
					}
					if !strings.HasPrefix(line, "250 ") {
						got = append(got, line)
					}
					continue
				case <-time.After(pause):
				}
				// Writes fail once the server has closed: the lines tell what it said.
				_, _ = c.W.WriteString(tt.drip)
				_ = c.W.Flush()
			}
			// The server ended the connection, not the client's own deadline.
			var ne net.Error
			if err := <-end; errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server never ended the session; it answered %q", got)
			}
			if len(got) == 0 || !strings.HasPrefix(got[0], tt.want) {
				t.Fatalf("answers %q, want %q first", got, tt.want)
			}
			if last := got[len(got)-1]; !strings.HasPrefix(last, "421 ") {
				t.Errorf("last answer %q, want a 421", last)
			}
		})
	}
	if n := len(h.delivered()); n != 0 {
		t.Fatalf("delivered %d mails", n)
	}
}

// holding is a handler whose first Deliver waits until release is closed, its message's
// bytes held meanwhile.
type holding struct {
	handler
	once             sync.Once
	entered, release chan struct{}
}

func (h *holding) Deliver(ctx context.Context, m *mailin.Mail) error {
	first := false
	h.once.Do(func() { first = true })
	if first {
		close(h.entered)
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.handler.Deliver(ctx, m)
}

func TestMessagesOverTheMemoryBudgetAreAskedToComeBack(t *testing.T) {
	t.Parallel()
	const budget = 64 << 10
	h := &holding{entered: make(chan struct{}), release: make(chan struct{})}
	_, addr := serve(t, mailin.Config{Handler: h, MaxMessageBytes: budget, Limits: mailin.Limits{MaxBufferedBytes: budget}})
	const from = "ada@example.org"
	to := []string{"hello@mail.example.com"}

	// A message of 40 KiB is held while it is stored.
	held := make(chan outcome, 1)
	go func() { held <- send(addr, from, to, sized(40<<10), nil) }()
	<-h.entered

	// Another of 30 KiB does not fit beside it: declared, it is refused at MAIL FROM, before
	// it is sent; undeclared, once the budget runs out while it is read, the rest read past.
	out := mustSend(t, addr, from, to, sized(30<<10), &smtp.MailOptions{Size: 30 << 10})
	wantReply(t, out.mail, 452, smtp.EnhancedCode{4, 3, 1})
	out = mustSend(t, addr, from, to, sized(30<<10), nil)
	wantReply(t, out.data, 452, smtp.EnhancedCode{4, 3, 1})
	if n := len(h.delivered()); n != 0 {
		t.Fatalf("delivered %d mails while the first was held", n)
	}

	close(h.release)
	if out := <-held; out.failed != nil || out.data != nil {
		t.Fatalf("held message: %v, %v", out.failed, out.data)
	}
	// Answered, the first gave its bytes back, and the refusals kept none: a message too
	// large is refused, then one of the whole budget fits.
	out = mustSend(t, addr, from, to, sized(budget+1), nil)
	wantReply(t, out.data, 552, smtp.EnhancedCode{5, 3, 4})
	mustDeliver(t, addr, from, to, sized(30<<10))
	mustDeliver(t, addr, from, to, sized(budget))
	var sizes []int
	for _, m := range h.delivered() {
		sizes = append(sizes, len(h.raw(m)))
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{40 << 10, 30 << 10, budget}) {
		t.Errorf("delivered messages of %v bytes", sizes)
	}
}

func TestABudgetBelowTheMessageLimitIsRefused(t *testing.T) {
	t.Parallel()
	_, err := mailin.New(mailin.Config{Recipients: recipients{}, Handler: &handler{}, Hostname: "mx.example.com",
		MaxMessageBytes: 2 << 20, Limits: mailin.Limits{MaxBufferedBytes: 1 << 20}})
	if err == nil {
		t.Fatal("a server whose budget cannot hold its largest message was made")
	}
}
