package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
)

// TestOneClickUnsubscribe: a live email broadcast through the relay peer carries
// List-Unsubscribe and List-Unsubscribe-Post inside a DKIM signature that verifies; a GET of the
// link only shows the page, a POST as mailbox providers send it suppresses the recipient, and
// the next broadcast fails them as suppressed. Bad requests change nothing.
func TestOneClickUnsubscribe(t *testing.T) {
	srv := newDNS(t)
	srv.Set("example.com", dns.TypeMX, "10 mx.example.com.")
	relay, err := smtptest.New(smtptest.Options{Username: "switchboard", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	in := start(t, fastSandbox, withDNS(srv))
	acme := newProject(t, in, verified)
	relayProvider(t, in, acme, relay, "s3cret")
	key := newKey(t, in, acme, apikey.Live)
	verifiedDomain(t, in, srv, key, "acme.test", false)
	if c := providerReady(t, in, acme, "relay"); c.Status != metav1.ConditionTrue {
		t.Fatalf("Provider Ready = %+v", c)
	}
	if r := in.post("/v1/senders", key, `{"name":"News","emailAddress":"news@acme.test","setAsDefault":true}`); r.status != 201 {
		t.Fatalf("sender = %d %v", r.status, r.body)
	}
	broadcast := func(recipients ...string) string {
		t.Helper()
		id := in.post("/v1/broadcasts", key, `{"channel":"email","name":"News","emailSubject":"News","text":"Hello"}`).body["broadcast"].(map[string]any)["id"].(string)
		var contacts []string
		for _, r := range recipients {
			contacts = append(contacts, `{"recipient":"`+r+`"}`)
		}
		if r := in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[`+strings.Join(contacts, ",")+`]}`); r.status != 200 {
			t.Fatalf("add = %d %v", r.status, r.body)
		}
		if r := in.post("/v1/broadcasts/"+id+"/send", key, `{}`); r.status != 200 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		waitFor(t, func() bool {
			return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["status"] == "completed"
		})
		return id
	}
	recipients := func(id string) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, it := range in.get("/v1/broadcasts/"+id+"/contacts", key).body["items"].([]any) {
			c := it.(map[string]any)
			out[c["recipient"].(string)] = c
		}
		return out
	}

	first := broadcast("ada@example.com", "bob@example.com")
	got, err := relay.Wait(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	resolver := dnsresolve.New(srv.Addr(), time.Second)
	for _, m := range got {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		list, post := msg.Header.Get("List-Unsubscribe"), msg.Header.Get("List-Unsubscribe-Post")
		if post != "List-Unsubscribe=One-Click" || !strings.HasPrefix(list, "<"+in.url+"/unsubscribe/") || !strings.HasSuffix(list, ">") {
			t.Fatalf("mail to %v: List-Unsubscribe %q, List-Unsubscribe-Post %q", m.To, list, post)
		}
		links[m.To[0]] = strings.Trim(list, "<>")
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
	}
	if links["ada@example.com"] == "" || links["ada@example.com"] == links["bob@example.com"] {
		t.Fatalf("links = %v", links)
	}
	ada := links["ada@example.com"]

	// As a mailbox provider posts: no cookies, no redirects followed.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(link, body string) (int, string) {
		t.Helper()
		resp, err := client.Post(link, "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	get := func(link, language string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, link, nil)
		req.Header.Set("Accept-Language", language)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	suppressions := func() []any {
		return in.get("/v1/email-suppressions", key).body["items"].([]any)
	}

	// The page: a confirmation whose button posts the one-click form, in the reader's language;
	// showing it unsubscribes no one.
	if status, page := get(ada, "en-GB,en;q=0.9"); status != 200 || !strings.Contains(page, `method="post"`) ||
		!strings.Contains(page, `name="List-Unsubscribe" value="One-Click"`) || !strings.Contains(page, "Unsubscribe from these emails?") {
		t.Fatalf("GET = %d %s", status, page)
	}
	if status, page := get(ada, "es-MX,es;q=0.8"); status != 200 || !strings.Contains(page, "¿Dejar de recibir estos correos?") {
		t.Fatalf("GET in Spanish = %d %s", status, page)
	}

	// Bad requests: 4xx, and nothing recorded.
	u, _ := url.Parse(ada)
	token := strings.TrimPrefix(u.Path, "/unsubscribe/")
	forged := []byte(token)
	if forged[len(forged)/2] == 'A' {
		forged[len(forged)/2] = 'B'
	} else {
		forged[len(forged)/2] = 'A'
	}
	for _, bad := range []struct {
		name, link, body string
		want             int
	}{
		{"forged", in.url + "/unsubscribe/" + string(forged), "List-Unsubscribe=One-Click", 404},
		{"truncated", ada[:len(ada)-5], "List-Unsubscribe=One-Click", 404},
		{"no body", ada, "", 400},
		{"another body", ada, "List-Unsubscribe=Yes", 400},
		{"huge body", ada, "List-Unsubscribe=One-Click&pad=" + strings.Repeat("x", 64<<10), 413},
		{"no token", in.url + "/unsubscribe/", "List-Unsubscribe=One-Click", 404},
	} {
		if status, _ := post(bad.link, bad.body); status != bad.want {
			t.Errorf("%s: POST = %d, want %d", bad.name, status, bad.want)
		}
	}
	if status, _ := get(in.url+"/unsubscribe/"+string(forged), ""); status != 404 {
		t.Errorf("GET of a forged link = %d", status)
	}
	if s := suppressions(); len(s) != 0 {
		t.Fatalf("suppressions after GETs and bad POSTs = %v", s)
	}

	// The one-click POST: 200, the address suppressed with the broadcast it came from; again,
	// nothing changes.
	for range 2 {
		if status, _ := post(ada, "List-Unsubscribe=One-Click"); status != 200 {
			t.Fatalf("POST = %d", status)
		}
	}
	s := suppressions()
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
	next := broadcast("ada@example.com", "bob@example.com")
	waitFor(t, func() bool { return len(relay.Messages()) == 3 })
	waitFor(t, func() bool { return recipients(next)["ada@example.com"]["status"] == "failed" })
	if c := recipients(next)["ada@example.com"]; c["errorCode"] != "EMAIL_RECIPIENT_SUPPRESSED" {
		t.Errorf("Ada in the next broadcast = %v", c)
	}
	if last := relay.Messages()[2]; last.To[0] != "bob@example.com" {
		t.Errorf("the next broadcast reached %v", last.To)
	}

	// A single send carries no unsubscribe fields.
	r := in.post("/v1/messages", key, `{"to":"bob@example.com","subject":"Your invoice","text":"Hello"}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return len(relay.Messages()) == 4 })
	single, err := mail.ReadMessage(bytes.NewReader(relay.Messages()[3].Data))
	if err != nil {
		t.Fatal(err)
	}
	if single.Header.Get("Subject") != "Your invoice" || single.Header.Get("List-Unsubscribe") != "" || single.Header.Get("List-Unsubscribe-Post") != "" {
		t.Errorf("a single send carries unsubscribe fields: %v", single.Header)
	}
}
