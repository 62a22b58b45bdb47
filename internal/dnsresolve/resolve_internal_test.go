package dnsresolve

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
)

// A server that fails is passed over for the next one configured.
func TestServersAreAskedInTurn(t *testing.T) {
	t.Parallel()
	var addrs []string
	var servers []*dnstest.Server
	for range 2 {
		srv, err := dnstest.New()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		srv.Set("example.com", dns.TypeTXT, "v=spf1 -all")
		servers = append(servers, srv)
		addrs = append(addrs, srv.Addr())
	}
	servers[0].Fail("example.com", dns.RcodeServerFailure)
	r := newResolver(addrs, nil, time.Second)

	txts, err := r.LookupTXT(t.Context(), "example.com")
	if err != nil || !slices.Equal(txts, []string{"v=spf1 -all"}) {
		t.Fatalf("LookupTXT = %q, %v; want the second server's answer", txts, err)
	}
	if servers[0].Queries("example.com") != 1 || servers[1].Queries("example.com") != 1 {
		t.Errorf("queries = %d, %d; want 1, 1", servers[0].Queries("example.com"), servers[1].Queries("example.com"))
	}

	// NXDOMAIN settles the question: the next server is not asked.
	if _, err := r.LookupTXT(t.Context(), "nowhere.example.com"); !IsNotFound(err) {
		t.Errorf("NXDOMAIN: err = %v, want not found", err)
	}
	if n := servers[1].Queries("nowhere.example.com"); n != 0 {
		t.Errorf("second server asked %d times after an NXDOMAIN, want 0", n)
	}
}

func TestSystemServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("search example.com\nnameserver 127.0.0.53\nnameserver ::1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := systemServers(conf)
	if err != nil || !slices.Equal(got, []string{"127.0.0.53:53", "[::1]:53"}) {
		t.Errorf("systemServers = %q, %v", got, err)
	}

	empty := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(empty, []byte("search example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{empty, filepath.Join(dir, "missing.conf")} {
		servers, err := systemServers(path)
		if err == nil {
			t.Errorf("systemServers(%s) = %q, want an error", filepath.Base(path), servers)
			continue
		}
		// Every lookup then fails as unavailable, without sending anything.
		r := newResolver(servers, err, time.Second)
		if _, err := r.LookupTXT(t.Context(), "example.com"); !IsUnavailable(err) {
			t.Errorf("lookup without servers: err = %v, want unavailable", err)
		}
	}
}

func TestServerAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.53":      "192.0.2.53:53",
		"192.0.2.53:5353": "192.0.2.53:5353",
		"::1":             "[::1]:53",
		"[::1]":           "[::1]:53",
		"[::1]:5353":      "[::1]:5353",
		"dns.example.net": "dns.example.net:53",
	} {
		if got := serverAddr(in); got != want {
			t.Errorf("serverAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// An answer that stops at an alias, without its target's records, names the alias to ask next.
func TestAnswersAt(t *testing.T) {
	t.Parallel()
	rr := func(s string) dns.RR {
		r, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	answer := []dns.RR{
		rr("www.example.com. 60 IN CNAME Edge.example.net."),
		rr("edge.example.net. 60 IN CNAME origin.example.org."),
		rr("origin.example.org. 60 IN A 192.0.2.1"),
	}
	for _, c := range []struct {
		desc    string
		answer  []dns.RR
		qtype   uint16
		records int
		end     string
	}{
		{"whole chain", answer, dns.TypeA, 1, "origin.example.org."},
		{"chain cut before the records", answer[:2], dns.TypeA, 0, "origin.example.org."},
		{"the alias itself asked", answer, dns.TypeCNAME, 1, "www.example.com."},
		{"nothing", nil, dns.TypeA, 0, "www.example.com."},
	} {
		rrs, end := answersAt(c.answer, "www.example.com.", c.qtype)
		if len(rrs) != c.records || end != c.end {
			t.Errorf("%s: %d records at %q, want %d at %q", c.desc, len(rrs), end, c.records, c.end)
		}
	}
}

func TestUnescapeTXT(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`plain`:        `plain`,
		`say \"hi\"`:   `say "hi"`,
		`back\\slash`:  `back\slash`,
		`caf\195\169`:  "caf\u00e9",
		`odd\`:         `odd\`,
		`\999 too big`: `999 too big`,
		`semi\;colon`:  `semi;colon`,
	} {
		if got := unescapeTXT(in); got != want {
			t.Errorf("unescapeTXT(%q) = %q, want %q", in, got, want)
		}
	}
}
