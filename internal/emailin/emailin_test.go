package emailin

import (
	"net/mail"
	"testing"

	"github.com/switchboard-io/switchboard/internal/mailin"
	"github.com/switchboard-io/switchboard/internal/mailreport"
)

func TestInboundMessageOfAMail(t *testing.T) {
	m := &mailin.Mail{
		Envelope: mailin.Envelope{MailFrom: "bounces@example.com"},
		Auth: mailin.Auth{SPF: mailin.ResultPass, DMARC: mailin.ResultFail, DMARCPolicy: "reject",
			DKIM: []mailin.DKIMResult{{Domain: "example.com", Selector: "s1", Result: mailin.ResultFail, Reason: "body hash"}}},
		Subject: "Re: Hi", From: mail.Address{Name: "Ada", Address: "Ada@Example.com"}, MessageID: "m2@example.com",
		References: []string{"m0@acme.test", "m1@acme.test"}, Text: "Thanks", HTML: "<p>Thanks</p>",
		Attachments: []mailin.Attachment{{Filename: "a.txt", ContentType: "text/plain", Content: []byte("a")}},
		Inlines:     []mailin.Attachment{{ContentType: "image/png", ContentID: "logo", Content: []byte{1}}},
	}
	in := inbound(mailin.Route{Project: "acme", Sender: "snd-1", Address: "sales@acme.test"}, m)
	if in.From != "ada@example.com" || in.To != "sales@acme.test" || in.Channel != "email" || in.ProfileName != "Ada" ||
		in.Subject != "Re: Hi" || in.HTMLBody != "<p>Thanks</p>" || in.ProviderMessageID != "m2@example.com" {
		t.Fatalf("inbound = %+v", in.Inbound)
	}
	// Without In-Reply-To, the last of References is the mail it answers.
	if in.ReplyToProviderMessageID != "m1@acme.test" {
		t.Fatalf("reply to %q", in.ReplyToProviderMessageID)
	}
	if a := in.EmailAuth; a.SPF != "pass" || a.DMARC != "fail" || a.DMARCPolicy != "reject" || len(a.DKIM) != 1 || a.DKIM[0].Reason != "body hash" {
		t.Fatalf("auth = %+v", a)
	}
	if len(in.Attachments) != 2 || in.Attachments[1].ContentID != "logo" {
		t.Fatalf("attachments = %+v", in.Attachments)
	}
	m.InReplyTo = []string{"m1b@acme.test"}
	m.From = mail.Address{}
	in = inbound(mailin.Route{Project: "acme", Sender: "snd-1", Address: "sales@acme.test"}, m)
	if in.ReplyToProviderMessageID != "m1b@acme.test" || in.From != "bounces@example.com" {
		t.Fatalf("reply to %q from %q", in.ReplyToProviderMessageID, in.From)
	}
}

func TestSameAddress(t *testing.T) {
	cases := []struct {
		r    mailreport.Recipient
		want bool
	}{
		{mailreport.Recipient{FinalRecipient: "Ada@example.com"}, true},
		{mailreport.Recipient{OriginalRecipient: "ada@example.com", FinalRecipient: "ada@mail.example.com"}, true},
		{mailreport.Recipient{FinalRecipient: "bob@example.com"}, false},
		{mailreport.Recipient{}, true},
	}
	for _, c := range cases {
		if got := sameAddress(c.r, "ada@example.com"); got != c.want {
			t.Errorf("sameAddress(%+v) = %v", c.r, got)
		}
	}
}
