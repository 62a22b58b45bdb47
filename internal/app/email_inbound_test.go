package app_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"testing"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/miekg/dns"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
)

// withSMTP runs the inbound SMTP listener on a loopback port and returns where it listens.
func withSMTP(t *testing.T, addr *string) option {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	*addr = l.Addr().String()
	return func(c *app.Config) {
		c.SMTPListener = l
		c.SMTPMaxMessageBytes = 64 << 10
	}
}

// deliverMail sends raw to the listener at addr as a mail server would; it returns the SMTP
// error the listener answered, nil when it took the mail.
func deliverMail(t *testing.T, addr, from string, to []string, raw string) error {
	t.Helper()
	c, err := gosmtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(strings.ReplaceAll(raw, "\n", "\r\n"))); err != nil {
		return err
	}
	return w.Close()
}

func smtpCode(err error) int {
	var se *gosmtp.SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// receivingProject is a project sending through relay from acme.test, verified on srv with
// enhanced records (its bounces come back to the listener) and receiving on.
func receivingProject(t *testing.T, in *instance, relay *smtptest.Server, srv *dnstest.Server) (string, string) {
	t.Helper()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	relayProvider(t, in, acme, relay, "s3cret")
	key := newKey(t, in, acme, apikey.Live)
	r := in.post("/v2/email-domains", key, `{"domain":"acme.test","enhancedRecords":true,"receivingEnabled":true}`)
	if r.status != 201 {
		t.Fatalf("add domain = %d %v", r.status, r.body)
	}
	d := r.body["domain"].(map[string]any)
	publish(srv, d, true)
	if r := in.post("/v2/email-domains/"+d["id"].(string)+"/verify", key, ""); r.body["domain"].(map[string]any)["status"] != "verified" {
		t.Fatalf("verify = %d %v", r.status, r.body)
	}
	return acme, key
}

func TestInboundMailBouncesAndComplaints(t *testing.T) {
	srv := newDNS(t)
	srv.Set("example.com", dns.TypeMX, "10 mx.example.com.")
	relay, err := smtptest.New(smtptest.Options{Username: "switchboard", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	var listener string
	in := start(t, withDNS(srv), withSMTP(t, &listener))
	acme, key := receivingProject(t, in, relay, srv)
	r := in.post("/v1/senders", key, `{"name":"Support","emailAddress":"support@acme.test","emailReceivingEnabled":true,"emailCatchAllEnabled":true,"setAsDefault":true}`)
	if r.status != 201 || r.body["emailReceivingEnabled"] != true || r.body["emailCatchAllEnabled"] != true {
		t.Fatalf("sender = %d %v", r.status, r.body)
	}
	sender := r.body["id"].(string)
	waitFor(t, func() bool {
		var s v1alpha1.Sender
		return in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: sender}, &s) == nil
	})

	// A reply comes in: an inbound email with its subject, HTML, attachment and checks.
	mail := `From: Ada Lovelace <ada@example.com>
To: support@acme.test
Subject: Re: Your invoice
Message-ID: <reply-1@example.com>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="MIX"

--MIX
Content-Type: multipart/alternative; boundary="ALT"

--ALT
Content-Type: text/plain; charset=utf-8

Thanks, paid.
--ALT
Content-Type: text/html; charset=utf-8

<p>Thanks, <b>paid</b>.</p>
--ALT--
--MIX
Content-Type: text/plain; name="receipt.txt"
Content-Disposition: attachment; filename="receipt.txt"

receipt 42
--MIX--
`
	if err := deliverMail(t, listener, "ada@example.com", []string{"support@acme.test"}, mail); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	id := ""
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound'`, acme) == 1
	})
	if err := in.poolRow(`SELECT id FROM messages WHERE project = $1 AND direction = 'inbound'`, acme).Scan(&id); err != nil {
		t.Fatal(err)
	}
	m := in.get("/v1/messages/"+id, key).body["message"].(map[string]any)
	email, _ := m["email"].(map[string]any)
	if m["channel"] != "email" || m["from"] != "ada@example.com" || m["to"] != "support@acme.test" || m["text"] != "Thanks, paid." ||
		email["subject"] != "Re: Your invoice" || !strings.Contains(fmt.Sprint(email["htmlBody"]), "<b>paid</b>") {
		t.Fatalf("inbound message = %v", m)
	}
	if auth, _ := email["authentication"].(map[string]any); auth["spf"] != "none" || auth["dmarc"] != "none" {
		t.Fatalf("authentication = %v", email["authentication"])
	}
	atts := in.get("/v1/messages/"+id+"/attachments", key)
	if items, _ := atts.body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["filename"] != "receipt.txt" {
		t.Fatalf("attachments = %v", atts.body)
	}

	// Catch-all: mail to any address at the domain reaches the sender, with the original address.
	if err := deliverMail(t, listener, "bob@example.com", []string{"billing@acme.test"}, "From: bob@example.com\nTo: billing@acme.test\nSubject: Hi\n\nHello\n"); err != nil {
		t.Fatalf("deliver to a catch-all: %v", err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound' AND recipient = 'billing@acme.test' AND sender = $2`, acme, sender) == 1
	})
	// Without catch-all, an unknown local part is refused at RCPT.
	if r := in.do("PATCH", "/v1/senders/"+sender, key, strings.NewReader(`{"emailCatchAllEnabled":false}`)); r.status != 200 || r.body["emailCatchAllEnabled"] != false {
		t.Fatalf("catch-all off = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		return smtpCode(deliverMail(t, listener, "bob@example.com", []string{"nobody@acme.test"}, "Subject: x\n\nx\n")) == 550
	})
	// Unknown domains are refused at RCPT, and over-size mail at DATA: nothing is stored.
	if err := deliverMail(t, listener, "bob@example.com", []string{"x@elsewhere.test"}, "Subject: x\n\nx\n"); smtpCode(err) != 550 {
		t.Fatalf("an unknown domain: %v", err)
	}
	big := "From: bob@example.com\nTo: support@acme.test\nSubject: big\n\n" + strings.Repeat(strings.Repeat("x", 70)+"\n", 1000)
	if err := deliverMail(t, listener, "bob@example.com", []string{"support@acme.test"}, big); smtpCode(err) != 552 {
		t.Fatalf("an over-size mail: %v", err)
	}
	long := "From: bob@example.com\nTo: support@acme.test\nSubject: long\n\n" + strings.Repeat("x", 3000) + "\n"
	if err := deliverMail(t, listener, "bob@example.com", []string{"support@acme.test"}, long); smtpCode(err) != 500 {
		t.Fatalf("a mail with a line too long: %v", err)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound'`, acme); n != 2 {
		t.Fatalf("%d inbound messages, want 2", n)
	}

	// A mail goes out with a return path naming it; its bounce fails it and suppresses the address.
	sent := func(to string) (string, string) {
		t.Helper()
		r := in.post("/v1/messages", key, `{"to":"`+to+`","subject":"Your invoice","text":"Hello"}`)
		id := r.body["message"].(map[string]any)["id"].(string)
		m := waitStatus(t, in, key, id, "sent")
		return id, m["providerMessageId"].(string)
	}
	firstID, firstPID := sent("ada@example.com")
	mails, err := relay.Wait(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	returnPath := mails[0].From
	if returnPath != "b-"+firstID+"@bounce.acme.test" {
		t.Fatalf("return path %q", returnPath)
	}
	bounce := fmt.Sprintf(dsnTemplate, returnPath, "failed", "5.1.1", "550 5.1.1 no such user", firstPID)
	if err := deliverMail(t, listener, "", []string{returnPath}, bounce); err != nil {
		t.Fatalf("deliver the bounce: %v", err)
	}
	m = waitStatus(t, in, key, firstID, "failed")
	if m["errorCode"] != "EMAIL_BOUNCED" || m["errorDetails"].(map[string]any)["providerCode"] != "5.1.1" {
		t.Fatalf("bounced message = %v", m)
	}
	if s := in.get("/v1/email-suppressions/ada@example.com", key); s.status != 200 || s.body["suppression"].(map[string]any)["reason"] != "hard_bounce" {
		t.Fatalf("suppression = %d %v", s.status, s.body)
	}
	// The bounce is not an inbound message, and a return path of no message is refused.
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound'`, acme); n != 2 {
		t.Fatalf("%d inbound messages after the bounce, want 2", n)
	}
	if err := deliverMail(t, listener, "", []string{"b-msg_nothing@bounce.acme.test"}, bounce); smtpCode(err) != 550 {
		t.Fatalf("a return path of no message: %v", err)
	}

	// A positive delivery notification marks a mail delivered.
	secondID, secondPID := sent("carl@example.com")
	ok := fmt.Sprintf(dsnTemplate, "b-"+secondID+"@bounce.acme.test", "delivered", "2.0.0", "250 2.0.0 ok", secondPID)
	if err := deliverMail(t, listener, "", []string{"b-" + secondID + "@bounce.acme.test"}, ok); err != nil {
		t.Fatalf("deliver the notification: %v", err)
	}
	waitStatus(t, in, key, secondID, "delivered")

	// A complaint (ARF) about it suppresses its recipient and leaves the mail delivered.
	complaint := fmt.Sprintf(arfTemplate, secondPID)
	if err := deliverMail(t, listener, "", []string{"b-" + secondID + "@bounce.acme.test"}, complaint); err != nil {
		t.Fatalf("deliver the complaint: %v", err)
	}
	waitFor(t, func() bool {
		s := in.get("/v1/email-suppressions/carl@example.com", key)
		return s.status == 200 && s.body["suppression"].(map[string]any)["reason"] == "complaint"
	})
	if m := waitStatus(t, in, key, secondID, "delivered"); m["errorCode"] != nil {
		t.Fatalf("complained-of message = %v", m)
	}
}

// dsnTemplate is a delivery status notification (RFC 3464): to, action, status, diagnostic,
// original Message-ID.
const dsnTemplate = `From: MAILER-DAEMON@mx.example.com
To: %s
Subject: Delivery Status Notification
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="R"

--R
Content-Type: text/plain

A report on your mail.
--R
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.com

Final-Recipient: rfc822; ada@example.com
Action: %s
Status: %s
Diagnostic-Code: smtp; %s

--R
Content-Type: text/rfc822-headers

From: support@acme.test
To: ada@example.com
Subject: Your invoice
Message-ID: <%s>

--R--
`

// arfTemplate is an abuse report (RFC 5965) about the mail with the Message-ID given.
const arfTemplate = `From: abuse@example.com
To: postmaster@acme.test
Subject: FW: Your invoice
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="F"

--F
Content-Type: text/plain

This is an email abuse report.
--F
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1
Original-Rcpt-To: <carl@example.com>

--F
Content-Type: text/rfc822-headers

From: support@acme.test
To: carl@example.com
Subject: Your invoice
Message-ID: <%s>

--F--
`
