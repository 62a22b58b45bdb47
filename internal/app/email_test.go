package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/domainverify/domainverifytest"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
)

// smtpProject is a project whose default email Provider is the relay peer (with its
// credentials), with acme.test verified on srv, and a live key.
func smtpProject(t *testing.T, in *instance, relay *smtptest.Server, srv *dnstest.Server, password string) (string, string) {
	t.Helper()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	relayProvider(t, in, acme, relay, password)
	key := newKey(t, in, acme, apikey.Live)
	verifiedDomain(t, in, srv, key, "acme.test", false)
	return acme, key
}

// relayProvider makes the relay peer the project's default email Provider, "relay", logging in
// as switchboard with password.
func relayProvider(t *testing.T, in *instance, project string, relay *smtptest.Server, password string) {
	t.Helper()
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "relay", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		StringData: map[string]string{"username": "switchboard", "password": password}}
	provider := &v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "relay"},
		Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderSMTP, BaseURL: relay.URL(), Default: true,
			SecretRef: &v1alpha1.ProviderSecretRef{Name: "relay"}}}
	for _, o := range []client.Object{creds, provider} {
		if err := in.k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func providerReady(t *testing.T, in *instance, namespace, name string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	waitFor(t, func() bool {
		var p v1alpha1.Provider
		if in.k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &p) != nil {
			return false
		}
		c = meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.ObservedGeneration == p.Generation && c.Reason != v1alpha1.ReasonCheckPending
	})
	return c
}

// mailWorld is a DNS server where example.com takes mail, and the relay peer that wants AUTH
// as switchboard with s3cret.
func mailWorld(t *testing.T) (*dnstest.Server, *smtptest.Server) {
	t.Helper()
	srv := newDNS(t)
	srv.Set("example.com", dns.TypeMX, "10 mx.example.com.")
	return srv, smtptest.NewServer(t, smtptest.Options{Username: "switchboard", Password: "s3cret"})
}

func TestLiveEmailThroughTheRelay(t *testing.T) {
	srv, relay := mailWorld(t)
	in := start(t, withDNS(srv))
	acme, key := smtpProject(t, in, relay, srv, "s3cret")
	if c := providerReady(t, in, acme, "relay"); c.Status != metav1.ConditionTrue {
		t.Fatalf("Provider Ready = %+v", c)
	}

	r := in.post("/v1/senders", key, `{"name":"Billing","emailAddress":"billing@acme.test","emailFromName":"Acme Billing","setAsDefault":true}`)
	if r.status != 201 {
		t.Fatalf("sender = %d %v", r.status, r.body)
	}
	r = in.post("/v1/messages", key, `{"to":"ada@example.com","subject":"Your invoice","text":"Hello Ada","htmlBody":"<p>Hello <b>Ada</b></p>","replyTo":"help@acme.test"}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	id := r.body["message"].(map[string]any)["id"].(string)
	m := waitStatus(t, in, key, id, "sent")
	got, err := relay.Wait(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	mail := got[0]
	if mail.From != "billing@acme.test" || strings.Join(mail.To, ",") != "ada@example.com" || mail.Authenticated != "switchboard" {
		t.Fatalf("envelope %s → %v as %q", mail.From, mail.To, mail.Authenticated)
	}
	data := string(mail.Data)
	for _, want := range []string{`From: "Acme Billing" <billing@acme.test>`, "Reply-To: <help@acme.test>", "Subject: Your invoice",
		"multipart/alternative", "Hello Ada", "DKIM-Signature:"} {
		if !strings.Contains(data, want) {
			t.Errorf("the mail lacks %q:\n%s", want, data)
		}
	}
	if pid, _ := m["providerMessageId"].(string); pid == "" || !strings.Contains(data, "Message-ID: <"+pid+">") {
		t.Errorf("providerMessageId %q is not the mail's Message-ID", pid)
	}

	// The signature verifies against the key published on the DNS server, as a receiver checks it.
	resolver := dnsresolve.New(srv.Addr(), time.Second)
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(mail.Data), &dkim.VerifyOptions{LookupTXT: resolver.DKIMLookupTXT})
	if err != nil || len(verifs) != 1 || verifs[0].Err != nil || verifs[0].Domain != "acme.test" {
		t.Fatalf("DKIM: %+v, %v", verifs, err)
	}

	// Pre-flight: a domain that takes no mail fails the message before the relay is asked.
	r = in.post("/v1/messages", key, `{"to":"ada@nowhere.test","subject":"Hi","text":"Hello"}`)
	if m := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed"); m["errorCode"] != "EMAIL_DOMAIN_NOT_FOUND" {
		t.Fatalf("message = %v", m)
	}
	// The relay refusing the recipient fails the message with the relay's code kept.
	relay.RejectRecipient("gone@example.com", 550, "5.1.1", "no such user")
	r = in.post("/v1/messages", key, `{"to":"gone@example.com","subject":"Hi","text":"Hello"}`)
	if m := waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "failed"); m["errorCode"] != "EMAIL_INVALID_RECIPIENT" {
		t.Fatalf("message = %v", m)
	}
	if n := len(relay.Messages()); n != 1 {
		t.Fatalf("the relay got %d mails, want 1", n)
	}

	// A sender on a domain the project has not verified (made with kubectl, which the API would
	// refuse): its live email is refused at accept, v1 400, v2 409, and nothing is stored.
	if err := in.k8s.Create(context.Background(), &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rogue"},
		Spec: v1alpha1.SenderSpec{DisplayName: "Rogue", Email: &v1alpha1.EmailSettings{Address: "x@unverified.test"}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return in.get("/v1/senders/rogue", key).status == 200 })
	before := in.count(`SELECT count(*) FROM messages WHERE project = $1`, acme)
	if r := sendAs(in, key, "rogue", `{"to":"ada@example.com","subject":"Hi","text":"Hello"}`); r.status != 400 || r.body["code"] != "email_domain_not_verified" {
		t.Fatalf("v1 send from an unverified domain = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/messages", key, `{"from":"x@unverified.test","to":"ada@example.com","subject":"Hi","text":"Hello"}`); r.status != 409 || r.body["code"] != "no_channel" {
		t.Fatalf("v2 send from an unverified domain = %d %v", r.status, r.body)
	}
	if after := in.count(`SELECT count(*) FROM messages WHERE project = $1`, acme); after != before {
		t.Fatalf("refused sends stored %d messages", after-before)
	}
}

func TestSMTPProviderRefusedCredentials(t *testing.T) {
	relay, err := smtptest.New(smtptest.Options{Username: "switchboard", Password: "right"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	in := start(t)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "relay", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		StringData: map[string]string{"username": "switchboard", "password": "wrong"}}
	provider := &v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "relay"},
		Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderSMTP, BaseURL: relay.URL(), SecretRef: &v1alpha1.ProviderSecretRef{Name: "relay"}}}
	for _, o := range []client.Object{creds, provider} {
		if err := in.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	c := providerReady(t, in, acme, "relay")
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonCredentialsRejected || strings.Contains(c.Message, "wrong") {
		t.Fatalf("Ready = %+v", c)
	}
	// An smtp Provider needs a relay.
	err = in.k8s.Create(ctx, &v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "nowhere"},
		Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderSMTP, SecretRef: &v1alpha1.ProviderSecretRef{Name: "relay"}}})
	if err == nil || !strings.Contains(err.Error(), "needs baseURL") {
		t.Fatalf("an smtp Provider without baseURL: %v", err)
	}
}

// TestLiveEmailSignedWithEd25519Too: a domain that adds an Ed25519 key (spec.dkimEd25519) signs
// with RSA alone until the key's record is published, then with both: two DKIM-Signature
// fields, each verifying against the domain's records.
func TestLiveEmailSignedWithEd25519Too(t *testing.T) {
	srv, relay := mailWorld(t)
	in := start(t, withDNS(srv))
	ctx := context.Background()
	acme, key := smtpProject(t, in, relay, srv, "s3cret")
	if r := in.post("/v1/senders", key, `{"name":"Billing","emailAddress":"billing@acme.test","setAsDefault":true}`); r.status != 201 {
		t.Fatalf("sender = %d %v", r.status, r.body)
	}
	send := func() (smtptest.Message, []*dkim.Verification) {
		t.Helper()
		r := in.post("/v1/messages", key, `{"to":"ada@example.com","subject":"Your invoice","text":"Hello Ada"}`)
		if r.status != 200 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "sent")
		got := relay.Messages()
		mail := got[len(got)-1]
		verifs, err := dkim.VerifyWithOptions(bytes.NewReader(mail.Data),
			&dkim.VerifyOptions{LookupTXT: dnsresolve.New(srv.Addr(), time.Second).DKIMLookupTXT})
		if err != nil {
			t.Fatal(err)
		}
		return mail, verifs
	}

	var list v1alpha1.EmailDomainList
	if err := in.k8s.List(ctx, &list, client.InNamespace(acme)); err != nil || len(list.Items) != 1 {
		t.Fatalf("the project's domains: %v %v", list.Items, err)
	}
	d := &list.Items[0]
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := in.k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		d.Spec.DKIMEd25519 = true
		return in.k8s.Update(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	var ed v1alpha1.DNSRecord
	waitFor(t, func() bool {
		if in.k8s.Get(ctx, client.ObjectKeyFromObject(d), d) != nil {
			return false
		}
		for _, rec := range d.Status.Records {
			if rec.Purpose == v1alpha1.PurposeDKIMEd25519 {
				ed = rec
			}
		}
		return ed.Name != ""
	})

	// Its record not published yet: RSA alone, verifying.
	if _, verifs := send(); len(verifs) != 1 || verifs[0].Err != nil {
		t.Fatalf("before the Ed25519 record: %+v", verifs)
	}

	// Published and verified: two signatures, both verifying, one of each algorithm.
	domainverifytest.Publish(srv, ed)
	if r := in.post("/v2/email-domains/"+d.Name+"/verify", key, ""); r.status != 200 {
		t.Fatalf("verify = %d %v", r.status, r.body)
	}
	var mail smtptest.Message
	var verifs []*dkim.Verification
	waitFor(t, func() bool {
		mail, verifs = send()
		return len(verifs) == 2
	})
	for _, v := range verifs {
		if v.Err != nil || v.Domain != "acme.test" {
			t.Errorf("signature of %s: %v", v.Domain, v.Err)
		}
	}
	data := string(mail.Data)
	if strings.Count(data, "DKIM-Signature:") != 2 || !strings.Contains(data, "a=rsa-sha256") || !strings.Contains(data, "a=ed25519-sha256") ||
		!strings.Contains(data, "s="+d.Status.DKIMEd25519Selector) || !strings.Contains(data, "s="+d.Status.DKIMSelector) {
		t.Errorf("the mail's signatures:\n%s", data)
	}
}
