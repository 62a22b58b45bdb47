package dnstest

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// ask sends one query over net ("udp" or "tcp") without EDNS0 and returns the answer.
func ask(t *testing.T, s *Server, netw, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	resp, _, err := (&dns.Client{Net: netw}).Exchange(m, s.Addr())
	if err != nil {
		t.Fatalf("query %s %s over %s: %v", name, dns.TypeToString[qtype], netw, err)
	}
	return resp
}

func startServer(t *testing.T) *Server {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.Set("Example.COM", dns.TypeMX, "20 b.example.com.", "10 a.example.com.")
	s.Set("sel._domainkey.example.com", dns.TypeTXT, strings.Repeat("k", 300))

	for _, netw := range []string{"udp", "tcp"} {
		resp := ask(t, s, netw, "example.com", dns.TypeMX)
		if resp.Rcode != dns.RcodeSuccess || !resp.Authoritative || len(resp.Answer) != 2 {
			t.Fatalf("%s MX: rcode %s, aa %v, %d answers", netw, dns.RcodeToString[resp.Rcode], resp.Authoritative, len(resp.Answer))
		}
		if ttl := resp.Answer[0].Header().Ttl; ttl != 1 {
			t.Errorf("%s: TTL %d, want 1", netw, ttl)
		}
	}

	// A name with records of another type: NODATA; a name below one with records: NODATA;
	// a name nobody published: NXDOMAIN.
	for name, want := range map[string]int{
		"example.com":                  dns.RcodeSuccess,
		"_domainkey.example.com":       dns.RcodeSuccess,
		"nowhere.example.com":          dns.RcodeNameError,
		"a.sel._domainkey.example.com": dns.RcodeNameError,
	} {
		resp := ask(t, s, "udp", name, dns.TypeTXT)
		if resp.Rcode != want || len(resp.Answer) != 0 {
			t.Errorf("%s TXT: rcode %s with %d answers, want %s with none", name, dns.RcodeToString[resp.Rcode], len(resp.Answer), dns.RcodeToString[want])
		}
	}

	// A TXT value longer than 255 bytes is held in several strings.
	resp := ask(t, s, "udp", "sel._domainkey.example.com", dns.TypeTXT)
	txt := resp.Answer[0].(*dns.TXT).Txt
	if len(txt) != 2 || len(txt[0]) != 255 || strings.Join(txt, "") != strings.Repeat("k", 300) {
		t.Errorf("TXT strings of lengths %d, want 255 and 45", len(txt))
	}
}

func TestTruncatesLargeUDPAnswers(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for i := range 5 {
		s.Add("big.example.com", dns.TypeTXT, strings.Repeat(string(rune('a'+i)), 200))
	}
	if resp := ask(t, s, "udp", "big.example.com", dns.TypeTXT); !resp.Truncated || len(resp.Answer) == 5 {
		t.Errorf("UDP without EDNS0: truncated %v with %d answers, want truncated", resp.Truncated, len(resp.Answer))
	}
	if resp := ask(t, s, "tcp", "big.example.com", dns.TypeTXT); resp.Truncated || len(resp.Answer) != 5 {
		t.Errorf("TCP: truncated %v with %d answers, want all 5", resp.Truncated, len(resp.Answer))
	}
}

func TestChangesAndFailures(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.Set("example.com", dns.TypeA, "192.0.2.1")
	s.Add("example.com", dns.TypeA, "192.0.2.2")
	s.Set("example.com", dns.TypeAAAA, "2001:db8::1")
	if n := len(ask(t, s, "udp", "example.com", dns.TypeA).Answer); n != 2 {
		t.Errorf("after Add: %d A records, want 2", n)
	}
	s.Remove("example.com", dns.TypeA)
	if resp := ask(t, s, "udp", "example.com", dns.TypeA); resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 0 {
		t.Errorf("after Remove: rcode %s, %d answers; want NODATA", dns.RcodeToString[resp.Rcode], len(resp.Answer))
	}
	s.RemoveAll("example.com")
	if resp := ask(t, s, "udp", "example.com", dns.TypeAAAA); resp.Rcode != dns.RcodeNameError {
		t.Errorf("after RemoveAll: rcode %s, want NXDOMAIN", dns.RcodeToString[resp.Rcode])
	}

	s.Set("example.com", dns.TypeA, "192.0.2.1")
	s.Fail("example.com", dns.RcodeRefused)
	if resp := ask(t, s, "udp", "example.com", dns.TypeA); resp.Rcode != dns.RcodeRefused || len(resp.Answer) != 0 {
		t.Errorf("Fail: rcode %s, want REFUSED with no answer", dns.RcodeToString[resp.Rcode])
	}
	s.Clear("example.com")
	if resp := ask(t, s, "udp", "example.com", dns.TypeA); len(resp.Answer) != 1 {
		t.Errorf("after Clear: %d answers, want 1", len(resp.Answer))
	}
	if n := s.Queries("EXAMPLE.com."); n != 5 {
		t.Errorf("Queries = %d, want 5", n)
	}
}

func TestCNAMEChainInAnswer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.Set("www.example.com", dns.TypeCNAME, "edge.example.net")
	s.Set("edge.example.net", dns.TypeA, "192.0.2.7")
	s.Set("loop.example.com", dns.TypeCNAME, "loop.example.com")

	resp := ask(t, s, "udp", "www.example.com", dns.TypeA)
	var got []string
	for _, rr := range resp.Answer {
		got = append(got, dns.TypeToString[rr.Header().Rrtype])
	}
	if !slices.Equal(got, []string{"CNAME", "A"}) {
		t.Errorf("answer types %q, want CNAME then A", got)
	}
	if resp := ask(t, s, "udp", "www.example.com", dns.TypeCNAME); len(resp.Answer) != 1 {
		t.Errorf("CNAME query: %d answers, want the alias alone", len(resp.Answer))
	}
	// A loop still answers.
	ask(t, s, "udp", "loop.example.com", dns.TypeA)
}

func TestSetPanicsOnBadValues(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, c := range []struct {
		typ   uint16
		value string
	}{
		{dns.TypeA, "2001:db8::1"},
		{dns.TypeAAAA, "192.0.2.1"},
		{dns.TypeMX, "mx.example.com."},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Set %s %q did not panic", dns.TypeToString[c.typ], c.value)
				}
			}()
			s.Set("example.com", c.typ, c.value)
		}()
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := &dns.Client{Net: "tcp"}
			for range 20 {
				s.Add("example.com", dns.TypeTXT, "v")
				m := new(dns.Msg)
				m.SetQuestion("example.com.", dns.TypeTXT)
				if _, _, err := c.Exchange(m, s.Addr()); err != nil {
					t.Errorf("query: %v", err)
				}
				s.Fail("other.example.com", dns.RcodeServerFailure)
				s.Clear("other.example.com")
				_ = s.Queries("example.com")
			}
		})
	}
	wg.Wait()
	if n := s.Queries("example.com"); n != 160 {
		t.Errorf("Queries = %d, want 160", n)
	}
}
