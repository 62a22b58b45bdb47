package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	gosmtp "github.com/emersion/go-smtp"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// freeAddr is a loopback address nothing listens on now, out of the kernel's ephemeral range
// (see cluster.FreeAddr).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := cluster.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestEmailThroughTheBinary runs the built binary with a DNS server and an SMTP relay on
// loopback: a domain added over the API verifies once its records are published, a live email
// goes out through the relay DKIM-signed with the domain's key (checked against that DNS), and
// the reply, sent to the binary's SMTP listener, comes back as message.inbound.
func TestEmailThroughTheBinary(t *testing.T) {
	dnsServer, err := dnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dnsServer.Close)
	dnsServer.Set("example.com", dns.TypeMX, "10 mx.example.com.")
	relay := smtptest.NewServer(t, smtptest.Options{Username: "switchboard", Password: "relay-secret"})
	rcv := newReceiver(t)
	smtpAddr := freeAddr(t)
	d := startDev(t, "--dns-server", dnsServer.Addr(), "--email-inbound-host", "mx.switchboard.test", "--smtp-listen", smtpAddr)
	a := api{t: t, url: d.env["SWITCHBOARD_URL"]}
	ctx := context.Background()

	key := d.liveKey(t)

	// The relay as an smtp Provider, as kubectl apply would make it.
	k8s := d.kube(t)
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "relay", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"username": "switchboard", "password": "relay-secret"}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "relay"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderSMTP, BaseURL: relay.URL(), Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "relay"}}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the smtp Provider is Ready", func() bool {
		var p v1alpha1.Provider
		return k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "relay"}, &p) == nil && p.IsReady()
	})

	// The domain: added, its records published, verified.
	status, body := a.do(http.MethodPost, "/v2/email-domains", key, `{"domain":"acme.test","receivingEnabled":true}`)
	if status != http.StatusCreated {
		t.Fatalf("add domain = %d %v", status, body)
	}
	domain := body["domain"].(map[string]any)
	for _, r := range domain["dnsRecords"].([]any) {
		rec := r.(map[string]any)
		if rec["required"] != true {
			continue
		}
		if rec["type"] == "MX" {
			dnsServer.Add(rec["name"].(string), dns.TypeMX, fmt.Sprintf("%v %s.", rec["priority"], rec["value"]))
		} else {
			dnsServer.Add(rec["name"].(string), dns.TypeTXT, rec["value"].(string))
		}
	}
	if status, body := a.do(http.MethodPost, "/v2/email-domains/"+domain["id"].(string)+"/verify", key, ""); status != http.StatusOK ||
		body["domain"].(map[string]any)["status"] != "verified" {
		t.Fatalf("verify = %d %v", status, body)
	}

	// A sender on it that receives, with a webhook.
	status, body = a.do(http.MethodPost, "/v1/senders", key, `{"name":"Support","emailAddress":"support@acme.test","emailFromName":"Acme Support",`+
		`"emailReceivingEnabled":true,"webhookUrl":"`+rcv.URL+`/hook"}`)
	if status != http.StatusCreated || body["emailReceivingEnabled"] != true {
		t.Fatalf("sender = %d %v", status, body)
	}
	sender := body["id"].(string)

	// A live email goes out through the relay, signed with the domain's key.
	status, body = a.do(http.MethodPost, "/v1/messages", key, `{"to":"ada@example.com","subject":"Welcome","text":"Hello Ada"}`, "Service-Sender", sender)
	if status != http.StatusOK {
		t.Fatalf("send = %d %v", status, body)
	}
	sent := a.waitMessage(key, body["message"].(map[string]any)["id"].(string), "sent")
	mails, err := relay.Wait(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	resolver := dnsresolve.New(dnsServer.Addr(), time.Second)
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(mails[0].Data), &dkim.VerifyOptions{LookupTXT: resolver.DKIMLookupTXT})
	if err != nil || len(verifs) != 1 || verifs[0].Err != nil || verifs[0].Domain != "acme.test" {
		t.Fatalf("DKIM of the mail the relay got: %+v %v", verifs, err)
	}

	// Ada's reply, delivered to the binary's listener as her mail server would.
	c, err := gosmtp.Dial(smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reply := "From: Ada <ada@example.com>\r\nTo: support@acme.test\r\nSubject: Re: Welcome\r\nMessage-ID: <r1@example.com>\r\n" +
		"In-Reply-To: <" + sent["providerMessageId"].(string) + ">\r\n\r\nThank you!\r\n"
	if err := c.SendMail("ada@example.com", []string{"support@acme.test"}, strings.NewReader(reply)); err != nil {
		t.Fatalf("deliver the reply: %v", err)
	}
	waitUntil(t, "message.inbound for the reply", func() bool {
		return rcv.find("message.inbound", func(d map[string]any) bool {
			return d["channel"] == "email" && d["from"] == "ada@example.com" && d["to"] == "support@acme.test" &&
				d["subject"] == "Re: Welcome" && strings.TrimSpace(fmt.Sprint(d["text"])) == "Thank you!"
		}) != nil
	})
}
