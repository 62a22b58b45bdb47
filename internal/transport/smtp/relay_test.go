package smtp_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/smtp"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
)

// TestSendReusesConnections: mails go one after another over one connection (STARTTLS and AUTH
// once); a connection the relay dropped meanwhile is replaced without failing the mail; one a
// mail failed on is not used again; concurrent mails open what they need; a connection carries
// at most 100 mails; Close lets the kept ones go and the transport still sends.
func TestSendReusesConnections(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{TLS: smtptest.TLSStartTLS, Username: relayUser, Password: relayPassword})
	tr := sender(t, s, func(c *smtp.Config) { c.Username, c.Password = relayUser, relayPassword })
	ctx := context.Background()
	send := func(to string) error {
		m := outbound()
		m.To = to
		_, err := tr.Send(ctx, m)
		return err
	}
	for i := range 5 {
		if err := send(fmt.Sprintf("r%d@example.org", i)); err != nil {
			t.Fatalf("mail %d: %v", i, err)
		}
	}
	got := s.Messages()
	if len(got) != 5 || s.Connections() != 1 {
		t.Fatalf("%d mails over %d connections, want 5 over 1", len(got), s.Connections())
	}
	for i, m := range got {
		if want := fmt.Sprintf("r%d@example.org", i); len(m.To) != 1 || m.To[0] != want || m.Authenticated != relayUser {
			t.Errorf("mail %d went to %v as %q, want %s as %s", i, m.To, m.Authenticated, want, relayUser)
		}
	}

	// The relay drops its idle clients: the next mail finds out at RSET and opens another.
	s.Drop()
	if err := send("after-drop@example.org"); err != nil {
		t.Fatalf("after the relay dropped the connection: %v", err)
	}
	if s.Count() != 6 || s.Connections() != 2 {
		t.Fatalf("%d mails over %d connections, want 6 over 2", s.Count(), s.Connections())
	}

	// A refused recipient fails its mail and the connection it was on goes.
	s.RejectRecipient("gone@example.org", 550, "5.1.1", "no such user")
	wantFailure(t, send("gone@example.org"), smtp.CodeInvalidRecipient)
	if err := send("next@example.org"); err != nil {
		t.Fatal(err)
	}
	if s.Count() != 7 || s.Connections() != 3 {
		t.Fatalf("%d mails over %d connections, want 7 over 3", s.Count(), s.Connections())
	}

	// Mails at once each take a connection; all arrive.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- send(fmt.Sprintf("c%d@example.org", i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if s.Count() != 27 || s.Connections() > 3+20 {
		t.Fatalf("%d mails over %d connections, want 27 over at most 23", s.Count(), s.Connections())
	}

	// One connection carries 100 mails, then another is opened.
	tr.Close()
	tr = sender(t, s, func(c *smtp.Config) { c.Username, c.Password = relayUser, relayPassword })
	before := s.Connections()
	for i := range 101 {
		if err := send(fmt.Sprintf("n%d@example.org", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Connections() - before; n != 2 {
		t.Fatalf("101 mails over %d connections, want 2", n)
	}
}

// TestSendAfterTheContextEnds: a mail whose context ends while it waits for the relay fails,
// and the next mail goes on a connection of its own.
func TestSendAfterTheContextEnds(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, nil)
	if _, err := tr.Send(context.Background(), outbound()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.Send(ctx, outbound()); err == nil || transport.AsFailure(err) != nil {
		t.Fatalf("a cancelled mail: %v, want an error tried again", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := tr.Send(ctx, outbound()); err != nil {
		t.Fatalf("the mail after: %v", err)
	}
	if s.Count() != 2 {
		t.Fatalf("the relay took %d mails, want 2", s.Count())
	}
}
