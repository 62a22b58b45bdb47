package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// TestEmailDomainOwnershipAcrossProjects: two projects add one domain. The installation's MX is
// shared, so it proves nothing: each project is asked for an ownership record of its own, the
// domain verifies and receives for one project at a time, and mail for it never reaches another
// project's catch-all.
func TestEmailDomainOwnershipAcrossProjects(t *testing.T) {
	srv := newDNS(t)
	var listener string
	in := start(t, withDNS(srv), withSMTP(t, &listener))
	ctx := context.Background()
	const domain = "contested.test"
	owner := newProject(t, in, v1alpha1.ProjectSpec{})
	ownerKey := newKey(t, in, owner, apikey.Live)
	other := newProject(t, in, v1alpha1.ProjectSpec{})
	otherKey := newKey(t, in, other, apikey.Live)

	add := func(key string) map[string]any {
		t.Helper()
		r := in.post("/v2/email-domains", key, `{"domain":"`+domain+`","receivingEnabled":true}`)
		if r.status != 201 {
			t.Fatalf("add %s = %d %v", domain, r.status, r.body)
		}
		return r.body["domain"].(map[string]any)
	}
	record := func(d map[string]any, purpose string) map[string]any {
		t.Helper()
		for _, r := range d["dnsRecords"].([]any) {
			if rec := r.(map[string]any); rec["purpose"] == purpose {
				return rec
			}
		}
		t.Fatalf("no %s record in %v", purpose, d)
		return nil
	}
	verify := func(key, id, version string) (map[string]any, string) {
		t.Helper()
		r := in.post("/"+version+"/email-domains/"+id+"/verify", key, "")
		if r.status != 200 {
			t.Fatalf("verify %s = %d %v", id, r.status, r.body)
		}
		return r.body["domain"].(map[string]any), string(r.raw)
	}
	inbound := func(project string) int {
		return in.count(`SELECT count(*) FROM messages WHERE project = $1 AND direction = 'inbound'`, project)
	}
	mail := func(to string) error {
		return deliverMail(t, listener, "eve@example.com", []string{to}, "From: eve@example.com\nTo: "+to+"\nSubject: Reset your password\n\nA code\n")
	}

	a, b := add(ownerKey), add(otherKey)
	ownerID, otherID := a["id"].(string), b["id"].(string)

	// Each project is asked for an ownership record of its own, in the shape of the others.
	ao, bo := record(a, "ownership"), record(b, "ownership")
	if ao["name"] != "_switchboard."+domain || ao["type"] != "TXT" || ao["required"] != true || ao["status"] != "pending" ||
		!strings.HasPrefix(ao["value"].(string), "switchboard-verification=") {
		t.Fatalf("ownership record = %v", ao)
	}
	if ao["value"] == bo["value"] || bo["name"] != ao["name"] {
		t.Fatalf("the projects' ownership records: %v and %v", ao, bo)
	}

	// The owner publishes its records and the installation's MX. The other project's DKIM key
	// is published too (a domain's owner may let a project sign for it): neither the shared MX
	// nor a DKIM record makes the domain the other project's.
	publish(srv, a, true)
	bd := record(b, "dkim")
	srv.Add(bd["name"].(string), dns.TypeTXT, bd["value"].(string))
	if d, _ := verify(ownerKey, ownerID, "v2"); d["status"] != "verified" || record(d, "ownership")["status"] != "verified" {
		t.Fatalf("the owner's domain = %v", d)
	}
	d, _ := verify(otherKey, otherID, "v2")
	if d["status"] != "pending" || d["dkimStatus"] != "verified" || record(d, "ownership")["status"] != "pending" || record(d, "inbound")["status"] != "verified" {
		t.Fatalf("the other project's domain = %v", d)
	}

	// The owner receives at support@; the other project cannot put a sender on the domain through
	// the API, and makes one with kubectl: a catch-all on the sandbox transport, which needs no
	// receiving domain of its own to take mail.
	r := in.post("/v1/senders", ownerKey, `{"name":"Support","emailAddress":"support@`+domain+`","emailReceivingEnabled":true}`)
	if r.status != 201 || r.body["emailReceivingEnabled"] != true {
		t.Fatalf("the owner's sender = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/senders", otherKey, `{"name":"Catch","emailAddress":"catch@`+domain+`","emailReceivingEnabled":true}`); r.status != 400 {
		t.Fatalf("a sender on a domain another project holds = %d %v", r.status, r.body)
	}
	thief := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "catch"},
		Spec: v1alpha1.SenderSpec{DisplayName: "Catch", Transport: v1alpha1.TransportSandbox,
			Email: &v1alpha1.EmailSettings{Address: "catch@" + domain, ReceivingEnabled: true, CatchAllEnabled: true}}}
	if err := in.k8s.Create(ctx, thief); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		var s v1alpha1.Sender
		return in.k8s.Get(ctx, client.ObjectKeyFromObject(thief), &s) == nil
	})

	// Mail only the other project's catch-all would take, and mail to its sender's own address:
	// refused at RCPT, stored nowhere. The owner's mail reaches the owner only.
	for _, to := range []string{"nobody@" + domain, "catch@" + domain} {
		if err := mail(to); smtpCode(err) != 550 {
			t.Fatalf("mail to %s: %v, want 550", to, err)
		}
	}
	if err := mail("support@" + domain); err != nil {
		t.Fatalf("mail to the owner: %v", err)
	}
	waitFor(t, func() bool { return inbound(owner) == 1 })
	if n := inbound(other); n != 0 {
		t.Fatalf("the other project stored %d inbound mails", n)
	}

	// Even with its own ownership record published (by a domain owner who published both), the
	// other project does not verify while the owner holds the domain; its status says why and
	// names no project.
	srv.Add(bo["name"].(string), dns.TypeTXT, bo["value"].(string))
	for _, version := range []string{"v1", "v2"} {
		d, raw := verify(otherKey, otherID, version)
		reason, _ := d["statusReason"].(string)
		if d["status"] != "partially_verified" || record(d, "ownership")["status"] != "verified" || !strings.Contains(reason, "another project") {
			t.Fatalf("%s: the other project's domain = %v", version, d)
		}
		if strings.Contains(raw, owner) {
			t.Fatalf("%s: the answer names the owner: %s", version, raw)
		}
	}
	if err := mail("nobody@" + domain); smtpCode(err) != 550 {
		t.Fatalf("mail to nobody@ with both records published: %v, want 550", err)
	}
	if n := inbound(other); n != 0 {
		t.Fatalf("the other project stored %d inbound mails", n)
	}

	// The owner deletes its domain with kubectl (nothing lets go of it but the check of the next
	// project that proves it): the other project takes it at its next check, and its catch-all
	// receives.
	var ownerDomain v1alpha1.EmailDomain
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: owner, Name: ownerID}, &ownerDomain); err != nil {
		t.Fatal(err)
	}
	if err := in.k8s.Delete(ctx, &ownerDomain); err != nil {
		t.Fatal(err)
	}
	// envtest runs no garbage collector: its DKIM Secret goes as a cluster's would take it.
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: ownerID + "-dkim"}}
	if err := in.k8s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return in.get("/v1/email-domains/"+ownerID, ownerKey).status == 404 })
	if d, _ := verify(otherKey, otherID, "v2"); d["status"] != "verified" || d["statusReason"] != nil {
		t.Fatalf("the other project's domain once the owner's is gone = %v", d)
	}
	waitFor(t, func() bool { return mail("nobody@"+domain) == nil })
	waitFor(t, func() bool { return inbound(other) == 1 })

	// The first owner adds the domain again and publishes its new key, its ownership record
	// still there: now it is the one another project holds.
	a = add(ownerKey)
	if record(a, "ownership")["value"] != ao["value"] {
		t.Fatalf("the ownership record of a domain made again changed: %v, was %v", record(a, "ownership"), ao)
	}
	ad := record(a, "dkim")
	srv.Add(ad["name"].(string), dns.TypeTXT, ad["value"].(string))
	if d, _ := verify(ownerKey, a["id"].(string), "v2"); d["status"] != "partially_verified" || d["statusReason"] == nil {
		t.Fatalf("the first owner's domain again = %v", d)
	}

	// The holder's ownership record removed: its next check lets go, and the domain receives
	// for no project until one proves it again; then the first owner takes it back.
	srv.Set(bo["name"].(string), dns.TypeTXT, ao["value"].(string))
	if d, _ := verify(otherKey, otherID, "v2"); d["status"] != "partially_verified" || record(d, "ownership")["status"] != "failed" || d["statusReason"] != nil {
		t.Fatalf("the holder without its record = %v", d)
	}
	waitFor(t, func() bool { return smtpCode(mail("nobody@"+domain)) == 550 })
	if d, _ := verify(ownerKey, a["id"].(string), "v2"); d["status"] != "verified" {
		t.Fatalf("the first owner's domain once the other let go = %v", d)
	}
	waitFor(t, func() bool { return mail("support@"+domain) == nil })
	waitFor(t, func() bool { return inbound(owner) == 2 })
	if err := mail("nobody@" + domain); smtpCode(err) != 550 {
		t.Fatalf("mail to nobody@ at the first owner again: %v, want 550", err)
	}
	if n := inbound(other); n != 1 {
		t.Fatalf("the other project has %d inbound mails, want the 1 it received while it held the domain", n)
	}
}
