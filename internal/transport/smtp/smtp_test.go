package smtp_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/smtp"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
)

const (
	relayUser     = "relay-user"
	relayPassword = "c0rrect-h0rse-battery"
)

// nothingSent fails the test if a relay received mail.
func nothingSent(t *testing.T, relays ...*smtptest.Server) {
	t.Helper()
	for _, s := range relays {
		if n := len(s.Messages()); n != 0 {
			t.Errorf("%s received %d mails", s.URL(), n)
		}
	}
}

// sender is a transport to the peer, configured from its URL as a Provider's baseURL is,
// trusting its certificate; edit changes the config before New.
func sender(t testing.TB, s *smtptest.Server, edit func(*smtp.Config)) *smtp.Transport {
	t.Helper()
	host, port, security, err := smtp.ParseURL(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg := smtp.Config{Host: host, Port: port, Security: security, Timeout: 10 * time.Second,
		TLSConfig: &tls.Config{RootCAs: s.CertPool()}}
	if edit != nil {
		edit(&cfg)
	}
	tr, err := smtp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func outbound() transport.Outbound {
	return transport.Outbound{
		ID: "msg_1", Channel: "email", To: "ada@example.org",
		From: "news@example.com", FromName: "Zoë's Newsletter", ReplyTo: "help@example.com",
		Subject: "Your weekly digest — ünïcode", Text: "The quick brown fox jumps over the lazy dog.",
		Headers: map[string]string{
			"List-Unsubscribe":      "<https://example.com/u/abc>, <mailto:unsub@example.com?subject=abc>",
			"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		},
	}
}

// sendOne sends m and returns the result and the one mail the peer received.
func sendOne(t *testing.T, s *smtptest.Server, tr *smtp.Transport, m transport.Outbound) (transport.Result, smtptest.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := tr.Send(ctx, m)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	got, err := s.Wait(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("peer received %d mails, want 1", len(got))
	}
	return res, got[0]
}

// part is a leaf of a received mail: its place in the MIME tree ("multipart/mixed >
// multipart/alternative > text/plain"), its header and its decoded body.
type part struct {
	path   string
	header map[string][]string
	body   []byte
}

func (p part) get(k string) string {
	if v := p.header[http.CanonicalHeaderKey(k)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// leaves parses a received mail into its leaf parts.
func leaves(t *testing.T, data []byte) (*mail.Message, []part) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("read mail: %v", err)
	}
	var out []part
	var walk func(header map[string][]string, body io.Reader, path string)
	walk = func(header map[string][]string, body io.Reader, path string) {
		ct := "text/plain"
		if v := header["Content-Type"]; len(v) > 0 {
			ct = v[0]
		}
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil {
			t.Fatalf("content type %q: %v", ct, err)
		}
		if path != "" {
			path += " > "
		}
		path += mt
		if strings.HasPrefix(mt, "multipart/") {
			r := multipart.NewReader(body, params["boundary"])
			for {
				p, err := r.NextRawPart()
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				walk(p.Header, p, path)
			}
		}
		var dec io.Reader = body
		if v := header["Content-Transfer-Encoding"]; len(v) > 0 {
			switch strings.ToLower(v[0]) {
			case "base64":
				dec = base64.NewDecoder(base64.StdEncoding, body)
			case "quoted-printable":
				dec = quotedprintable.NewReader(body)
			}
		}
		b, err := io.ReadAll(dec)
		if err != nil {
			t.Fatalf("%s: decode: %v", path, err)
		}
		// go-mail ends each text part with a line break of its own.
		out = append(out, part{path: path, header: header, body: bytes.TrimSuffix(b, []byte("\r\n"))})
	}
	walk(msg.Header, msg.Body, "")
	return msg, out
}

func paths(ps []part) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.path)
	}
	return out
}

// noLeak fails the test if err repeats one of secrets (a password, a body, a URL's token).
func noLeak(t *testing.T, name string, err error, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error repeats %q: %v", name, secret, err)
		}
	}
}

func wantFailure(t *testing.T, err error, code string) *transport.Failure {
	t.Helper()
	f := transport.AsFailure(err)
	if f == nil || f.Code != code {
		t.Fatalf("error %v, want a failure %s", err, code)
	}
	return f
}

func TestSendPlainText(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, nil)
	m := outbound()
	res, got := sendOne(t, s, tr, m)

	if got.From != "news@example.com" || len(got.To) != 1 || got.To[0] != "ada@example.org" {
		t.Errorf("envelope from %q to %q", got.From, got.To)
	}
	msg, parts := leaves(t, got.Data)
	h := msg.Header
	from, err := mail.ParseAddress(h.Get("From"))
	if err != nil || from.Name != "Zoë's Newsletter" || from.Address != "news@example.com" {
		t.Errorf("From %q: %+v %v", h.Get("From"), from, err)
	}
	if strings.Contains(h.Get("From"), "Zoë") {
		t.Errorf("From %q carries raw UTF-8, want RFC 2047", h.Get("From"))
	}
	if to, err := mail.ParseAddress(h.Get("To")); err != nil || to.Address != "ada@example.org" {
		t.Errorf("To %q", h.Get("To"))
	}
	if rt, err := mail.ParseAddress(h.Get("Reply-To")); err != nil || rt.Address != "help@example.com" {
		t.Errorf("Reply-To %q", h.Get("Reply-To"))
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil || subject != m.Subject {
		t.Errorf("Subject %q decodes to %q (%v)", h.Get("Subject"), subject, err)
	}
	if _, err := h.Date(); err != nil {
		t.Errorf("Date %q: %v", h.Get("Date"), err)
	}
	if !strings.HasSuffix(res.ProviderMessageID, "@example.com") || len(res.ProviderMessageID) < 30 {
		t.Errorf("ProviderMessageID %q, want <random>@example.com", res.ProviderMessageID)
	}
	if h.Get("Message-Id") != "<"+res.ProviderMessageID+">" {
		t.Errorf("Message-ID %q, result %q", h.Get("Message-Id"), res.ProviderMessageID)
	}
	if h.Get("List-Unsubscribe") != m.Headers["List-Unsubscribe"] || h.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe %q, -Post %q", h.Get("List-Unsubscribe"), h.Get("List-Unsubscribe-Post"))
	}
	if h.Get("User-Agent") != "" || h.Get("X-Mailer") != "" {
		t.Errorf("the mail names its library: %q %q", h.Get("User-Agent"), h.Get("X-Mailer"))
	}
	if len(parts) != 1 || parts[0].path != "text/plain" || string(parts[0].body) != m.Text {
		t.Fatalf("parts %q, body %q", paths(parts), parts[0].body)
	}
	if got.Authenticated != "" {
		t.Errorf("authenticated as %q without credentials", got.Authenticated)
	}

	// Two sends, two Message-IDs.
	res2, err := tr.Send(context.Background(), m)
	if err != nil || res2.ProviderMessageID == res.ProviderMessageID {
		t.Errorf("second send: %q %v", res2.ProviderMessageID, err)
	}
}

func TestSendReturnPath(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, nil)
	m := outbound()
	m.ReturnPath = "b-msg_1@bounce.example.com"
	_, got := sendOne(t, s, tr, m)
	if got.From != "b-msg_1@bounce.example.com" {
		t.Fatalf("envelope from %q, want the return path", got.From)
	}
	if msg, _ := leaves(t, got.Data); !strings.Contains(msg.Header.Get("From"), "news@example.com") {
		t.Fatalf("From %q changed with the return path", msg.Header.Get("From"))
	}
	m.ReturnPath = "Bounces <b@bounce.example.com>"
	if _, err := tr.Send(context.Background(), m); transport.AsFailure(err) == nil || transport.AsFailure(err).Code != smtp.CodeInvalidSender {
		t.Fatalf("a return path with a name: %v", err)
	}
}

func TestSendHTML(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, nil)

	m := outbound()
	m.HTMLBody = "<p>The <b>quick</b> brown fox</p>"
	_, got := sendOne(t, s, tr, m)
	msg, parts := leaves(t, got.Data)
	if mt, _, _ := mime.ParseMediaType(msg.Header.Get("Content-Type")); mt != "multipart/alternative" {
		t.Errorf("Content-Type %q, want multipart/alternative", msg.Header.Get("Content-Type"))
	}
	want := []string{"multipart/alternative > text/plain", "multipart/alternative > text/html"}
	if fmt.Sprint(paths(parts)) != fmt.Sprint(want) {
		t.Fatalf("parts %q, want %q", paths(parts), want)
	}
	if string(parts[0].body) != m.Text || string(parts[1].body) != m.HTMLBody {
		t.Errorf("bodies %q and %q", parts[0].body, parts[1].body)
	}

	// HTML without text goes alone.
	s2 := smtptest.NewServer(t, smtptest.Options{})
	m.Text = ""
	_, got = sendOne(t, s2, sender(t, s2, nil), m)
	if _, parts = leaves(t, got.Data); len(parts) != 1 || parts[0].path != "text/html" || string(parts[0].body) != m.HTMLBody {
		t.Errorf("HTML only: parts %q", paths(parts))
	}
}

func TestSendAttachments(t *testing.T) {
	t.Parallel()
	csv := []byte("name,count\nfox,1\ndog,2\n")
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/files/report.csv" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(csv)
	}))
	t.Cleanup(files.Close)
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, func(c *smtp.Config) { c.HTTP = files.Client() })

	pdf := []byte("%PDF-1.4\n% not really a pdf\n")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	m := outbound()
	m.HTMLBody = `<p>Hi</p><img src="cid:logo">`
	m.Attachments = []transport.Attachment{
		{Filename: "invoice.pdf", ContentType: "application/pdf", Content: pdf},
		{Filename: "report.csv", URL: files.URL + "/files/report.csv"},
		{Filename: "logo.png", ContentID: "logo", Content: png},
	}
	_, got := sendOne(t, s, tr, m)
	_, parts := leaves(t, got.Data)
	want := []string{
		"multipart/mixed > multipart/related > multipart/alternative > text/plain",
		"multipart/mixed > multipart/related > multipart/alternative > text/html",
		"multipart/mixed > multipart/related > image/png",
		"multipart/mixed > application/pdf",
		"multipart/mixed > text/csv",
	}
	if fmt.Sprint(paths(parts)) != fmt.Sprint(want) {
		t.Fatalf("parts\n%q\nwant\n%q", paths(parts), want)
	}
	logo, invoice, report := parts[2], parts[3], parts[4]
	if !bytes.Equal(logo.body, png) || logo.get("Content-Id") != "<logo>" || !strings.HasPrefix(logo.get("Content-Disposition"), "inline") {
		t.Errorf("inline part: Content-ID %q, disposition %q, %d bytes", logo.get("Content-Id"), logo.get("Content-Disposition"), len(logo.body))
	}
	if !bytes.Equal(invoice.body, pdf) || !strings.Contains(invoice.get("Content-Disposition"), `attachment; filename="invoice.pdf"`) {
		t.Errorf("invoice: disposition %q, body %q", invoice.get("Content-Disposition"), invoice.body)
	}
	if !bytes.Equal(report.body, csv) || !strings.Contains(report.get("Content-Disposition"), `filename="report.csv"`) {
		t.Errorf("report: disposition %q, body %q", report.get("Content-Disposition"), report.body)
	}
}

func TestSendAttachmentRefusals(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 4096)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big": // Content-Length announces the size
			_, _ = w.Write(big)
		case "/big-chunked": // no Content-Length: the cap stops the reading
			w.(http.Flusher).Flush()
			for range 4 {
				_, _ = w.Write(big)
			}
		case "/small":
			_, _ = w.Write(big[:100])
		case "/busy":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(files.Close)
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, func(c *smtp.Config) { c.HTTP = files.Client(); c.MaxAttachmentBytes = 1000 })

	cases := []struct {
		name string
		atts []transport.Attachment
		code string // "" for an error tried again
	}{
		{"over the cap, announced", []transport.Attachment{{Filename: "a.bin", URL: files.URL + "/big"}}, smtp.CodeAttachmentTooLarge},
		{"over the cap, streamed", []transport.Attachment{{Filename: "a.bin", URL: files.URL + "/big-chunked"}}, smtp.CodeAttachmentTooLarge},
		{"over the cap together", []transport.Attachment{
			{Filename: "a.txt", Content: big[:950]},
			{Filename: "b.bin", URL: files.URL + "/small"},
		}, smtp.CodeAttachmentTooLarge},
		{"content over the cap", []transport.Attachment{{Filename: "a.txt", Content: big}}, smtp.CodeAttachmentTooLarge},
		{"404", []transport.Attachment{{Filename: "gone.pdf", URL: files.URL + "/gone?token=s3cr3t"}}, smtp.CodeAttachmentUnavailable},
		{"not http", []transport.Attachment{{Filename: "a.txt", URL: "ftp://files.example.com/a.txt"}}, smtp.CodeAttachmentUnavailable},
		{"neither content nor URL", []transport.Attachment{{Filename: "a.txt"}}, smtp.CodeAttachmentUnavailable},
		{"503", []transport.Attachment{{Filename: "a.txt", URL: files.URL + "/busy"}}, ""},
	}
	for _, c := range cases {
		m := outbound()
		m.Attachments = c.atts
		_, err := tr.Send(context.Background(), m)
		switch {
		case err == nil:
			t.Errorf("%s: sent", c.name)
		case c.code == "":
			var tmp *transport.Temporary
			if transport.AsFailure(err) != nil || errors.As(err, &tmp) {
				t.Errorf("%s: %v, want an error tried again", c.name, err)
			}
		default:
			if f := transport.AsFailure(err); f == nil || f.Code != c.code {
				t.Errorf("%s: %v, want %s", c.name, err, c.code)
			}
		}
		noLeak(t, c.name, err, "s3cr3t")
	}
	nothingSent(t, s)
}

func TestSendRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, nil)
	cases := []struct {
		name string
		edit func(*transport.Outbound)
		code string
	}{
		{"channel", func(m *transport.Outbound) { m.Channel = "sms" }, smtp.CodeChannelUnsupported},
		{"from", func(m *transport.Outbound) { m.From = "not an address" }, smtp.CodeInvalidSender},
		{"to", func(m *transport.Outbound) { m.To = "ada@" }, smtp.CodeInvalidRecipient},
		{"reply-to", func(m *transport.Outbound) { m.ReplyTo = "@@" }, smtp.CodeInvalidReplyTo},
		{"reserved header", func(m *transport.Outbound) { m.Headers = map[string]string{"Subject": "x"} }, smtp.CodeInvalidHeader},
		{"header name", func(m *transport.Outbound) { m.Headers = map[string]string{"X Bad": "x"} }, smtp.CodeInvalidHeader},
		{"header value", func(m *transport.Outbound) { m.Headers = map[string]string{"X-Ok": "a\r\nBcc: eve@example.net"} }, smtp.CodeInvalidHeader},
		{"content id", func(m *transport.Outbound) {
			m.Attachments = []transport.Attachment{{Filename: "a.png", ContentID: "a b", Content: []byte("x")}}
		}, smtp.CodeInvalidHeader},
		{"dkim key", func(m *transport.Outbound) {
			m.DKIM = &transport.DKIMKey{Domain: "example.com", Selector: "s1"}
		}, smtp.CodeDKIMFailed},
	}
	for _, c := range cases {
		m := outbound()
		c.edit(&m)
		_, err := tr.Send(context.Background(), m)
		if f := transport.AsFailure(err); f == nil || f.Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	nothingSent(t, s)
}

// testKey is a DKIM key of example.com and the TXT record that publishes it.
type testKey struct {
	name, selector, record string
	signer                 crypto.Signer
}

// testKeys makes an RSA-2048 and an Ed25519 DKIM key, with their records.
func testKeys(t *testing.T) (rsaKey, edKey testKey) {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPub, err := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	edPub, ek, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{"rsa-2048", "s2048", "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(rsaPub), rk},
		testKey{"ed25519", "sed", "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(edPub), ek}
}

func TestSendDKIM(t *testing.T) {
	t.Parallel()
	rsaKey, edKey := testKeys(t)
	keys := []testKey{rsaKey, edKey}
	for _, k := range keys {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s := smtptest.NewServer(t, smtptest.Options{})
			m := outbound()
			m.HTMLBody = "<p>The quick brown fox</p>"
			m.Headers["X-Campaign"] = "spring"
			m.DKIM = &transport.DKIMKey{Domain: "example.com", Selector: k.selector, Signer: k.signer}
			_, got := sendOne(t, s, sender(t, s, nil), m)

			lookup := func(domain string) ([]string, error) {
				if domain == k.selector+"._domainkey.example.com" {
					return []string{k.record}, nil
				}
				return nil, fmt.Errorf("no TXT record for %s", domain)
			}
			verify := func(data []byte) error {
				vs, err := dkim.VerifyWithOptions(bytes.NewReader(data), &dkim.VerifyOptions{LookupTXT: lookup})
				if err != nil {
					return err
				}
				if len(vs) != 1 {
					return fmt.Errorf("%d signatures", len(vs))
				}
				if vs[0].Domain != "example.com" {
					return fmt.Errorf("signed by %q", vs[0].Domain)
				}
				return vs[0].Err
			}
			if err := verify(got.Data); err != nil {
				t.Fatalf("verify: %v", err)
			}

			msg, _ := leaves(t, got.Data)
			sig := strings.ToLower(strings.Join(strings.Fields(msg.Header.Get("Dkim-Signature")), ""))
			if !strings.Contains(sig, "c=relaxed/relaxed") {
				t.Errorf("signature %q, want c=relaxed/relaxed", sig)
			}
			for _, h := range []string{"from", "to", "subject", "date", "message-id", "reply-to", "mime-version",
				"content-type", "list-unsubscribe", "list-unsubscribe-post", "x-campaign"} {
				if !strings.Contains(sig, ":"+h+":") && !strings.Contains(sig, "h="+h+":") && !strings.Contains(sig, ":"+h+";") {
					t.Errorf("h= does not list %s: %q", h, sig)
				}
			}

			body := bytes.Replace(got.Data, []byte("quick"), []byte("quack"), 1)
			if bytes.Equal(body, got.Data) {
				t.Fatal("no body to tamper with")
			}
			if err := verify(body); err == nil {
				t.Error("a tampered body verifies")
			}
			subject := bytes.Replace(got.Data, []byte("Subject: "), []byte("Subject: Re: "), 1)
			if err := verify(subject); err == nil {
				t.Error("a tampered subject verifies")
			}
		})
	}
}

func TestSendTLSAndAuth(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		opts  smtptest.Options
		check string // in Check's description
	}{
		{"starttls plain auth", smtptest.Options{TLS: smtptest.TLSStartTLS, Username: relayUser, Password: relayPassword, Domain: "relay.test"}, "STARTTLS"},
		{"implicit tls", smtptest.Options{TLS: smtptest.TLSImplicit, Username: relayUser, Password: relayPassword, Domain: "relay.test"}, "implicit TLS"},
		{"starttls login only", smtptest.Options{TLS: smtptest.TLSStartTLS, Username: relayUser, Password: relayPassword,
			AuthMechanisms: []string{"LOGIN"}, Domain: "relay.test"}, "STARTTLS"},
		{"plain on loopback with auth", smtptest.Options{Username: relayUser, Password: relayPassword, Domain: "relay.test"}, "plain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := smtptest.NewServer(t, c.opts)
			tr := sender(t, s, func(cfg *smtp.Config) { cfg.Username, cfg.Password = relayUser, relayPassword })
			_, got := sendOne(t, s, tr, outbound())
			if got.Authenticated != relayUser {
				t.Errorf("authenticated as %q", got.Authenticated)
			}
			desc, err := tr.Check(context.Background())
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if !strings.HasPrefix(desc, s.Addr()+" (") || !strings.Contains(desc, c.check) || !strings.Contains(desc, "relay.test ESMTP") {
				t.Errorf("check: %q", desc)
			}
		})
	}
}

func TestSendAuthRefused(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{TLS: smtptest.TLSStartTLS, Username: relayUser, Password: relayPassword})
	wrong := "wr0ng-passw0rd"
	tr := sender(t, s, func(c *smtp.Config) { c.Username, c.Password = relayUser, wrong })
	_, err := tr.Send(context.Background(), outbound())
	f := wantFailure(t, err, smtp.CodeProviderAuthFailed)
	if f.ProviderCode != "535 5.7.8" {
		t.Errorf("ProviderCode %q, want 535 5.7.8", f.ProviderCode)
	}
	_, cerr := tr.Check(context.Background())
	if !errors.Is(cerr, smtp.ErrInvalidCredentials) {
		t.Errorf("check: %v, want ErrInvalidCredentials", cerr)
	}
	noLeak(t, "send", err, wrong, "quick brown fox")
	noLeak(t, "check", cerr, wrong)

	// No credentials where the relay wants them: 530 at MAIL FROM.
	_, err = sender(t, s, nil).Send(context.Background(), outbound())
	if f := wantFailure(t, err, smtp.CodeProviderAuthFailed); !strings.HasPrefix(f.ProviderCode, "530") {
		t.Errorf("ProviderCode %q, want 530", f.ProviderCode)
	}
	nothingSent(t, s)
}

func TestSendTLSRefused(t *testing.T) {
	t.Parallel()
	plain := smtptest.NewServer(t, smtptest.Options{})
	starttls := smtptest.NewServer(t, smtptest.Options{TLS: smtptest.TLSStartTLS})
	implicit := smtptest.NewServer(t, smtptest.Options{TLS: smtptest.TLSImplicit})
	cases := []struct {
		name string
		tr   *smtp.Transport
	}{
		{"starttls not offered", sender(t, plain, func(c *smtp.Config) { c.Security = smtp.SecurityStartTLS })},
		{"starttls, untrusted certificate", sender(t, starttls, func(c *smtp.Config) { c.TLSConfig = nil })},
		{"implicit, untrusted certificate", sender(t, implicit, func(c *smtp.Config) { c.TLSConfig = nil })},
		{"starttls, another name", sender(t, starttls, func(c *smtp.Config) {
			c.TLSConfig = &tls.Config{RootCAs: starttls.CertPool(), ServerName: "relay.example.com"}
		})},
	}
	for _, c := range cases {
		for _, check := range []bool{false, true} {
			var err error
			if check {
				_, err = c.tr.Check(context.Background())
			} else {
				_, err = c.tr.Send(context.Background(), outbound())
			}
			if f := transport.AsFailure(err); f == nil || f.Code != smtp.CodeProviderTLSFailed {
				t.Errorf("%s (check %v): %v, want %s", c.name, check, err, smtp.CodeProviderTLSFailed)
			}
			if errors.Is(err, smtp.ErrInvalidCredentials) {
				t.Errorf("%s: %v is not about credentials", c.name, err)
			}
		}
	}
	nothingSent(t, plain, starttls, implicit)
}

func TestSendRelayRefusals(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{MaxMessageBytes: 4096})
	s.RejectRecipient("nobody@example.org", 550, "5.1.1", "<nobody@example.org>: Recipient address rejected: User unknown")
	s.RejectRecipient("old@example.org", 550, "", "No such user here")
	s.RejectRecipient("spam@example.org", 550, "5.7.1", "Relaying denied")
	s.RejectRecipient("full@example.org", 452, "4.2.2", "Mailbox full")
	tr := sender(t, s, nil)

	cases := []struct {
		name, to, text string
		code           string // failure code; "" for a Temporary
		providerCode   string
	}{
		{"unknown mailbox", "nobody@example.org", "hi", smtp.CodeInvalidRecipient, "550 5.1.1"},
		{"unknown, in words", "old@example.org", "hi", smtp.CodeInvalidRecipient, "550"},
		{"policy", "spam@example.org", "hi", smtp.CodeRecipientRejected, "550 5.7.1"},
		{"mailbox full for now", "full@example.org", "hi", "", "452 4.2.2"},
		{"too large", "ada@example.org", strings.Repeat("The quick brown fox. ", 500), smtp.CodeTooLarge, "552 5.3.4"},
	}
	for _, c := range cases {
		m := outbound()
		m.To, m.Text = c.to, c.text
		_, err := tr.Send(context.Background(), m)
		if c.code == "" {
			var tmp *transport.Temporary
			if !errors.As(err, &tmp) || tmp.ProviderCode != c.providerCode {
				t.Errorf("%s: %v, want a temporary %s", c.name, err, c.providerCode)
			}
			continue
		}
		if f := transport.AsFailure(err); f == nil || f.Code != c.code || f.ProviderCode != c.providerCode {
			t.Errorf("%s: %#v, want %s %s", c.name, f, c.code, c.providerCode)
		}
		noLeak(t, c.name, err, "quick brown fox")
	}
	nothingSent(t, s)
}

func TestSendTemporary(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, nil)

	s.FailNext(1, 451, "Greylisted, try again later")
	_, err := tr.Send(context.Background(), outbound())
	var tmp *transport.Temporary
	if !errors.As(err, &tmp) || !strings.HasPrefix(tmp.ProviderCode, "451") || transport.AsFailure(err) != nil {
		t.Fatalf("%v, want a temporary 451", err)
	}
	if _, err := tr.Send(context.Background(), outbound()); err != nil {
		t.Fatalf("after the greylisting: %v", err)
	}

	s.Accepting(false)
	_, err = tr.Send(context.Background(), outbound())
	if !errors.As(err, &tmp) || tmp.ProviderCode != "421 4.3.2" {
		t.Fatalf("not accepting: %v, want a temporary 421 4.3.2", err)
	}
	s.Accepting(true)
	if _, err := tr.Send(context.Background(), outbound()); err != nil {
		t.Fatalf("accepting again: %v", err)
	}
	if n := len(s.Messages()); n != 2 {
		t.Errorf("the relay received %d mails, want 2", n)
	}
}

// TestSendHonoursContext: a relay that never answers holds a send no longer than Timeout or the
// caller's context; the error is tried again.
func TestSendHonoursContext(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // silent: no greeting
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	tr, err := smtp.New(smtp.Config{Host: "127.0.0.1", Port: port, Security: smtp.SecurityNone, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	_, err = tr.Send(context.Background(), outbound())
	var tmp *transport.Temporary
	if !errors.Is(err, context.DeadlineExceeded) || transport.AsFailure(err) != nil || errors.As(err, &tmp) {
		t.Errorf("timeout: %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeout took %s", d)
	}

	tr, _ = smtp.New(smtp.Config{Host: "127.0.0.1", Port: port, Security: smtp.SecurityNone})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start = time.Now()
	if _, err := tr.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel took %s", d)
	}
}

func TestSendRelayDown(t *testing.T) {
	t.Parallel()
	s := smtptest.NewServer(t, smtptest.Options{})
	tr := sender(t, s, nil)
	s.Close()
	_, err := tr.Send(context.Background(), outbound())
	var tmp *transport.Temporary
	if err == nil || transport.AsFailure(err) != nil || errors.As(err, &tmp) {
		t.Errorf("%v, want an error tried again", err)
	}
	if _, err := tr.Check(context.Background()); err == nil || errors.Is(err, smtp.ErrInvalidCredentials) {
		t.Errorf("check: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw      string
		host     string
		port     int
		security smtp.Security
		ok       bool
	}{
		{"smtp://relay.example.com", "relay.example.com", 587, smtp.SecurityStartTLS, true},
		{"smtp://relay.example.com:2525", "relay.example.com", 2525, smtp.SecurityStartTLS, true},
		{"smtp://relay.example.com:25?tls=starttls", "relay.example.com", 25, smtp.SecurityStartTLS, true},
		{"smtps://relay.example.com", "relay.example.com", 465, smtp.SecurityImplicitTLS, true},
		{"smtps://relay.example.com:4650/", "relay.example.com", 4650, smtp.SecurityImplicitTLS, true},
		{"smtp://127.0.0.1:2525?tls=none", "127.0.0.1", 2525, smtp.SecurityNone, true},
		{"smtp://localhost?tls=none", "localhost", 587, smtp.SecurityNone, true},
		{"smtp://[::1]:25?tls=none", "::1", 25, smtp.SecurityNone, true},
		{"smtp://relay.example.com?tls=none", "", 0, 0, false},
		{"smtps://127.0.0.1?tls=none", "", 0, 0, false},
		{"smtp://relay.example.com?tls=maybe", "", 0, 0, false},
		{"smtp://relay.example.com?auth=plain", "", 0, 0, false},
		{"smtp://user:pass@relay.example.com", "", 0, 0, false},
		{"https://relay.example.com", "", 0, 0, false},
		{"smtp://relay.example.com:0", "", 0, 0, false},
		{"smtp://relay.example.com:70000", "", 0, 0, false},
		{"smtp://relay.example.com/path", "", 0, 0, false},
		{"smtp://:25", "", 0, 0, false},
		{"relay.example.com:25", "", 0, 0, false},
	}
	for _, c := range cases {
		host, port, security, err := smtp.ParseURL(c.raw)
		if (err == nil) != c.ok || host != c.host || port != c.port || security != c.security {
			t.Errorf("ParseURL(%q) = %q, %d, %v, %v", c.raw, host, port, security, err)
		}
		if err != nil && strings.Contains(err.Error(), "pass") {
			t.Errorf("ParseURL(%q): the error repeats the credentials: %v", c.raw, err)
		}
	}
}

func TestNewRefusesPlainOffLoopback(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"relay.example.com", "192.0.2.10", "10.0.0.1"} {
		_, err := smtp.New(smtp.Config{Host: host, Security: smtp.SecurityNone})
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("New(%s, plain): %v, want a refusal", host, err)
		}
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := smtp.New(smtp.Config{Host: host, Security: smtp.SecurityNone}); err != nil {
			t.Errorf("New(%s, plain): %v", host, err)
		}
	}
	if _, err := smtp.New(smtp.Config{Security: smtp.SecurityStartTLS}); err == nil {
		t.Error("New without a host")
	}
}

// BenchmarkSendSigned is one mail built, DKIM-signed (RSA-2048) and handed to the loopback
// relay over its own connection, as each send does.
func BenchmarkSendSigned(b *testing.B) {
	s := smtptest.NewServer(b, smtptest.Options{Username: "u", Password: "p"})
	tr := sender(b, s, func(c *smtp.Config) { c.Username, c.Password = "u", "p" })
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	m := outbound()
	m.HTMLBody = "<p>The quick brown fox jumps over the lazy dog.</p>"
	m.DKIM = &transport.DKIMKey{Domain: "example.com", Selector: "sb1", Signer: key}
	b.ResetTimer()
	for b.Loop() {
		if _, err := tr.Send(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mails/s")
}
