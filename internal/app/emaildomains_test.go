package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/domainverify"
)

// inboundHost is the installation's inbound mail host in these tests.
const inboundHost = "mx.switchboard.test"

// withDNS makes the instance ask srv for DNS and receive mail at inboundHost.
func withDNS(srv *dnstest.Server) option {
	return func(c *app.Config) {
		c.DNSServer = srv.Addr()
		c.Email = domainverify.Config{InboundHost: inboundHost}
	}
}

func newDNS(t *testing.T) *dnstest.Server {
	t.Helper()
	srv, err := dnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// publish puts the records of the API's answer on srv; inbound chooses the inbound MX too.
func publish(srv *dnstest.Server, domain map[string]any, inbound bool) {
	for _, r := range domain["dnsRecords"].([]any) {
		rec := r.(map[string]any)
		if rec["purpose"] == "inbound" && !inbound || rec["purpose"] != "inbound" && rec["required"] != true {
			continue
		}
		if rec["type"] == "MX" {
			srv.Add(rec["name"].(string), dns.TypeMX, fmt.Sprintf("%v %s.", rec["priority"], rec["value"]))
		} else {
			srv.Add(rec["name"].(string), dns.TypeTXT, rec["value"].(string))
		}
	}
}

// verifiedDomain adds domain to key's project, publishes its required records on srv (the
// inbound MX too when inbound) and verifies it; it returns the domain as the API shows it.
func verifiedDomain(t *testing.T, in *instance, srv *dnstest.Server, key, domain string, inbound bool) map[string]any {
	t.Helper()
	r := in.post("/v2/email-domains", key, fmt.Sprintf(`{"domain":%q,"receivingEnabled":%v}`, domain, inbound))
	if r.status != 201 && r.status != 200 {
		t.Fatalf("add %s = %d %v", domain, r.status, r.body)
	}
	d := r.body["domain"].(map[string]any)
	publish(srv, d, inbound)
	r = in.post("/v2/email-domains/"+d["id"].(string)+"/verify", key, "")
	if r.status != 200 || r.body["domain"].(map[string]any)["status"] != "verified" {
		t.Fatalf("verify %s = %d %v", domain, r.status, r.body)
	}
	return r.body["domain"].(map[string]any)
}

func TestEmailDomainsThroughTheAPI(t *testing.T) {
	srv := newDNS(t)
	in := start(t, withDNS(srv))
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	countDomains := func() int {
		var list v1alpha1.EmailDomainList
		if err := in.k8s.List(ctx, &list, client.InNamespace(acme)); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}

	// Bad input: the spec's 400, nothing made.
	for _, body := range []string{`{}`, `{"domain":""}`, `{"domain":"not a domain"}`, `{"domain":"192.0.2.1"}`,
		`{"domain":"hello@acme.test"}`, `{"domain":"https://acme.test/"}`, `{"domain":"localhost"}`, `{"domain":"` + strings.Repeat("a", 64) + `.test"}`} {
		for _, v := range []string{"v1", "v2"} {
			r := in.post("/"+v+"/email-domains", key, body)
			if r.status != 400 || r.body["code"] != "invalid_request" || fieldErrors(r) == nil {
				t.Errorf("%s %s = %d %v", v, body, r.status, r.body)
			}
		}
	}
	if n := countDomains(); n != 0 {
		t.Fatalf("bad input made %d domains", n)
	}

	// Create: the records to publish at once, in the WIRE shape.
	r := in.post("/v2/email-domains", key, `{"domain":"Acme.TEST.","receivingEnabled":true}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	domain := r.body["domain"].(map[string]any)
	id := domain["id"].(string)
	if domain["domain"] != "acme.test" || domain["status"] != "pending" || domain["dkimStatus"] != "pending" || domain["verifiable"] != true {
		t.Fatalf("create = %v", domain)
	}
	purposes := map[string]bool{}
	for _, rec := range domain["dnsRecords"].([]any) {
		rec := rec.(map[string]any)
		purposes[fmt.Sprint(rec["purpose"], " ", rec["type"], " ", rec["required"])] = true
	}
	for _, want := range []string{"dkim TXT true", "inbound MX true", "mail_from MX false", "spf TXT false", "dmarc TXT false"} {
		if !purposes[want] {
			t.Errorf("no %s record among %v", want, purposes)
		}
	}

	// The same domain again: v2 answers it with 200, v1 with 409; nothing new either way.
	if r := in.post("/v2/email-domains", key, `{"domain":"acme.test"}`); r.status != 200 || r.body["domain"].(map[string]any)["id"] != id {
		t.Errorf("second add on v2 = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/email-domains", key, `{"domain":"acme.test"}`); r.status != 409 || r.body["code"] != "domain_already_exists" {
		t.Errorf("second add on v1 = %d %v", r.status, r.body)
	}
	if n := countDomains(); n != 1 {
		t.Fatalf("%d domains, want 1", n)
	}
	// The key is in the domain's Secret, never in an answer.
	var secret corev1.Secret
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id + "-dkim"}, &secret); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(r.raw), "PRIVATE KEY") {
		t.Fatal("an answer shows the private key")
	}

	// A sender cannot send from a domain that is not verified; the refusal changes nothing.
	if r := in.post("/v1/senders", key, `{"name":"Mail","emailAddress":"hello@acme.test"}`); r.status != 400 || fieldErrors(r) == nil {
		t.Fatalf("sender on an unverified domain = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/senders", key, `{"name":"Mail","emailAddress":"hello@elsewhere.test"}`); r.status != 400 {
		t.Fatalf("sender on an unknown domain = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/channels", key, `{"type":"email","address":"hello@acme.test"}`); r.status != 400 {
		t.Fatalf("email channel on an unverified domain = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/senders", key); len(r.body["items"].([]any)) != 0 {
		t.Fatalf("refused senders were made: %v", r.body)
	}
	if n := in.count(`SELECT count(*) FROM webhook_deliveries WHERE project = $1`, acme); n != 0 {
		t.Fatalf("%d deliveries before anything was verified", n)
	}

	// Verifying a domain of another project, or none: 404.
	other := newKey(t, in, newProject(t, in, v1alpha1.ProjectSpec{}), apikey.Live)
	for _, v := range []string{"v1", "v2"} {
		if r := in.post("/"+v+"/email-domains/"+id+"/verify", other, ""); r.status != 404 {
			t.Errorf("%s verify of another project's domain = %d %v", v, r.status, r.body)
		}
	}
	if r := in.get("/v1/email-domains/"+id, other); r.status != 404 {
		t.Errorf("another project reads the domain: %d", r.status)
	}

	// DNS not answering: v2 answers 503 verification_unavailable, v1 the domain as it stands.
	dkimName := domain["dnsRecords"].([]any)[0].(map[string]any)["name"].(string)
	srv.Fail(dkimName, dns.RcodeServerFailure)
	if r := in.post("/v2/email-domains/"+id+"/verify", key, ""); r.status != 503 || r.body["code"] != "verification_unavailable" {
		t.Fatalf("v2 verify with DNS down = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/email-domains/"+id+"/verify", key, ""); r.status != 200 || r.body["domain"].(map[string]any)["dkimStatus"] != "temporary_failure" {
		t.Fatalf("v1 verify with DNS down = %d %v", r.status, r.body)
	}
	srv.Clear(dkimName)

	// Subscribers of domain events: the v2 project webhook and a v1 sender webhook (no senderId).
	if r := in.do("PUT", "/v2/webhook", key, strings.NewReader(`{"url":"https://hooks.acme.example/v2","events":["domain.verified","domain.failed"]}`)); r.status != 200 && r.status != 201 {
		t.Fatalf("put webhook = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/senders", key, `{"name":"Ops","enableSmsOneway":true,"webhookUrl":"https://hooks.acme.example/v1","webhookEvents":["domain.verified"]}`); r.status != 201 {
		t.Fatalf("sender with a webhook = %d %v", r.status, r.body)
	}

	// Published: verify verifies, and domain.verified is announced once.
	publish(srv, domain, false)
	r = in.post("/v1/email-domains/"+id+"/verify", key, "")
	if d := r.body["domain"].(map[string]any); r.status != 200 || d["status"] != "verified" || d["dkimStatus"] != "verified" {
		t.Fatalf("verify = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/email-domains/"+id+"/verify", key, ""); r.status != 200 {
		t.Fatalf("verify again = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		return in.get("/v1/email-domains/"+id, key).body["domain"].(map[string]any)["status"] == "verified"
	})
	if n := in.count(`SELECT count(*) FROM webhook_deliveries WHERE project = $1 AND event = 'domain.verified' AND endpoint_kind = 'project_v2'`, acme); n != 1 {
		t.Fatalf("%d domain.verified deliveries to the project webhook, want 1", n)
	}
	if n := in.count(`SELECT count(*) FROM webhook_deliveries WHERE project = $1 AND event = 'domain.verified' AND endpoint_kind = 'sender'`, acme); n != 1 {
		t.Fatalf("%d domain.verified deliveries to the sender webhook, want 1", n)
	}
	if n := in.count(`SELECT count(*) FROM webhook_deliveries WHERE project = $1 AND data ? 'senderId'`, acme); n != 0 {
		t.Fatalf("a domain event carries a senderId")
	}

	// Now a sender can send from it. Receiving is asked for, but the inbound MX is not there yet.
	r = in.post("/v1/senders", key, `{"name":"Mail","emailAddress":"hello@acme.test","emailDomainId":"`+id+
		`","emailReceivingEnabled":true,"emailCatchAllEnabled":true}`)
	if r.status != 201 || r.body["emailReceivingEnabled"] != false || r.body["emailCatchAllEnabled"] != false ||
		!strings.Contains(fmt.Sprint(r.body["channels"]), "email") {
		t.Fatalf("sender = %d %v", r.status, r.body)
	}
	sender := r.body["id"].(string)
	if r := in.post("/v1/senders", key, `{"name":"Mail","emailAddress":"hi@acme.test","emailDomainId":"dom-other"}`); r.status != 400 {
		t.Fatalf("sender with another domain's id = %d %v", r.status, r.body)
	}
	publish(srv, domain, true)
	if r := in.post("/v1/email-domains/"+id+"/verify", key, ""); r.status != 200 {
		t.Fatalf("verify = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		r := in.get("/v1/senders/"+sender, key)
		return r.body["emailReceivingEnabled"] == true && r.body["emailCatchAllEnabled"] == true
	})

	// A domain a sender sends from is kept; without senders it goes, with its key.
	if r := in.do("DELETE", "/v2/email-domains/"+id, key, nil); r.status != 409 || r.body["code"] != "domain_in_use" {
		t.Fatalf("delete in use = %d %v", r.status, r.body)
	}
	if r := in.do("DELETE", "/v1/senders/"+sender, key, nil); r.status != 204 {
		t.Fatalf("delete sender = %d", r.status)
	}
	if r := in.do("DELETE", "/v1/email-domains/"+id, key, nil); r.status != 204 {
		t.Fatalf("delete = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return in.get("/v1/email-domains/"+id, key).status == 404 })
	if err := in.k8s.Get(ctx, client.ObjectKeyFromObject(&secret), &secret); !apierrors.IsNotFound(err) {
		t.Fatalf("the DKIM Secret outlived its domain: %v", err)
	}
	if r := in.get("/v2/email-domains", key); r.status != 200 || len(r.body["items"].([]any)) != 0 {
		t.Fatalf("list = %d %v", r.status, r.body)
	}
}
