package dnsresolve_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"blitiri.com.ar/go/spf"
	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-msgauth/dmarc"
	"github.com/miekg/dns"

	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
)

// The resolver is what spf.WithResolver takes, with no adapter.
var _ spf.DNSResolver = (*dnsresolve.Resolver)(nil)

// setup starts a DNS server for the test and a resolver pointed at it.
func setup(t *testing.T, timeout time.Duration) (*dnstest.Server, *dnsresolve.Resolver) {
	t.Helper()
	srv, err := dnstest.New()
	if err != nil {
		t.Fatalf("start dns server: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv, dnsresolve.New(srv.Addr(), timeout)
}

func TestLookupTXT(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	dkimKey := "v=DKIM1; k=rsa; p=" + strings.Repeat("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 10)
	srv.Set("example.com", dns.TypeTXT, "v=spf1 mx -all", "google-site-verification=abc")
	srv.Set("sel._domainkey.example.com", dns.TypeTXT, dkimKey)
	srv.Set("quoted.example.com", dns.TypeTXT, `say "hi" \ bye; é`)

	for _, c := range []struct {
		name string
		want []string
	}{
		{"example.com", []string{"v=spf1 mx -all", "google-site-verification=abc"}},
		{"EXAMPLE.com.", []string{"v=spf1 mx -all", "google-site-verification=abc"}},
		// Longer than 255 bytes: several strings on the wire, one record here.
		{"sel._domainkey.example.com", []string{dkimKey}},
		{"quoted.example.com", []string{`say "hi" \ bye; é`}},
	} {
		got, err := r.LookupTXT(t.Context(), c.name)
		if err != nil {
			t.Errorf("LookupTXT(%q): %v", c.name, err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("LookupTXT(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if len(dkimKey) <= 255 {
		t.Fatalf("the DKIM key is %d bytes: too short to be split", len(dkimKey))
	}
}

// An answer too large for UDP comes back truncated; the resolver asks again over TCP.
func TestLookupTXTRetriesTruncatedOverTCP(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	var want []string
	for i := range 12 {
		want = append(want, strings.Repeat(string(rune('a'+i)), 200))
	}
	srv.Set("big.example.com", dns.TypeTXT, want...)

	got, err := r.LookupTXT(t.Context(), "big.example.com")
	if err != nil {
		t.Fatalf("LookupTXT: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("LookupTXT returned %d records, want the %d published", len(got), len(want))
	}
	if n := srv.Queries("big.example.com"); n != 2 {
		t.Errorf("server saw %d queries, want 2 (UDP truncated, then TCP)", n)
	}
}

func TestLookupMXSortedByPreference(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	srv.Set("example.com", dns.TypeMX, "30 c.mx.example.com.", "10 a.mx.example.com.", "20 b.mx.example.com.")

	mxs, err := r.LookupMX(t.Context(), "example.com")
	if err != nil {
		t.Fatalf("LookupMX: %v", err)
	}
	var got []string
	for _, mx := range mxs {
		got = append(got, mx.Host)
	}
	want := []string{"a.mx.example.com.", "b.mx.example.com.", "c.mx.example.com."}
	if !slices.Equal(got, want) {
		t.Errorf("LookupMX hosts = %q, want %q", got, want)
	}
	if mxs[0].Pref != 10 {
		t.Errorf("first preference = %d, want 10", mxs[0].Pref)
	}
}

func TestLookupIP(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	srv.Set("both.example.com", dns.TypeA, "192.0.2.1", "192.0.2.2")
	srv.Set("both.example.com", dns.TypeAAAA, "2001:db8::1")
	srv.Set("v6.example.com", dns.TypeAAAA, "2001:db8::2")
	srv.Set("v6.example.com", dns.TypeMX, "10 mx.example.com.")

	for _, c := range []struct {
		host string
		want []string
	}{
		{"both.example.com", []string{"192.0.2.1", "192.0.2.2", "2001:db8::1"}},
		{"v6.example.com", []string{"2001:db8::2"}},
		{"198.51.100.7", []string{"198.51.100.7"}},
	} {
		addrs, err := r.LookupIP(t.Context(), c.host)
		if err != nil {
			t.Errorf("LookupIP(%q): %v", c.host, err)
			continue
		}
		var got []string
		for _, a := range addrs {
			got = append(got, a.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("LookupIP(%q) = %q, want %q", c.host, got, c.want)
		}
	}

	ipaddrs, err := r.LookupIPAddr(t.Context(), "v6.example.com")
	if err != nil || len(ipaddrs) != 1 || !ipaddrs[0].IP.Equal(net.ParseIP("2001:db8::2")) {
		t.Errorf("LookupIPAddr = %v, %v; want [2001:db8::2]", ipaddrs, err)
	}

	// MX records but no address: the name has no A/AAAA.
	if _, err := r.LookupIP(t.Context(), "mx.example.com"); !dnsresolve.IsNotFound(err) {
		t.Errorf("LookupIP of a name without records: err = %v, want not found", err)
	}
}

func TestCNAMEsAreFollowed(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	srv.Set("www.example.com", dns.TypeCNAME, "edge.example.com")
	srv.Set("edge.example.com", dns.TypeCNAME, "origin.example.net.")
	srv.Set("origin.example.net", dns.TypeA, "192.0.2.9")
	srv.Set("sel._domainkey.example.com", dns.TypeCNAME, "sel._domainkey.dkim.example.net")
	srv.Set("sel._domainkey.dkim.example.net", dns.TypeTXT, "v=DKIM1; p=abc")
	srv.Set("dangling.example.com", dns.TypeCNAME, "gone.example.net")

	addrs, err := r.LookupIP(t.Context(), "www.example.com")
	if err != nil || !slices.Equal(addrs, []netip.Addr{netip.MustParseAddr("192.0.2.9")}) {
		t.Errorf("LookupIP through two CNAMEs = %v, %v; want [192.0.2.9]", addrs, err)
	}
	txts, err := r.LookupTXT(t.Context(), "sel._domainkey.example.com")
	if err != nil || !slices.Equal(txts, []string{"v=DKIM1; p=abc"}) {
		t.Errorf("LookupTXT through a CNAME = %q, %v", txts, err)
	}

	canonical, err := r.LookupCNAME(t.Context(), "WWW.example.com")
	if err != nil || canonical != "origin.example.net." {
		t.Errorf("LookupCNAME = %q, %v; want origin.example.net.", canonical, err)
	}
	if _, err := r.LookupCNAME(t.Context(), "origin.example.net"); !dnsresolve.IsNotFound(err) {
		t.Errorf("LookupCNAME of a name that is no alias: err = %v, want not found", err)
	}
	// The alias exists, its target does not: NXDOMAIN after the CNAME.
	if _, err := r.LookupTXT(t.Context(), "dangling.example.com"); !dnsresolve.IsNotFound(err) {
		t.Errorf("LookupTXT through a dangling CNAME: err = %v, want not found", err)
	}
}

func TestLookupAddr(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	srv.Set("9.2.0.192.in-addr.arpa.", dns.TypePTR, "mail.example.com.")

	names, err := r.LookupAddr(t.Context(), "192.0.2.9")
	if err != nil || !slices.Equal(names, []string{"mail.example.com."}) {
		t.Errorf("LookupAddr = %q, %v; want [mail.example.com.]", names, err)
	}
	if _, err := r.LookupAddr(t.Context(), "not-an-ip"); !errors.Is(err, dnsresolve.ErrInvalidName) {
		t.Errorf("LookupAddr(not-an-ip): err = %v, want ErrInvalidName", err)
	}
}

// A missing record and a check that could not run are told apart, and both leave no result.
func TestErrorsTellNotFoundFromUnavailable(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	srv.Set("example.com", dns.TypeMX, "10 mx.example.com.")
	srv.Set("broken.example.com", dns.TypeTXT, "v=spf1 -all")
	srv.Fail("broken.example.com", dns.RcodeServerFailure)
	srv.Set("refused.example.com", dns.TypeTXT, "v=spf1 -all")
	srv.Fail("refused.example.com", dns.RcodeRefused)

	for _, c := range []struct {
		desc, name                  string
		notFound, unavailable, sent bool
	}{
		{"NXDOMAIN", "nowhere.example.com", true, false, true},
		{"NODATA: the name has MX, not TXT", "example.com", true, false, true},
		{"empty non-terminal", "com", true, false, true},
		{"SERVFAIL", "broken.example.com", false, true, true},
		{"REFUSED", "refused.example.com", false, true, true},
		{"not ASCII", "bücher.example", false, false, false},
		{"not a domain name", "a..b", false, false, false},
	} {
		txts, err := r.LookupTXT(t.Context(), c.name)
		if err == nil || txts != nil {
			t.Errorf("%s: LookupTXT = %q, %v; want no records and an error", c.desc, txts, err)
			continue
		}
		if got := dnsresolve.IsNotFound(err); got != c.notFound {
			t.Errorf("%s: IsNotFound(%v) = %v, want %v", c.desc, err, got, c.notFound)
		}
		if got := dnsresolve.IsUnavailable(err); got != c.unavailable {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", c.desc, err, got, c.unavailable)
		}
		if got := srv.Queries(c.name) > 0; got != c.sent {
			t.Errorf("%s: query sent = %v, want %v", c.desc, got, c.sent)
		}
	}

	// Fail lasts until Clear.
	srv.Clear("broken.example.com")
	if _, err := r.LookupTXT(t.Context(), "broken.example.com"); err != nil {
		t.Errorf("after Clear: %v", err)
	}
}

// A server that does not answer makes the lookup unavailable within two tries of the timeout.
func TestDroppedQueryTimesOut(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	srv, r := setup(t, timeout)
	srv.Set("slow.example.com", dns.TypeTXT, "v=spf1 -all")
	srv.Drop("slow.example.com", true)

	start := time.Now()
	_, err := r.LookupTXT(t.Context(), "slow.example.com")
	elapsed := time.Since(start)
	if !dnsresolve.IsUnavailable(err) || dnsresolve.IsNotFound(err) {
		t.Fatalf("LookupTXT of a dropped name: err = %v, want unavailable", err)
	}
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsTimeout {
		t.Errorf("err = %#v, want a timeout", err)
	}
	if elapsed > 2*timeout+time.Second {
		t.Errorf("lookup took %v, want about %v (one try and one retry)", elapsed, 2*timeout)
	}
	if n := srv.Queries("slow.example.com"); n != 2 {
		t.Errorf("server saw %d queries, want 2 (one retry after the timeout)", n)
	}

	srv.Drop("slow.example.com", false)
	if _, err := r.LookupTXT(t.Context(), "slow.example.com"); err != nil {
		t.Errorf("after Drop(false): %v", err)
	}
}

func TestCanceledContextIsUnavailable(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	srv.Set("example.com", dns.TypeTXT, "v=spf1 -all")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	_, err := r.LookupTXT(ctx, "example.com")
	if !dnsresolve.IsUnavailable(err) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want unavailable and context.Canceled", err)
	}
}

// spf.CheckHostWithSender evaluates records published in the test server through the resolver.
func TestSPFThroughResolver(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	srv.Set("example.com", dns.TypeTXT, "v=spf1 ip4:192.0.2.0/28 mx include:_spf.example.net -all")
	srv.Set("example.com", dns.TypeMX, "10 mx.example.com.")
	srv.Set("mx.example.com", dns.TypeA, "198.51.100.25")
	srv.Set("_spf.example.net", dns.TypeTXT, "v=spf1 ip6:2001:db8::/32 -all")
	srv.Set("soft.example.org", dns.TypeTXT, "v=spf1 ~all")
	srv.Set("broken.example.org", dns.TypeTXT, "v=spf1 -all")
	srv.Fail("broken.example.org", dns.RcodeServerFailure)

	for _, c := range []struct {
		desc, ip, sender string
		want             spf.Result
	}{
		{"ip4 range", "192.0.2.5", "news@example.com", spf.Pass},
		{"the domain's MX", "198.51.100.25", "news@example.com", spf.Pass},
		{"an include", "2001:db8::7", "news@example.com", spf.Pass},
		{"no match: -all", "203.0.113.1", "news@example.com", spf.Fail},
		{"no match: ~all", "203.0.113.1", "news@soft.example.org", spf.SoftFail},
		{"no SPF record", "203.0.113.1", "news@nowhere.example.org", spf.None},
		{"SERVFAIL", "203.0.113.1", "news@broken.example.org", spf.TempError},
	} {
		got, err := spf.CheckHostWithSender(net.ParseIP(c.ip), "mail.example.com", c.sender,
			spf.WithResolver(r), spf.WithContext(t.Context()))
		if got != c.want {
			t.Errorf("%s: CheckHostWithSender(%s, %s) = %s (%v), want %s", c.desc, c.ip, c.sender, got, err, c.want)
		}
	}
}

// dkim.Verify checks a message signed here against a 2048-bit key published in the test server
// (a record longer than one TXT string), and tells a missing key from an unreachable one.
func TestDKIMThroughResolver(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	srv.Set("sb1._domainkey.example.com", dns.TypeTXT, "v=DKIM1; k=rsa; p="+base64.StdEncoding.EncodeToString(der))
	srv.Set("sb2._domainkey.example.com", dns.TypeTXT, "v=DKIM1; k=rsa; p="+base64.StdEncoding.EncodeToString(der))
	srv.Fail("sb2._domainkey.example.com", dns.RcodeServerFailure)

	const msg = "From: Ada <ada@example.com>\r\nTo: bob@example.org\r\nSubject: Hello\r\n" +
		"Date: Wed, 01 Oct 2026 10:00:00 +0000\r\nMessage-ID: <1@example.com>\r\n\r\nHello, Bob.\r\n"
	sign := func(selector string) string {
		var b bytes.Buffer
		err := dkim.Sign(&b, strings.NewReader(msg), &dkim.SignOptions{
			Domain: "example.com", Selector: selector, Signer: key, Hash: crypto.SHA256,
		})
		if err != nil {
			t.Fatalf("sign: %v", err)
		}
		return b.String()
	}
	verify := func(signed string, lookup func(string) ([]string, error)) error {
		vs, err := dkim.VerifyWithOptions(strings.NewReader(signed), &dkim.VerifyOptions{LookupTXT: lookup})
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if len(vs) != 1 {
			t.Fatalf("verify: %d signatures, want 1", len(vs))
		}
		return vs[0].Err
	}

	signed := sign("sb1")
	if err := verify(signed, r.DKIMLookupTXT); err != nil {
		t.Errorf("signed message: %v, want a valid signature", err)
	}
	if err := verify(signed, r.TXTFunc(t.Context())); err != nil {
		t.Errorf("signed message (TXTFunc): %v, want a valid signature", err)
	}
	tampered := strings.Replace(signed, "Hello, Bob.", "Hello, Eve.", 1)
	if err := verify(tampered, r.DKIMLookupTXT); err == nil {
		t.Errorf("tampered body: valid signature, want a failure")
	}
	if err := verify(sign("missing"), r.DKIMLookupTXT); !dkim.IsPermFail(err) {
		t.Errorf("no key published: err = %v, want a permanent failure", err)
	}
	if err := verify(sign("sb2"), r.DKIMLookupTXT); !dkim.IsTempFail(err) {
		t.Errorf("key lookup SERVFAIL: err = %v, want a temporary failure", err)
	}
}

func TestDMARCThroughResolver(t *testing.T) {
	t.Parallel()
	srv, r := setup(t, 2*time.Second)
	srv.Set("_dmarc.example.com", dns.TypeTXT, "v=DMARC1; p=reject; rua=mailto:dmarc@example.com")
	srv.Set("_dmarc.broken.example.com", dns.TypeTXT, "v=DMARC1; p=none")
	srv.Fail("_dmarc.broken.example.com", dns.RcodeServerFailure)
	opts := &dmarc.LookupOptions{LookupTXT: r.DKIMLookupTXT}

	rec, err := dmarc.LookupWithOptions("example.com", opts)
	if err != nil || rec.Policy != dmarc.PolicyReject {
		t.Errorf("published policy: %+v, %v; want p=reject", rec, err)
	}
	if _, err := dmarc.LookupWithOptions("nowhere.example.com", opts); !errors.Is(err, dmarc.ErrNoPolicy) {
		t.Errorf("no record: err = %v, want ErrNoPolicy", err)
	}
	if _, err := dmarc.LookupWithOptions("broken.example.com", opts); !dmarc.IsTempFail(err) {
		t.Errorf("SERVFAIL: err = %v, want a temporary failure", err)
	}
}
