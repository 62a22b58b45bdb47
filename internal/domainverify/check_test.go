//go:debug rsa1024min=0

package domainverify

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/domainverify/domainverifytest"
)

func testKey(t *testing.T) (pemKey []byte, key any) {
	t.Helper()
	pemKey, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ParseKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	return pemKey, signer
}

func TestParseKeyRefusesWhatCannotSign(t *testing.T) {
	small, _ := rsa.GenerateKey(rand.Reader, 512)
	smallPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)})
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKCS8PrivateKey(edKey)
	edPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: edDER})
	cases := map[string]struct {
		data []byte
		want string // "" accepts
	}{
		"not PEM":          {[]byte("hello"), "not PEM-encoded"},
		"a certificate":    {pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}), "CERTIFICATE"},
		"garbage in PEM":   {pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("garbage")}), "cannot be read"},
		"RSA of 512 bits":  {smallPEM, "at least 1024"},
		"Ed25519 (PKCS#8)": {edPEM, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKey(c.data)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *SetupError
			if !errors.As(err, &se) || !strings.Contains(se.Reason, c.want) {
				t.Fatalf("got %v, want a SetupError saying %q", err, c.want)
			}
		})
	}
}

func TestRecords(t *testing.T) {
	_, key := testKey(t)
	signer, _ := ParseKey(mustPEM(t, key))
	cfg := Config{InboundHost: "mx.switchboard.test", SPFInclude: "relay.test"}

	plain, err := Records(v1alpha1.EmailDomainSpec{Domain: "acme.test"}, "sb1", signer, "switchboard-verification=t", cfg)
	if err != nil {
		t.Fatal(err)
	}
	required := map[v1alpha1.RecordPurpose]bool{}
	for _, r := range plain {
		required[r.Purpose] = r.Required
	}
	if !required[v1alpha1.PurposeDKIM] || !required[v1alpha1.PurposeOwnership] || required[v1alpha1.PurposeSPF] || required[v1alpha1.PurposeDMARC] ||
		required[v1alpha1.PurposeMailFrom] || required[v1alpha1.PurposeInbound] {
		t.Fatalf("without enhanced records only DKIM and the ownership record are required: %+v", plain)
	}
	if plain[0].Name != "sb1._domainkey.acme.test" || !strings.HasPrefix(plain[0].Value, "v=DKIM1; k=rsa; p=MII") {
		t.Fatalf("DKIM record: %+v", plain[0])
	}
	if o := plain[1]; o.Purpose != v1alpha1.PurposeOwnership || o.Name != "_switchboard.acme.test" || o.Type != "TXT" || o.Value != "switchboard-verification=t" {
		t.Fatalf("ownership record: %+v", o)
	}

	enhanced, err := Records(v1alpha1.EmailDomainSpec{Domain: "acme.test", EnhancedRecords: true, Receiving: true}, "sb1", signer, "switchboard-verification=t", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[v1alpha1.RecordPurpose]string{
		v1alpha1.PurposeMailFrom: "bounce.acme.test MX mx.switchboard.test",
		v1alpha1.PurposeSPF:      "bounce.acme.test TXT v=spf1 include:relay.test ~all",
		v1alpha1.PurposeDMARC:    "_dmarc.acme.test TXT v=DMARC1; p=none;",
		v1alpha1.PurposeInbound:  "acme.test MX mx.switchboard.test",
	}
	for _, r := range enhanced {
		if w, ok := want[r.Purpose]; ok && (r.Name+" "+r.Type+" "+r.Value != w || !r.Required) {
			t.Errorf("%s: got %s %s %s required=%v, want %s required", r.Purpose, r.Name, r.Type, r.Value, r.Required, w)
		}
	}

	long := strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + "." + strings.Repeat("d", 60) + ".test"
	for name, c := range map[string]struct {
		spec v1alpha1.EmailDomainSpec
		cfg  Config
		want string
	}{
		"DKIM name too long":                {v1alpha1.EmailDomainSpec{Domain: long}, cfg, "longer than DNS allows"},
		"enhanced without an inbound host":  {v1alpha1.EmailDomainSpec{Domain: "acme.test", EnhancedRecords: true}, Config{}, "--email-inbound-host"},
		"receiving without an inbound host": {v1alpha1.EmailDomainSpec{Domain: "acme.test", Receiving: true}, Config{}, "--email-inbound-host"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Records(c.spec, "sb1", signer, "switchboard-verification=t", c.cfg)
			var se *SetupError
			if !errors.As(err, &se) || !strings.Contains(se.Reason, c.want) {
				t.Fatalf("got %v, want a SetupError saying %q", err, c.want)
			}
		})
	}
}

func mustPEM(t *testing.T, key any) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func TestCheckAgainstDNS(t *testing.T) {
	ctx := context.Background()
	srv, err := dnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r := dnsresolve.New(srv.Addr(), 300*time.Millisecond)
	_, key := testKey(t)
	signer, _ := ParseKey(mustPEM(t, key))
	records, err := Records(v1alpha1.EmailDomainSpec{Domain: "acme.test", EnhancedRecords: true},
		"sb1", signer, "switchboard-verification=t", Config{InboundHost: "mx.switchboard.test", SPFInclude: "relay.test"})
	if err != nil {
		t.Fatal(err)
	}
	byPurpose := func(recs []v1alpha1.DNSRecord, p v1alpha1.RecordPurpose) v1alpha1.DNSRecord {
		for _, r := range recs {
			if r.Purpose == p {
				return r
			}
		}
		t.Fatalf("no %s record", p)
		return v1alpha1.DNSRecord{}
	}

	// Nothing published: pending within the window, failed after it.
	got, err := Check(ctx, r, records, true)
	if err != nil {
		t.Fatal(err)
	}
	if s := State(got, Unproven, true, false); s != v1alpha1.DomainPending {
		t.Fatalf("state %s, want pending", s)
	}
	got, _ = Check(ctx, r, records, false)
	if s := State(got, Unproven, false, false); s != v1alpha1.DomainFailed {
		t.Fatalf("state %s, want failed", s)
	}

	// DKIM with other spacing, SPF with the owner's own includes and a strict ending, any DMARC
	// policy: all count. The MAIL FROM MX is missing: partially verified after the window.
	dkim := byPurpose(records, v1alpha1.PurposeDKIM)
	spaced := strings.Replace(dkim.Value, "p=", "p = ", 1)
	srv.Set(dkim.Name, dns.TypeTXT, "v=spf1 -all", spaced)
	srv.Set("bounce.acme.test", dns.TypeTXT, "v=spf1 include:_spf.google.com include:relay.test -all")
	srv.Set("_dmarc.acme.test", dns.TypeTXT, "v=DMARC1; p=reject; rua=mailto:d@acme.test")
	srv.Set("bounce.acme.test", dns.TypeMX, "10 mx.elsewhere.test.")
	got, err = Check(ctx, r, records, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []v1alpha1.RecordPurpose{v1alpha1.PurposeDKIM, v1alpha1.PurposeSPF, v1alpha1.PurposeDMARC} {
		if rec := byPurpose(got, p); rec.State != v1alpha1.RecordVerified {
			t.Errorf("%s: %s, want verified", p, rec.State)
		}
	}
	mailFrom := byPurpose(got, v1alpha1.PurposeMailFrom)
	if mailFrom.State != v1alpha1.RecordFailed || len(mailFrom.Found) != 1 || mailFrom.Found[0] != "10 mx.elsewhere.test" {
		t.Fatalf("MAIL FROM: %+v, want failed with what DNS holds", mailFrom)
	}
	if s := State(got, Unproven, false, false); s != v1alpha1.DomainPartiallyVerified {
		t.Fatalf("state %s, want partially_verified", s)
	}

	// An SPF record without the relay's include, or a DKIM record of another key, does not count.
	srv.Set("bounce.acme.test", dns.TypeTXT, "v=spf1 include:_spf.google.com ~all")
	srv.Set(dkim.Name, dns.TypeTXT, "v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAother")
	got, _ = Check(ctx, r, records, true)
	if byPurpose(got, v1alpha1.PurposeSPF).State != v1alpha1.RecordPending || byPurpose(got, v1alpha1.PurposeDKIM).State != v1alpha1.RecordPending {
		t.Fatalf("mismatched records count: %+v", got)
	}

	// Everything as asked: verified.
	srv.RemoveAll("bounce.acme.test")
	srv.RemoveAll(dkim.Name)
	domainverifytest.Publish(srv, records...)
	got, err = Check(ctx, r, records, true)
	if err != nil {
		t.Fatal(err)
	}
	if rec := byPurpose(got, v1alpha1.PurposeOwnership); rec.State != v1alpha1.RecordVerified {
		t.Fatalf("ownership record: %+v", rec)
	}
	if s := State(got, Held, true, false); s != v1alpha1.DomainVerified {
		t.Fatalf("state %s, want verified: %+v", s, got)
	}
	// Every record published, and another project holds the domain: not verified, and waiting
	// within the window does not make it pending.
	if s := State(got, HeldElsewhere, true, false); s != v1alpha1.DomainPartiallyVerified {
		t.Fatalf("held elsewhere: state %s, want partially_verified", s)
	}

	// DNS failing for one name: ErrUnavailable, and that record keeps its state.
	srv.Fail("_dmarc.acme.test", dns.RcodeServerFailure)
	again, err := Check(ctx, r, got, true)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if rec := byPurpose(again, v1alpha1.PurposeDMARC); rec.State != v1alpha1.RecordVerified {
		t.Fatalf("a record DNS did not answer for changed: %+v", rec)
	}
	fresh, _ := Check(ctx, r, records, true)
	if rec := byPurpose(fresh, v1alpha1.PurposeDMARC); rec.State != v1alpha1.RecordTemporaryFailure {
		t.Fatalf("a never-checked record DNS did not answer for: %+v", rec)
	}
}

func TestStateOnceVerified(t *testing.T) {
	recs := []v1alpha1.DNSRecord{
		{Purpose: v1alpha1.PurposeDKIM, Required: true, State: v1alpha1.RecordPending},
		{Purpose: v1alpha1.PurposeInbound, Required: true, State: v1alpha1.RecordPending},
	}
	// Within the window, a domain verified before that loses its DKIM record fails at once.
	if s := State(recs, Held, true, true); s != v1alpha1.DomainFailed {
		t.Fatalf("state %s, want failed", s)
	}
	// The inbound MX does not decide the domain's state.
	recs[0].State = v1alpha1.RecordVerified
	if s := State(recs, Held, true, false); s != v1alpha1.DomainVerified {
		t.Fatalf("state %s, want verified", s)
	}
}

func TestOwnershipValueIsTheProjects(t *testing.T) {
	t.Parallel()
	key := []byte("an installation key of 32 bytes!")
	a := OwnershipValue(key, "acme", "acme.test")
	if !strings.HasPrefix(a, "switchboard-verification=") || len(a) != len("switchboard-verification=")+32 {
		t.Fatalf("value %q", a)
	}
	if OwnershipValue(key, "acme", "acme.test") != a {
		t.Fatal("the value of one project and domain changes")
	}
	for name, other := range map[string]string{
		"another project":      OwnershipValue(key, "mallory", "acme.test"),
		"another domain":       OwnershipValue(key, "acme", "acme.example"),
		"another installation": OwnershipValue([]byte("another installation's key......"), "acme", "acme.test"),
		"a shifted separator":  OwnershipValue(key, "acme.", "test"),
	} {
		if other == a {
			t.Errorf("%s has the same value", name)
		}
	}
}

func TestOwnershipDecidesTheState(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	recs := func(ownership v1alpha1.RecordState) []v1alpha1.DNSRecord {
		return []v1alpha1.DNSRecord{
			{Purpose: v1alpha1.PurposeDKIM, Required: true, State: v1alpha1.RecordVerified},
			{Purpose: v1alpha1.PurposeOwnership, Required: true, State: ownership},
		}
	}
	grace := &metav1.Time{Time: now.Add(time.Hour)}
	cases := []struct {
		name   string
		st     v1alpha1.EmailDomainStatus
		within bool
		hold   Hold
		state  v1alpha1.EmailDomainState
	}{
		{"no ownership record, in the window", v1alpha1.EmailDomainStatus{Records: recs(v1alpha1.RecordPending)}, true, Unproven, v1alpha1.DomainPending},
		{"no ownership record, after it", v1alpha1.EmailDomainStatus{Records: recs(v1alpha1.RecordFailed)}, false, Unproven, v1alpha1.DomainPartiallyVerified},
		{"published and held", v1alpha1.EmailDomainStatus{Records: recs(v1alpha1.RecordVerified), Held: true}, true, Held, v1alpha1.DomainVerified},
		{"published, held elsewhere", v1alpha1.EmailDomainStatus{Records: recs(v1alpha1.RecordVerified)}, true, HeldElsewhere, v1alpha1.DomainPartiallyVerified},
		{"grace, held", v1alpha1.EmailDomainStatus{Records: recs(v1alpha1.RecordFailed), Held: true, OwnershipGraceUntil: grace}, false, Held, v1alpha1.DomainVerified},
		{"grace, held elsewhere", v1alpha1.EmailDomainStatus{Records: recs(v1alpha1.RecordFailed), OwnershipGraceUntil: grace}, false, HeldElsewhere, v1alpha1.DomainPartiallyVerified},
		{"grace over", v1alpha1.EmailDomainStatus{Records: recs(v1alpha1.RecordFailed), OwnershipGraceUntil: &metav1.Time{Time: now}}, false, Unproven, v1alpha1.DomainPartiallyVerified},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := c.st
			if h := HoldOf(&st, now); h != c.hold {
				t.Fatalf("hold %v, want %v", h, c.hold)
			}
			if s := State(st.Records, c.hold, c.within, false); s != c.state {
				t.Fatalf("state %s, want %s", s, c.state)
			}
			st.State = c.state
			Conditions(&st, "acme.test", 1, now)
			cond := meta.FindStatusCondition(st.Conditions, ConditionOwnership)
			switch c.hold {
			case HeldElsewhere:
				// The reason names no other project: nothing of another tenant shows.
				if cond.Reason != ReasonHeldElsewhere || !strings.Contains(cond.Message, "another project") {
					t.Fatalf("condition %+v", cond)
				}
				if ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); ready.Status != metav1.ConditionFalse {
					t.Fatalf("ready %+v", ready)
				}
				if v := View(&v1alpha1.EmailDomain{Status: st}); v.StatusReason == nil || *v.StatusReason != cond.Message {
					t.Fatalf("the API does not say why: %+v", v)
				}
			case Held:
				if c.st.OwnershipGraceUntil != nil && (cond.Reason != ReasonOwnershipGrace || !strings.Contains(cond.Message, grace.UTC().Format(time.RFC3339))) {
					t.Fatalf("condition %+v", cond)
				}
			}
		})
	}
}

func TestGraceStartsOnlyForVerifiedDomains(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	legacy := []v1alpha1.DNSRecord{{Purpose: v1alpha1.PurposeDKIM, Required: true, State: v1alpha1.RecordVerified},
		{Purpose: v1alpha1.PurposeInbound, Required: true, State: v1alpha1.RecordVerified}}
	for name, c := range map[string]struct {
		previous v1alpha1.EmailDomainStatus
		grace    bool
	}{
		"verified before ownership records": {v1alpha1.EmailDomainStatus{State: v1alpha1.DomainVerified, Records: legacy}, true},
		// Receiving on the shared MX alone, never verified: the hole being closed gets no grace.
		"receiving, never verified": {v1alpha1.EmailDomainStatus{State: v1alpha1.DomainFailed, Records: legacy}, false},
		"new":                       {v1alpha1.EmailDomainStatus{}, false},
		"with an ownership record": {v1alpha1.EmailDomainStatus{State: v1alpha1.DomainVerified,
			Records: append(legacy, v1alpha1.DNSRecord{Purpose: v1alpha1.PurposeOwnership, Required: true})}, false},
	} {
		st := c.previous.DeepCopy()
		startGrace(&c.previous, st, now)
		if (st.OwnershipGraceUntil != nil) != c.grace {
			t.Errorf("%s: grace %v, want %v", name, st.OwnershipGraceUntil, c.grace)
		}
		if c.grace && !st.OwnershipGraceUntil.Equal(&metav1.Time{Time: now.Add(OwnershipGrace)}) {
			t.Errorf("%s: grace until %v", name, st.OwnershipGraceUntil)
		}
	}
	// Its end is checked when it comes, not up to six hours later.
	st := &v1alpha1.EmailDomainStatus{State: v1alpha1.DomainVerified, OwnershipGraceUntil: &metav1.Time{Time: now.Add(time.Hour)}}
	if next := NextCheck(st, now, false); !next.Equal(now.Add(time.Hour)) {
		t.Errorf("next check %v, want at the end of the grace period", next)
	}
}

func TestNextCheckBacksOff(t *testing.T) {
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	st := &v1alpha1.EmailDomainStatus{State: v1alpha1.DomainPending, VerificationStartedAt: &metav1.Time{Time: start}}
	cases := []struct {
		after, want time.Duration
	}{
		{0, time.Minute},
		{20 * time.Minute, 5 * time.Minute},
		{10 * time.Hour, time.Hour},
		{Window + time.Minute, 6 * time.Hour},
	}
	for _, c := range cases {
		now := start.Add(c.after)
		if got := NextCheck(st, now, false).Sub(now); got != c.want {
			t.Errorf("%v after the start: next in %v, want %v", c.after, got, c.want)
		}
	}
	st.State = v1alpha1.DomainVerified
	if got := NextCheck(st, start, false).Sub(start); got != 6*time.Hour {
		t.Errorf("verified: next in %v, want 6h", got)
	}
	if got := NextCheck(st, start, true).Sub(start); got != time.Minute {
		t.Errorf("DNS unavailable: next in %v, want 1m", got)
	}
}

func TestReturnPath(t *testing.T) {
	rp := ReturnPath("msg_AbC123", "acme.test")
	if rp != "b-msg_AbC123@bounce.acme.test" {
		t.Fatalf("ReturnPath = %q", rp)
	}
	id, domain, ok := ParseReturnPath("b-msg_AbC123@BOUNCE.Acme.test")
	if !ok || id != "msg_AbC123" || domain != "acme.test" {
		t.Fatalf("ParseReturnPath = %q %q %v", id, domain, ok)
	}
	for _, not := range []string{"support@acme.test", "b-@bounce.acme.test", "x-msg_1@bounce.acme.test", "b-msg_1@acme.test", "b-msg_1@bounce.", "nothing"} {
		if _, _, ok := ParseReturnPath(not); ok {
			t.Errorf("%q read as a return path", not)
		}
	}
}
