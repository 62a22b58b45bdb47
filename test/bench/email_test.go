package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// emailRecipients is the size of the email broadcast: the 100,000, or
// SWITCHBOARD_BENCH_EMAIL_RECIPIENTS (a multiple of 1,000) for a quicker run.
func emailRecipients(b *testing.B) int {
	n := 100_000
	if v := os.Getenv("SWITCHBOARD_BENCH_EMAIL_RECIPIENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 || n%1000 != 0 {
			b.Fatalf("SWITCHBOARD_BENCH_EMAIL_RECIPIENTS=%q: a multiple of 1,000 is needed", v)
		}
	}
	return n
}

// emailVerifyEvery: one mail in this many has its DKIM signatures verified by the peer (every
// mail is checked for carrying one).
const emailVerifyEvery = 50

// emailDomain holds the bench's sending domains, one a run named after its project: the layouts'
// runs share the DNS server, and each domain has keys of its own. The recipients are at
// emailInbox, whose MX the pre-flight finds on the bench's DNS server.
const (
	emailDomain = "bench.test"
	emailInbox  = "inbox.test"
)

// emailFigures are a live email broadcast's times from send: to every recipient accepted and to
// every mail final (sent: the relay took it, which is final for SMTP without a delivery
// notification), and what the SMTP peer saw.
type emailFigures struct {
	recipients      int
	accepted, final time.Duration
	exact           bool
	counters        string
	received        int64 // mails the peer took
	unsigned        int64 // of them without a DKIM-Signature
	sampled         int64 // mails whose signatures the peer verified (one in emailVerifyEvery)
	verified        int64 // of them, those whose every signature verified
	badSignatures   []string
	connections     int // SMTP connections the relay saw
}

// emailDNS is the bench's DNS server, which every process asks (SWITCHBOARD_DNS_SERVER): the
// email domain's records and the recipients' MX.
func emailDNS(b *testing.B) *dnstest.Server {
	srv, err := dnstest.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	srv.Set(emailInbox, dns.TypeMX, "10 mx."+emailInbox+".")
	b.Setenv("SWITCHBOARD_DNS_SERVER", srv.Addr())
	return srv
}

// runEmail sends a live email broadcast through an smtp Provider on the SMTP peer: the
// project's domain verified on dnsSrv with its generated DKIM key, a sender on it, a live key.
// atSend, when set, is called once the broadcast is sent (to profile the processes).
func runEmail(b *testing.B, c *cluster.Cluster, dnsSrv *dnstest.Server, apiURL, project string, atSend func()) emailFigures {
	ctx := context.Background()
	f := emailFigures{recipients: emailRecipients(b)}
	sending := project + "." + emailDomain
	resolver := dnsresolve.New(dnsSrv.Addr(), time.Second)
	var received, unsigned, verified, sampled atomic.Int64
	var badMu sync.Mutex
	var bad []string
	relay := smtptest.NewServer(b, smtptest.Options{Username: "switchboard", Password: "relay-secret", Forget: true,
		Received: func(m smtptest.Message) {
			n := received.Add(1)
			if !bytes.Contains(m.Data, []byte("\r\nDKIM-Signature:")) && !bytes.HasPrefix(m.Data, []byte("DKIM-Signature:")) {
				unsigned.Add(1)
				return
			}
			if n%emailVerifyEvery != 1 {
				return
			}
			sampled.Add(1)
			verifs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{LookupTXT: resolver.DKIMLookupTXT})
			ok := err == nil && len(verifs) > 0
			for _, v := range verifs {
				ok = ok && v.Err == nil && v.Domain == sending
			}
			if ok {
				verified.Add(1)
				return
			}
			badMu.Lock()
			if len(bad) < 3 {
				bad = append(bad, fmt.Sprintf("%+v %v", verifs, err))
			}
			badMu.Unlock()
		}})

	// The project: paid (no monthly email cap), an agreed email ceiling above the run, a balance.
	c.Project(project, "")
	var p v1alpha1.Project
	if err := c.K8s.Get(ctx, client.ObjectKey{Namespace: project, Name: "project"}, &p); err != nil {
		b.Fatal(err)
	}
	emails := int64(10_000_000)
	p.Spec.Plan = v1alpha1.PlanPaid
	if p.Spec.DailyLimits == nil {
		p.Spec.DailyLimits = &v1alpha1.DailyLimits{}
	}
	p.Spec.DailyLimits.Email = &emails
	if err := c.K8s.Update(ctx, &p); err != nil {
		b.Fatal(err)
	}
	if _, err := billing.Credit(ctx, c.Pool, billing.Account{Project: project}, 1_000_000_000, "bench", time.Now()); err != nil {
		b.Fatal(err)
	}
	key, _, err := apikey.NewService(c.Pool).Create(ctx, project, "bench", apikey.Live, nil)
	if err != nil {
		b.Fatal(err)
	}
	call := caller(b, apiURL, key)

	// The relay as the project's smtp Provider, as kubectl apply would make it.
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "relay", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"username": "switchboard", "password": "relay-secret"}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "relay"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderSMTP, BaseURL: relay.URL(), Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "relay"}}},
	} {
		if err := c.K8s.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	waitUntil(b, "the smtp Provider is Ready", func() bool {
		var p v1alpha1.Provider
		return c.K8s.Get(ctx, client.ObjectKey{Namespace: project, Name: "relay"}, &p) == nil && p.IsReady()
	})

	// The domain: added, its required records published, verified.
	domain := call("POST", "/v2/email-domains", `{"domain":"`+sending+`"}`)["domain"].(map[string]any)
	for _, r := range domain["dnsRecords"].([]any) {
		rec := r.(map[string]any)
		if rec["required"] != true {
			continue
		}
		if rec["type"] == "MX" {
			dnsSrv.Add(rec["name"].(string), dns.TypeMX, fmt.Sprintf("%v %s.", rec["priority"], rec["value"]))
		} else {
			dnsSrv.Add(rec["name"].(string), dns.TypeTXT, rec["value"].(string))
		}
	}
	if st := call("POST", "/v2/email-domains/"+domain["id"].(string)+"/verify", "")["domain"].(map[string]any)["status"]; st != "verified" {
		b.Fatalf("the email domain is %v, not verified", st)
	}
	sender := call("POST", "/v1/senders", `{"name":"News","emailAddress":"news@`+sending+`","emailFromName":"Bench News"}`)["id"].(string)
	waitUntil(b, "the sender can send email", func() bool {
		var s v1alpha1.Sender
		return c.K8s.Get(ctx, client.ObjectKey{Namespace: project, Name: sender}, &s) == nil &&
			strings.Contains(fmt.Sprint(s.Status.Channels), string(v1alpha1.ChannelEmail))
	})

	id := call("POST", "/v1/broadcasts", `{"channel":"email","name":"Email benchmark","senderId":"`+sender+`","emailSubject":"The benchmark",`+
		`"text":"Hi {{name}},\n\nthe benchmark says hello, signed and sealed.\n\nBench News"}`)["broadcast"].(map[string]any)["id"].(string)
	addRecipients(b, call, id, f.recipients, func(n int) string { return fmt.Sprintf("r%06d@%s", n, emailInbox) })

	began := time.Now()
	call("POST", "/v1/broadcasts/"+id+"/send", `{}`)
	if atSend != nil {
		atSend()
	}
	for f.final == 0 {
		if time.Since(began) > 15*time.Minute {
			b.Fatalf("email broadcast not final after 15 minutes")
		}
		var pending, queued int
		var status string
		if err := c.Pool.QueryRow(ctx, `SELECT pending_count, queued_count, status FROM broadcasts WHERE id = $1`, id).Scan(&pending, &queued, &status); err != nil {
			b.Fatal(err)
		}
		if status != "pending_review" && status != "approved" {
			if pending == 0 && f.accepted == 0 {
				f.accepted = time.Since(began)
			}
			if pending == 0 && queued == 0 && status == "completed" {
				f.final = time.Since(began)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.exact, f.counters = broadcastExact(b, c, id, f.recipients)
	f.received, f.unsigned, f.sampled, f.verified = received.Load(), unsigned.Load(), sampled.Load(), verified.Load()
	f.connections = relay.Connections()
	badMu.Lock()
	f.badSignatures = append([]string(nil), bad...)
	badMu.Unlock()
	if f.sampled == 0 {
		f.badSignatures = append(f.badSignatures, "no mail was sampled")
	}
	return f
}

// ok: every recipient's mail reached the peer once, signed, every sample verified, the
// counters exact.
func (f emailFigures) ok() bool {
	return f.exact && f.received == int64(f.recipients) && f.unsigned == 0 && len(f.badSignatures) == 0
}

func (f emailFigures) rows(ratio func(float64) string, met func(bool) string) string {
	if f.final == 0 {
		return ""
	}
	var s strings.Builder
	n := float64(f.recipients)
	fmt.Fprintf(&s, "| live email broadcast of %d (SMTP peer, DKIM RSA-2048): send → all accepted | %.1f s (%.0f/s) | %s | (measured) | |\n",
		f.recipients, f.accepted.Seconds(), n/f.accepted.Seconds(), ratio(n/f.accepted.Seconds()))
	fmt.Fprintf(&s, "| live email broadcast of %d: send → all sent, each mail once, signed, counters exact | %.1f s (%.0f mails/s) | %s | ≤ 90 s, exact | %s |\n",
		f.recipients, f.final.Seconds(), n/f.final.Seconds(), ratio(n/f.final.Seconds()), met(f.final <= 90*time.Second && f.ok()))
	fmt.Fprintf(&s, "| live email broadcast: what the peer saw | %d mails, %d unsigned, %d of %d sampled verified, over %d SMTP connections | | | |\n",
		f.received, f.unsigned, f.verified, f.sampled, f.connections)
	if !f.exact {
		fmt.Fprintf(&s, "\nEmail broadcast counters NOT exact: %s\n", f.counters)
	}
	for _, bad := range f.badSignatures {
		fmt.Fprintf(&s, "\nEmail DKIM NOT verified: %s\n", bad)
	}
	return s.String()
}

// waitUntil waits up to two minutes for cond.
func waitUntil(b *testing.B, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("%s: not within 2 minutes", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
