package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/emersion/go-msgauth/dkim"
	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
)

// broadcaster is a project that sends email broadcasts through the relay peer, with its live
// and test keys, and an installation receiving mail at inboundHost on smtpAddr.
type broadcaster struct {
	in         *instance
	relay      *smtptest.Server
	dns        *dnstest.Server
	live, test string
	smtpAddr   string
	project    string
}

func newBroadcaster(t *testing.T) *broadcaster {
	t.Helper()
	srv := newDNS(t)
	srv.Set("example.com", dns.TypeMX, "10 mx.example.com.")
	relay, err := smtptest.New(smtptest.Options{Username: "switchboard", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	b := &broadcaster{relay: relay, dns: srv}
	b.in = start(t, fastSandbox, withDNS(srv), withSMTP(t, &b.smtpAddr))
	b.project = newProject(t, b.in, verified)
	relayProvider(t, b.in, b.project, relay, "s3cret")
	b.live, b.test = newKey(t, b.in, b.project, apikey.Live), newKey(t, b.in, b.project, apikey.Test)
	verifiedDomain(t, b.in, srv, b.live, "acme.test", false)
	if c := providerReady(t, b.in, b.project, "relay"); c.Status != metav1.ConditionTrue {
		t.Fatalf("Provider Ready = %+v", c)
	}
	if r := b.in.post("/v1/senders", b.live, `{"name":"News","emailAddress":"news@acme.test","setAsDefault":true}`); r.status != 201 {
		t.Fatalf("sender = %d %v", r.status, r.body)
	}
	return b
}

// broadcast sends an email broadcast with key (extra: more fields of its body) to recipients
// and waits for it to complete.
func (b *broadcaster) broadcast(t *testing.T, key, extra string, recipients ...string) string {
	t.Helper()
	r := b.in.post("/v1/broadcasts", key, `{"channel":"email","name":"News","emailSubject":"News","text":"Hello"`+extra+`}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	id := r.body["broadcast"].(map[string]any)["id"].(string)
	var contacts []string
	for _, rcpt := range recipients {
		contacts = append(contacts, `{"recipient":"`+rcpt+`"}`)
	}
	if r := b.in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[`+strings.Join(contacts, ",")+`]}`); r.status != 200 {
		t.Fatalf("add = %d %v", r.status, r.body)
	}
	if r := b.in.post("/v1/broadcasts/"+id+"/send", key, `{}`); r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		return b.in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["status"] == "completed"
	})
	return id
}

// recipients are a broadcast's recipients by address.
func (b *broadcaster) recipients(id, key string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, it := range b.in.get("/v1/broadcasts/"+id+"/contacts", key).body["items"].([]any) {
		c := it.(map[string]any)
		out[c["recipient"].(string)] = c
	}
	return out
}

// headersOf are the header fields a broadcast's message to address shows (email.headers).
func (b *broadcaster) headersOf(t *testing.T, id, key, address string) map[string]any {
	t.Helper()
	var msgID string
	waitFor(t, func() bool {
		msgID, _ = b.recipients(id, key)[address]["messageId"].(string)
		return msgID != ""
	})
	m := b.in.get("/v1/messages/"+msgID, key).body["message"].(map[string]any)
	h, _ := m["email"].(map[string]any)["headers"].(map[string]any)
	return h
}

func (b *broadcaster) suppressions(key string) []any {
	return b.in.get("/v1/email-suppressions", key).body["items"].([]any)
}

// unsubscribeField is List-Unsubscribe with the one-click link, then the mailto: address.
var unsubscribeField = regexp.MustCompile(`^<(http://127\.0\.0\.1:[0-9]+/unsubscribe/([a-z2-7]+))>, <mailto:(unsubscribe-([a-z2-7]+)@` +
	regexp.QuoteMeta(inboundHost) + `)>$`)

// As a mailbox provider posts: no cookies, no redirects followed.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func postOneClick(t *testing.T, link, body string) (int, string) {
	t.Helper()
	resp, err := noRedirects.Post(link, "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func getPage(t *testing.T, link, language string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, link, nil)
	req.Header.Set("Accept-Language", language)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// forge changes one character of a token, keeping it in the token's alphabet.
func forge(token string) string {
	b := []byte(token)
	if b[len(b)/2] == 'a' {
		b[len(b)/2] = 'b'
	} else {
		b[len(b)/2] = 'a'
	}
	return string(b)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestOneClickUnsubscribe: a live email broadcast through the relay peer carries
// List-Unsubscribe (the one-click link and the mailto: address) and List-Unsubscribe-Post
// inside a DKIM signature that verifies, and its messages show the same fields; a GET of the
// link only shows the page, a POST as mailbox providers send it suppresses the recipient, and
// the next broadcast fails them as suppressed. Bad requests change nothing.
func TestOneClickUnsubscribe(t *testing.T) {
	b := newBroadcaster(t)
	in := b.in
	first := b.broadcast(t, b.live, "", "ada@example.com", "bob@example.com")
	got, err := b.relay.Wait(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	resolver := dnsresolve.New(b.dns.Addr(), time.Second)
	for _, m := range got {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		list, post := msg.Header.Get("List-Unsubscribe"), msg.Header.Get("List-Unsubscribe-Post")
		parts := unsubscribeField.FindStringSubmatch(list)
		if post != "List-Unsubscribe=One-Click" || parts == nil || parts[2] != parts[4] || len(parts[3]) > 64+len("@"+inboundHost) {
			t.Fatalf("mail to %v: List-Unsubscribe %q, List-Unsubscribe-Post %q", m.To, list, post)
		}
		links[m.To[0]] = parts[1]
		// The address is not in the link (scanners and proxies log links).
		if strings.Contains(list, "example.com") {
			t.Errorf("List-Unsubscribe names the address: %q", list)
		}
		// Both fields are signed, and the signature verifies as a receiver checks it.
		verifs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{LookupTXT: resolver.DKIMLookupTXT})
		if err != nil || len(verifs) != 1 || verifs[0].Err != nil || verifs[0].Domain != "acme.test" {
			t.Fatalf("DKIM: %+v, %v", verifs, err)
		}
		signed := strings.ToLower(msg.Header.Get("DKIM-Signature"))
		signed = strings.Join(strings.Fields(signed), "")
		if !strings.Contains(signed, "list-unsubscribe:") || !strings.Contains(signed, "list-unsubscribe-post") {
			t.Fatalf("the signature does not cover the unsubscribe fields: %s", signed)
		}
		// The message shows the fields its mail carried.
		if h := b.headersOf(t, first, b.live, m.To[0]); h["List-Unsubscribe"] != list || h["List-Unsubscribe-Post"] != post {
			t.Errorf("message to %v shows %v", m.To, h)
		}
	}
	if links["ada@example.com"] == "" || links["ada@example.com"] == links["bob@example.com"] {
		t.Fatalf("links = %v", links)
	}
	ada := links["ada@example.com"]

	// The page: a confirmation whose button posts the one-click form, in the reader's language;
	// showing it unsubscribes no one.
	if status, page := getPage(t, ada, "en-GB,en;q=0.9"); status != 200 || !strings.Contains(page, `method="post"`) ||
		!strings.Contains(page, `name="List-Unsubscribe" value="One-Click"`) || !strings.Contains(page, "Unsubscribe from these emails?") {
		t.Fatalf("GET = %d %s", status, page)
	}
	if status, page := getPage(t, ada, "es-MX,es;q=0.8"); status != 200 || !strings.Contains(page, "¿Dejar de recibir estos correos?") {
		t.Fatalf("GET in Spanish = %d %s", status, page)
	}

	// Bad requests: 4xx, and nothing recorded.
	u, _ := url.Parse(ada)
	token := strings.TrimPrefix(u.Path, "/unsubscribe/")
	for _, bad := range []struct {
		name, link, body string
		want             int
	}{
		{"forged", in.url + "/unsubscribe/" + forge(token), "List-Unsubscribe=One-Click", 404},
		{"truncated", ada[:len(ada)-5], "List-Unsubscribe=One-Click", 404},
		{"extended", ada + "aa", "List-Unsubscribe=One-Click", 404},
		{"no body", ada, "", 400},
		{"another body", ada, "List-Unsubscribe=Yes", 400},
		{"huge body", ada, "List-Unsubscribe=One-Click&pad=" + strings.Repeat("x", 64<<10), 413},
		{"no token", in.url + "/unsubscribe/", "List-Unsubscribe=One-Click", 404},
		{"a path below the token", ada + "/x", "List-Unsubscribe=One-Click", 404},
	} {
		if status, _ := postOneClick(t, bad.link, bad.body); status != bad.want {
			t.Errorf("%s: POST = %d, want %d", bad.name, status, bad.want)
		}
	}
	if status, _ := getPage(t, in.url+"/unsubscribe/"+forge(token), ""); status != 404 {
		t.Errorf("GET of a forged link = %d", status)
	}
	if s := b.suppressions(b.live); len(s) != 0 {
		t.Fatalf("suppressions after GETs and bad POSTs = %v", s)
	}

	// The one-click POST: 200, the address suppressed with the broadcast it came from; again,
	// nothing changes. Upper case reads as the same token.
	for _, link := range []string{ada, in.url + "/unsubscribe/" + strings.ToUpper(token)} {
		if status, _ := postOneClick(t, link, "List-Unsubscribe=One-Click"); status != 200 {
			t.Fatalf("POST = %d", status)
		}
	}
	s := b.suppressions(b.live)
	if len(s) != 1 {
		t.Fatalf("suppressions = %v", s)
	}
	entry := s[0].(map[string]any)
	if entry["email"] != "ada@example.com" || entry["reason"] != "unsubscribe" || entry["broadcastId"] != first {
		t.Fatalf("suppression = %v", entry)
	}
	if n := in.count(`SELECT count(*) FROM email_suppressions`); n != 1 {
		t.Fatalf("%d suppressions in all", n)
	}

	// The next broadcast fails Ada as suppressed and still reaches Bob.
	next := b.broadcast(t, b.live, "", "ada@example.com", "bob@example.com")
	waitFor(t, func() bool { return len(b.relay.Messages()) == 3 })
	waitFor(t, func() bool { return b.recipients(next, b.live)["ada@example.com"]["status"] == "failed" })
	if c := b.recipients(next, b.live)["ada@example.com"]; c["errorCode"] != "EMAIL_RECIPIENT_SUPPRESSED" {
		t.Errorf("Ada in the next broadcast = %v", c)
	}
	if last := b.relay.Messages()[2]; last.To[0] != "bob@example.com" {
		t.Errorf("the next broadcast reached %v", last.To)
	}
	if c := in.get("/v1/broadcasts/"+next, b.live).body["broadcast"].(map[string]any); c["failedCount"] != 1.0 {
		t.Errorf("the next broadcast's counts = %v", c)
	}

	// A single send carries no unsubscribe fields.
	r := in.post("/v1/messages", b.live, `{"to":"bob@example.com","subject":"Your invoice","text":"Hello"}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return len(b.relay.Messages()) == 4 })
	single, err := mail.ReadMessage(bytes.NewReader(b.relay.Messages()[3].Data))
	if err != nil {
		t.Fatal(err)
	}
	if single.Header.Get("Subject") != "Your invoice" || single.Header.Get("List-Unsubscribe") != "" || single.Header.Get("List-Unsubscribe-Post") != "" {
		t.Errorf("a single send carries unsubscribe fields: %v", single.Header)
	}
	if h := r.body["message"].(map[string]any)["email"].(map[string]any)["headers"]; h != nil {
		t.Errorf("a single send shows headers %v", h)
	}
}

// TestUnsubscribeByMail: a mail to a broadcast email's mailto: address, at the installation's
// inbound listener, suppresses its recipient, once however often it comes; addresses without
// a valid token are refused during the SMTP dialogue, and nothing is recorded for them.
func TestUnsubscribeByMail(t *testing.T) {
	b := newBroadcaster(t)
	id := b.broadcast(t, b.live, "", "cy@example.com", "dee@example.com")
	waitFor(t, func() bool { return len(b.relay.Messages()) == 2 })
	mailto := map[string]string{}
	for _, m := range b.relay.Messages() {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		parts := unsubscribeField.FindStringSubmatch(msg.Header.Get("List-Unsubscribe"))
		if parts == nil {
			t.Fatalf("List-Unsubscribe = %q", msg.Header.Get("List-Unsubscribe"))
		}
		mailto[m.To[0]] = parts[3]
	}
	const request = "From: cy@example.com\nTo: %s\nSubject: unsubscribe\n\nunsubscribe\n"
	send := func(to string) error {
		return deliverMail(t, b.smtpAddr, "cy@example.com", []string{to}, strings.Replace(request, "%s", to, 1))
	}
	token := strings.TrimSuffix(strings.TrimPrefix(mailto["cy@example.com"], "unsubscribe-"), "@"+inboundHost)
	for _, bad := range []string{
		"unsubscribe-@" + inboundHost,
		"unsubscribe-" + forge(token) + "@" + inboundHost,
		"unsubscribe-" + token[:len(token)-2] + "@" + inboundHost,
		"news@" + inboundHost,
		"postmaster@" + inboundHost,
	} {
		if err := send(bad); smtpCode(err) != 550 {
			t.Errorf("mail to %s: %v, want a 550 refusal", bad, err)
		}
	}
	if s := b.suppressions(b.live); len(s) != 0 {
		t.Fatalf("suppressions after refused mail = %v", s)
	}
	// Relays may change the local part's case.
	for _, to := range []string{mailto["cy@example.com"], strings.ToUpper(mailto["cy@example.com"])} {
		if err := send(to); err != nil {
			t.Fatalf("mail to %s: %v", to, err)
		}
	}
	s := b.suppressions(b.live)
	if len(s) != 1 || s[0].(map[string]any)["email"] != "cy@example.com" || s[0].(map[string]any)["broadcastId"] != id ||
		s[0].(map[string]any)["reason"] != "unsubscribe" {
		t.Fatalf("suppressions = %v", s)
	}
	// The mail is a request, not a message: no inbound message was stored.
	if n := b.in.count(`SELECT count(*) FROM messages WHERE direction = 'inbound'`); n != 0 {
		t.Errorf("%d inbound messages stored", n)
	}
	next := b.broadcast(t, b.live, "", "cy@example.com", "dee@example.com")
	waitFor(t, func() bool { return b.recipients(next, b.live)["cy@example.com"]["status"] == "failed" })
	if c := b.recipients(next, b.live)["cy@example.com"]; c["errorCode"] != "EMAIL_RECIPIENT_SUPPRESSED" {
		t.Errorf("Cy in the next broadcast = %v", c)
	}
}

// TestSandboxBroadcastUnsubscribe: a test key's broadcast never reaches the relay, but its
// messages show the fields they would have carried, and the link works on the test data:
// the test list gets the entry, the live list does not, and the next test broadcast skips
// the address. A link of one project suppresses only in that project.
func TestSandboxBroadcastUnsubscribe(t *testing.T) {
	b := newBroadcaster(t)
	id := b.broadcast(t, b.test, "", "eve@example.com")
	h := b.headersOf(t, id, b.test, "eve@example.com")
	list, _ := h["List-Unsubscribe"].(string)
	parts := unsubscribeField.FindStringSubmatch(list)
	if parts == nil || h["List-Unsubscribe-Post"] != "List-Unsubscribe=One-Click" {
		t.Fatalf("the sandbox message shows %v", h)
	}
	if n := len(b.relay.Messages()); n != 0 {
		t.Fatalf("a test broadcast reached the relay: %d mails", n)
	}
	// Another project's live broadcast to the same address, through the sandbox of its test key.
	other := newProject(t, b.in, verified)
	otherKey := newKey(t, b.in, other, apikey.Test)
	verifiedDomain(t, b.in, b.dns, newKey(t, b.in, other, apikey.Live), "other.test", false)
	if r := b.in.post("/v1/senders", otherKey, `{"name":"Other","emailAddress":"hi@other.test","setAsDefault":true}`); r.status != 201 {
		t.Fatalf("sender = %d %v", r.status, r.body)
	}
	otherID := b.broadcast(t, otherKey, "", "eve@example.com")
	otherParts := unsubscribeField.FindStringSubmatch(b.headersOf(t, otherID, otherKey, "eve@example.com")["List-Unsubscribe"].(string))
	if otherParts == nil || otherParts[2] == parts[2] {
		t.Fatalf("the other project's link = %v", otherParts)
	}

	if status, _ := postOneClick(t, parts[1], "List-Unsubscribe=One-Click"); status != 200 {
		t.Fatalf("POST = %d", status)
	}
	if s := b.suppressions(b.test); len(s) != 1 || s[0].(map[string]any)["email"] != "eve@example.com" || s[0].(map[string]any)["broadcastId"] != id {
		t.Fatalf("test suppressions = %v", s)
	}
	if s := b.suppressions(b.live); len(s) != 0 {
		t.Fatalf("live suppressions = %v", s)
	}
	if s := b.suppressions(otherKey); len(s) != 0 {
		t.Fatalf("the other project's suppressions = %v", s)
	}
	next := b.broadcast(t, b.test, "", "eve@example.com")
	waitFor(t, func() bool { return b.recipients(next, b.test)["eve@example.com"]["status"] == "failed" })
	if c := b.recipients(next, b.test)["eve@example.com"]; c["errorCode"] != "EMAIL_RECIPIENT_SUPPRESSED" {
		t.Errorf("Eve in the next test broadcast = %v", c)
	}
}

// TestBroadcastOwnUnsubscribeURL: a broadcast naming its own link carries it, filled for each
// recipient, with Switchboard's mailto: address beside it; a link that is not https, or given
// for another channel, is refused and nothing is created.
func TestBroadcastOwnUnsubscribeURL(t *testing.T) {
	b := newBroadcaster(t)
	own := `,"unsubscribeUrl":"https://acme.example/unsubscribe?e={email}&b={broadcastId}"`
	id := b.broadcast(t, b.live, own, "fay+news@example.com")
	waitFor(t, func() bool { return len(b.relay.Messages()) == 1 })
	msg, err := mail.ReadMessage(bytes.NewReader(b.relay.Messages()[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	want := "<https://acme.example/unsubscribe?e=fay%2Bnews%40example.com&b=" + id + ">, <mailto:unsubscribe-"
	if list := msg.Header.Get("List-Unsubscribe"); !strings.HasPrefix(list, want) || msg.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe = %q, want %q…", list, want)
	}
	if v := b.in.get("/v1/broadcasts/"+id, b.live).body["broadcast"].(map[string]any)["unsubscribeUrl"]; v != "https://acme.example/unsubscribe?e={email}&b={broadcastId}" {
		t.Errorf("unsubscribeUrl = %v", v)
	}

	before := b.in.count(`SELECT count(*) FROM broadcasts`)
	for _, bad := range []struct{ body, field string }{
		{`{"channel":"email","name":"N","emailSubject":"N","text":"x","unsubscribeUrl":"http://acme.example/u"}`, "unsubscribeUrl"},
		{`{"channel":"email","name":"N","emailSubject":"N","text":"x","unsubscribeUrl":"/u"}`, "unsubscribeUrl"},
		{`{"channel":"email","name":"N","emailSubject":"N","text":"x","unsubscribeUrl":"https://acme.example/u?a=1,2"}`, "unsubscribeUrl"},
		{`{"channel":"sms","name":"N","text":"x","unsubscribeUrl":"https://acme.example/u"}`, "unsubscribeUrl"},
		{`{"channel":"email","name":"N","emailSubject":"N","text":"x","unsubscribeUrl":7}`, ""},
	} {
		r := b.in.post("/v1/broadcasts", b.live, bad.body)
		if r.status != 400 || (bad.field != "" && !strings.Contains(strings.ToLower(toJSON(r.body)), strings.ToLower(bad.field))) {
			t.Errorf("%s: %d %v", bad.body, r.status, r.body)
		}
	}
	r := b.in.post("/v2/campaigns", b.live, `{"channel":"email","name":"N","from":"news@acme.test","emailSubject":"N","text":"x","unsubscribeUrl":"ftp://x"}`)
	if r.status != 400 || !strings.Contains(toJSON(r.body), "unsubscribeUrl") {
		t.Errorf("v2 = %d %v", r.status, r.body)
	}
	if after := b.in.count(`SELECT count(*) FROM broadcasts`); after != before {
		t.Errorf("refused requests made %d broadcasts", after-before)
	}
}

// TestUnsubscribePageInChromium: Debian's Chromium opens a broadcast email's link, sees the
// confirmation in its language (which unsubscribes no one), presses the button, and sees the
// address unsubscribed; a forged link shows why it does not work.
func TestUnsubscribePageInChromium(t *testing.T) {
	b := newBroadcaster(t)
	id := b.broadcast(t, b.test, "", "gus@example.com")
	parts := unsubscribeField.FindStringSubmatch(b.headersOf(t, id, b.test, "gus@example.com")["List-Unsubscribe"].(string))
	if parts == nil {
		t.Fatal("no List-Unsubscribe")
	}
	link := parts[1]

	es := browser(t, "es-ES")
	if err := chromedp.Do(es, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	waitPageState(t, es, "confirm")
	heading, err := chromedp.Run(es, chromedp.Text(chromedp.CSS("h1")))
	if err != nil {
		t.Fatal(err)
	}
	button, err := chromedp.Run(es, chromedp.Text(chromedp.CSS("#unsubscribe")))
	if err != nil {
		t.Fatal(err)
	}
	if heading != "¿Dejar de recibir estos correos?" || button != "Cancelar la suscripción" {
		t.Errorf("the page shows %q with button %q", heading, button)
	}
	if s := b.suppressions(b.test); len(s) != 0 {
		t.Fatalf("opening the page unsubscribed: %v", s)
	}
	if err := chromedp.Do(es, chromedp.Click(chromedp.CSS("#unsubscribe"))); err != nil {
		t.Fatal(err)
	}
	waitPageState(t, es, "done")
	if heading, err := chromedp.Run(es, chromedp.Text(chromedp.CSS("h1"))); err != nil || heading != "Tu suscripción está cancelada" {
		t.Errorf("after the button: %q, %v", heading, err)
	}
	if s := b.suppressions(b.test); len(s) != 1 || s[0].(map[string]any)["email"] != "gus@example.com" || s[0].(map[string]any)["reason"] != "unsubscribe" {
		t.Fatalf("suppressions = %v", s)
	}

	en := browser(t, "en-US")
	u, _ := url.Parse(link)
	if err := chromedp.Do(en, chromedp.Navigate(b.in.url+"/unsubscribe/"+forge(strings.TrimPrefix(u.Path, "/unsubscribe/")))); err != nil {
		t.Fatal(err)
	}
	waitPageState(t, en, "invalid")
	if heading, err := chromedp.Run(en, chromedp.Text(chromedp.CSS("h1"))); err != nil || heading != "This unsubscribe link is not valid" {
		t.Errorf("a forged link shows %q, %v", heading, err)
	}
}
