package app_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/switchboard-io/switchboard/internal/apikey"
)

func TestSuppressionListAndPreflight(t *testing.T) {
	srv := newDNS(t)
	srv.Set("example.com", dns.TypeMX, "10 mx.example.com.")
	in := start(t, fastSandbox, withDNS(srv))
	acme, key := sendingProject(t, in, nil, apikey.Test)

	// Bad input changes nothing.
	for _, body := range []string{`{}`, `{"email":"nope"}`, `{"email":"a@example.com","reason":"hard_bounce"}`,
		`{"email":"a@example.com","detail":"` + strings.Repeat("d", 1001) + `"}`} {
		if r := in.post("/v1/email-suppressions", key, body); r.status != 400 || fieldErrors(r) == nil {
			t.Errorf("add %s = %d %v", body, r.status, r.body)
		}
	}
	if r := in.get("/v1/email-suppressions?reason=bogus", key); r.status != 400 {
		t.Errorf("list with a bad reason = %d", r.status)
	}
	if r := in.get("/v1/email-suppressions", key); r.status != 200 || len(r.body["items"].([]any)) != 0 {
		t.Fatalf("list = %d %v", r.status, r.body)
	}

	// An address put on the list by hand: a send to it fails at pre-flight, never reaching the sandbox.
	r := in.post("/v1/email-suppressions", key, `{"email":"Ada@Example.com","reason":"manual","detail":"asked by phone"}`)
	if r.status != 201 || r.body["suppression"].(map[string]any)["email"] != "ada@example.com" {
		t.Fatalf("add = %d %v", r.status, r.body)
	}
	r = in.post("/v1/messages", key, `{"to":"ada@example.com","subject":"Hi","text":"Hello"}`)
	if r.status != 200 && r.status != 201 && r.status != 202 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	m := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed")
	if m["errorCode"] != "EMAIL_RECIPIENT_SUPPRESSED" {
		t.Fatalf("message = %v", m)
	}

	// Introspection sees it too, with the advisory signals.
	r = in.post("/v1/introspect/email", key, `{"emails":["ada@example.com","info@example.com","x@mailinator.com","nope"]}`)
	if r.status != 200 {
		t.Fatalf("introspect = %d %v", r.status, r.body)
	}
	var verdicts []string
	for _, res := range r.body["results"].([]any) {
		res := res.(map[string]any)
		verdicts = append(verdicts, fmt.Sprint(res["verdict"], res["reasons"]))
	}
	want := "undeliverable[suppressed_manual] risky[role_address] undeliverable[domain_not_found disposable_domain] undeliverable[invalid_syntax]"
	if strings.Join(verdicts, " ") != want {
		t.Fatalf("verdicts %v, want %s", verdicts, want)
	}
	if s := r.body["summary"].(map[string]any); s["total"] != 4.0 || s["undeliverable"] != 3.0 || s["risky"] != 1.0 || s["deliverable"] != 0.0 {
		t.Fatalf("summary = %v", s)
	}
	for _, body := range []string{`{}`, `{"emails":[]}`, `{"email":"a@example.com","emails":["b@example.com"]}`,
		`{"emails":[` + strings.Repeat(`"a@example.com",`, 100) + `"a@example.com"]}`} {
		if r := in.post("/v1/introspect/email", key, body); r.status != 400 {
			t.Errorf("introspect %s = %d", body[:min(len(body), 60)], r.status)
		}
	}

	// Live keys keep a list of their own.
	live := newKey(t, in, acme, apikey.Live)
	if r := in.get("/v1/email-suppressions/ada@example.com", live); r.status != 404 {
		t.Fatalf("the live list holds a test entry: %d", r.status)
	}

	// Removed: mail goes again.
	if r := in.do("DELETE", "/v2/email-suppressions/"+url.PathEscape("ADA@example.com"), key, nil); r.status != 204 {
		t.Fatalf("remove = %d %v", r.status, r.body)
	}
	if r := in.do("DELETE", "/v1/email-suppressions/ada@example.com", key, nil); r.status != 404 {
		t.Fatalf("remove twice = %d", r.status)
	}
	r = in.post("/v1/messages", key, `{"to":"ada@example.com","subject":"Hi","text":"Hello"}`)
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "delivered")
}
