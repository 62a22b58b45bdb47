// Package dnstest runs an authoritative DNS server on the loopback interface for tests: a test
// publishes a domain's records with Set or Add, points the resolver under test at Addr, and
// watches the code under test find them. Fail and Drop make a name answer an error code or
// not answer at all, to test what happens when a check cannot run.
package dnstest

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// ttl is the time to live of every answer, in seconds: short, so that a resolver with a cache
// in front of this server sees a change made by the test.
const ttl = 1

// maxChain bounds how many CNAMEs an answer follows, so that a test's CNAME loop still answers.
const maxChain = 8

// rrKey names the records of one type at one name.
type rrKey struct {
	name string // lower case, with the trailing dot
	typ  uint16
}

// Server is an authoritative DNS server on 127.0.0.1 answering over UDP and TCP on the same
// port. A name without records answers NXDOMAIN; a name with records, but none of the type
// asked, answers NOERROR with no answer (NODATA). A UDP answer larger than the query allows is
// truncated, so a client retries over TCP. Its methods are safe for concurrent use.
type Server struct {
	addr     string
	udp, tcp *dns.Server
	close    sync.Once

	mu      sync.Mutex
	records map[rrKey][]dns.RR
	fail    map[string]int
	drop    map[string]bool
	queries map[string]int
}

// New starts a server on 127.0.0.1 on a free port, UDP and TCP alike. Close it when done.
func New() (*Server, error) {
	var tcpErr error
	// The UDP port the kernel picks may be taken on TCP: try a few before giving up.
	for range 10 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listen udp: %w", err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil {
			_ = pc.Close()
			tcpErr = err
			continue
		}
		return start(pc, l)
	}
	return nil, fmt.Errorf("listen tcp: %w", tcpErr)
}

// start serves on the bound sockets and returns once both servers run.
func start(pc net.PacketConn, l net.Listener) (*Server, error) {
	s := &Server{
		addr:    pc.LocalAddr().String(),
		records: map[rrKey][]dns.RR{},
		fail:    map[string]int{},
		drop:    map[string]bool{},
		queries: map[string]int{},
	}
	handler := dns.HandlerFunc(s.serve)
	s.udp = &dns.Server{PacketConn: pc, Handler: handler}
	s.tcp = &dns.Server{Listener: l, Handler: handler}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		started := make(chan struct{})
		failed := make(chan error, 1)
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { failed <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-failed:
			// Shutdown before a start returns an error of its own; the start error is the one to tell.
			_ = s.udp.Shutdown()
			_ = pc.Close()
			_ = l.Close()
			return nil, fmt.Errorf("start dns server: %w", err)
		}
	}
	return s, nil
}

// Addr returns the server's address as host:port, the form the resolver's --dns-server takes.
func (s *Server) Addr() string { return s.addr }

// Close stops the server; calling it again does nothing.
func (s *Server) Close() {
	s.close.Do(func() {
		_ = s.udp.Shutdown()
		_ = s.tcp.Shutdown()
	})
}

// Set replaces the records of type typ at name with values, one record each; no values removes
// them. Values are written as in a zone file, except TXT: a TXT value is the record's whole text,
// unquoted, split into 255-byte strings on the wire. So: TXT "v=spf1 -all", MX "10 mx.example.com.",
// A "192.0.2.1", AAAA "2001:db8::1", CNAME "target.example.com.", PTR "host.example.com.".
// Names are case-insensitive and may omit the trailing dot. Set panics on a value it cannot
// read, as regexp.MustCompile does: that is a mistake in the test.
func (s *Server) Set(name string, typ uint16, values ...string) {
	k := rrKey{canonical(name), typ}
	rrs := make([]dns.RR, 0, len(values))
	for _, v := range values {
		rrs = append(rrs, newRR(k, v))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(rrs) == 0 {
		delete(s.records, k)
		return
	}
	s.records[k] = rrs
}

// Add appends one record of type typ at name, written as for Set.
func (s *Server) Add(name string, typ uint16, value string) {
	k := rrKey{canonical(name), typ}
	rr := newRR(k, value)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[k] = append(s.records[k], rr)
}

// Remove removes the records of type typ at name.
func (s *Server) Remove(name string, typ uint16) { s.Set(name, typ) }

// RemoveAll removes every record at name; names below it keep theirs.
func (s *Server) RemoveAll(name string) {
	name = canonical(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.records {
		if k.name == name {
			delete(s.records, k)
		}
	}
}

// Fail makes every query for name answer rcode (dns.RcodeServerFailure, dns.RcodeRefused, …)
// with no records, until Clear.
func (s *Server) Fail(name string, rcode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[canonical(name)] = rcode
}

// Drop makes queries for name go unanswered while drop is true, so that clients time out.
func (s *Server) Drop(name string, drop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if drop {
		s.drop[canonical(name)] = true
		return
	}
	delete(s.drop, canonical(name))
}

// Clear undoes Fail and Drop for name: it answers from its records again.
func (s *Server) Clear(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.fail, canonical(name))
	delete(s.drop, canonical(name))
}

// Queries returns how many queries for name, of any type and over UDP or TCP, the server has
// received, answered or not.
func (s *Server) Queries(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[canonical(name)]
}

// serve answers one query.
func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	resp := new(dns.Msg)
	resp.SetReply(req)
	resp.Authoritative = true
	if len(req.Question) != 1 {
		resp.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(resp)
		return
	}
	q := req.Question[0]
	name := canonical(q.Name)

	s.mu.Lock()
	s.queries[name]++
	dropped := s.drop[name]
	rcode, failing := s.fail[name]
	if !dropped && !failing {
		s.answer(resp, name, q.Qtype)
	}
	s.mu.Unlock()

	if dropped {
		return
	}
	if failing {
		resp.Rcode = rcode
	}
	opt := req.IsEdns0()
	if opt != nil {
		resp.SetEdns0(opt.UDPSize(), false)
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt != nil {
			size = max(size, int(opt.UDPSize()))
		}
		resp.Truncate(size)
	}
	_ = w.WriteMsg(resp)
}

// answer fills resp with the records of type qtype at name, following CNAMEs as an
// authoritative server does for names in its zone. Called with s.mu held.
func (s *Server) answer(resp *dns.Msg, name string, qtype uint16) {
	for range maxChain {
		if rrs := s.records[rrKey{name, qtype}]; len(rrs) > 0 {
			resp.Answer = append(resp.Answer, rrs...)
			return
		}
		alias := s.records[rrKey{name, dns.TypeCNAME}]
		if qtype == dns.TypeCNAME || len(alias) == 0 {
			if !s.exists(name) {
				resp.Rcode = dns.RcodeNameError
			}
			return
		}
		resp.Answer = append(resp.Answer, alias[0])
		name = canonical(alias[0].(*dns.CNAME).Target)
	}
}

// exists reports whether name has records or is an empty non-terminal (a name below it has
// records, as _domainkey.example.com when sel._domainkey.example.com has): such a name answers
// NODATA, not NXDOMAIN. Called with s.mu held.
func (s *Server) exists(name string) bool {
	for k := range s.records {
		if k.name == name || strings.HasSuffix(k.name, "."+name) {
			return true
		}
	}
	return false
}

// newRR builds the record of k with value, or panics.
func newRR(k rrKey, value string) dns.RR {
	hdr := dns.RR_Header{Name: k.name, Rrtype: k.typ, Class: dns.ClassINET, Ttl: ttl}
	switch k.typ {
	case dns.TypeTXT:
		return &dns.TXT{Hdr: hdr, Txt: txtStrings(value)}
	case dns.TypeA:
		addr, err := netip.ParseAddr(value)
		if err != nil || !addr.Is4() {
			panic(fmt.Sprintf("dnstest: A record %s: %q is not an IPv4 address", k.name, value))
		}
		return &dns.A{Hdr: hdr, A: addr.AsSlice()}
	case dns.TypeAAAA:
		addr, err := netip.ParseAddr(value)
		if err != nil || !addr.Is6() || addr.Is4In6() {
			panic(fmt.Sprintf("dnstest: AAAA record %s: %q is not an IPv6 address", k.name, value))
		}
		return &dns.AAAA{Hdr: hdr, AAAA: addr.AsSlice()}
	case dns.TypeCNAME:
		return &dns.CNAME{Hdr: hdr, Target: canonical(value)}
	}
	typ, ok := dns.TypeToString[k.typ]
	if !ok {
		panic(fmt.Sprintf("dnstest: record %s: unknown type %d", k.name, k.typ))
	}
	rr, err := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", k.name, ttl, typ, value))
	if err == nil && rr == nil {
		err = errors.New("empty record")
	}
	if err != nil {
		panic(fmt.Sprintf("dnstest: %s record %s: %q: %v", typ, k.name, value, err))
	}
	return rr
}

// txtStrings splits a TXT record's text into the strings of at most 255 bytes that the wire
// format holds (RFC 1035 3.3.14), escaped as miekg/dns packs them.
func txtStrings(text string) []string {
	var out []string
	for {
		n := min(len(text), 255)
		out = append(out, escapeTXT(text[:n]))
		text = text[n:]
		if text == "" {
			return out
		}
	}
}

// escapeTXT writes s in the presentation form miekg/dns reads when packing a TXT string:
// quote and backslash escaped, bytes outside printable ASCII as \DDD.
func escapeTXT(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~':
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// canonical is name in lower case with the trailing dot, the form records are kept under.
func canonical(name string) string { return dns.Fqdn(strings.ToLower(name)) }
