// Package dnsresolve looks up the DNS records Switchboard checks — TXT for DKIM, SPF and DMARC,
// MX and addresses for email pre-flight — through one resolver that the installation points at
// a server of its choice (--dns-server) or leaves on the system's. Its errors tell "the domain
// has no such record" (IsNotFound) apart from "the check could not run" (IsUnavailable).
package dnsresolve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/miekg/dns"
)

const (
	// DefaultTimeout bounds one query to one server when New is given no timeout; resolv.conf's
	// default.
	DefaultTimeout = 5 * time.Second
	// attemptsPerServer is one try and one retry after a timeout: a lost UDP packet is common,
	// a server that lost two in a row is better skipped.
	attemptsPerServer = 2
	// maxCNAMEHops bounds alias chains, so that a loop ends.
	maxCNAMEHops = 8
	// ednsUDPSize is the UDP answer size advertised (EDNS0): the 2020 DNS flag day's value, which
	// fits one packet without fragmenting and still holds a 2048-bit DKIM key.
	ednsUDPSize = 1232
	// resolvConf is where the system's resolvers are read from when no server is given.
	resolvConf = "/etc/resolv.conf"
)

// Resolver sends DNS queries to one configured server or to the system's resolvers, over UDP
// and again over TCP when an answer is truncated, with recursion desired. A server that times
// out is asked once more; one that fails is passed over for the next. It keeps no cache: the
// recursive server it asks has one. It is safe for concurrent use.
type Resolver struct {
	servers  []string // host:port, asked in turn
	confErr  error    // why the system's resolvers could not be read; every lookup returns it
	timeout  time.Duration
	udp, tcp *dns.Client
}

// New returns a resolver asking server, as host:port (port 53 when missing), or the system's
// resolvers from /etc/resolv.conf when server is "". timeout bounds one query to one server;
// zero or less means DefaultTimeout. A lookup that gets no answer takes up to twice the timeout
// for each server: give ctx a deadline to bound it as a whole. A resolv.conf that cannot be
// read, or names no server, makes every lookup fail with ErrUnavailable.
func New(server string, timeout time.Duration) *Resolver {
	if server == "" {
		servers, err := systemServers(resolvConf)
		return newResolver(servers, err, timeout)
	}
	return newResolver([]string{serverAddr(server)}, nil, timeout)
}

func newResolver(servers []string, confErr error, timeout time.Duration) *Resolver {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Resolver{
		servers: servers,
		confErr: confErr,
		timeout: timeout,
		udp:     &dns.Client{Net: "udp", Timeout: timeout, UDPSize: ednsUDPSize},
		tcp:     &dns.Client{Net: "tcp", Timeout: timeout},
	}
}

// systemServers reads the name servers of a resolv.conf file, as host:port.
func systemServers(path string) ([]string, error) {
	conf, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("read system resolvers: %w", err)
	}
	if len(conf.Servers) == 0 {
		return nil, fmt.Errorf("read system resolvers: no nameserver in %s", path)
	}
	servers := make([]string, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		servers = append(servers, net.JoinHostPort(s, conf.Port))
	}
	return servers, nil
}

// serverAddr adds port 53 to a server given without one: "192.0.2.53", "::1", "[::1]" or a host name.
func serverAddr(server string) string {
	if _, _, err := net.SplitHostPort(server); err == nil {
		return server
	}
	return net.JoinHostPort(strings.Trim(server, "[]"), "53")
}

// LookupTXT returns the text of each TXT record at name, following CNAMEs. A record held in
// several strings (as a DKIM key longer than 255 bytes is) comes back as one, the strings joined
// without separators, as RFC 7208 3.3 and RFC 6376 3.6.2.2 read them.
func (r *Resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	rrs, err := r.resolve(ctx, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	txts := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		if t, ok := rr.(*dns.TXT); ok {
			var b strings.Builder
			for _, s := range t.Txt {
				b.WriteString(unescapeTXT(s))
			}
			txts = append(txts, b.String())
		}
	}
	return txts, nil
}

// LookupMX returns the MX records at name, following CNAMEs, sorted by preference (records of
// equal preference in the order the server gave). Hosts are fully qualified, with the trailing
// dot; a null MX (RFC 7505) comes back as host ".".
func (r *Resolver) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	rrs, err := r.resolve(ctx, name, dns.TypeMX)
	if err != nil {
		return nil, err
	}
	mxs := make([]*net.MX, 0, len(rrs))
	for _, rr := range rrs {
		if mx, ok := rr.(*dns.MX); ok {
			mxs = append(mxs, &net.MX{Host: mx.Mx, Pref: mx.Preference})
		}
	}
	slices.SortStableFunc(mxs, func(a, b *net.MX) int { return int(a.Pref) - int(b.Pref) })
	return mxs, nil
}

// LookupIP returns the IPv4 (A) and IPv6 (AAAA) addresses of host, following CNAMEs; both are
// asked at once. Addresses of either kind are a success even if the other query failed. An IP
// address given as host is returned as it is.
func (r *Resolver) LookupIP(ctx context.Context, host string) ([]netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{addr}, nil
	}
	name, err := fqdn(host)
	if err != nil {
		return nil, err
	}
	var (
		wg         sync.WaitGroup
		v4, v6     []dns.RR
		err4, err6 error
	)
	wg.Go(func() { v4, err4 = r.resolve(ctx, name, dns.TypeA) })
	wg.Go(func() { v6, err6 = r.resolve(ctx, name, dns.TypeAAAA) })
	wg.Wait()

	addrs := make([]netip.Addr, 0, len(v4)+len(v6))
	for _, rr := range slices.Concat(v4, v6) {
		switch rr := rr.(type) {
		case *dns.A:
			if a, ok := netip.AddrFromSlice(rr.A); ok {
				addrs = append(addrs, a.Unmap())
			}
		case *dns.AAAA:
			if a, ok := netip.AddrFromSlice(rr.AAAA); ok {
				addrs = append(addrs, a)
			}
		}
	}
	switch {
	case len(addrs) > 0:
		return addrs, nil
	case IsUnavailable(err4):
		return nil, err4
	case IsUnavailable(err6):
		return nil, err6
	}
	return nil, notFound(name, serverOf(err4), "no A or AAAA record")
}

// LookupIPAddr is LookupIP with net.IPAddr results, the form blitiri.com.ar/go/spf asks for.
func (r *Resolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	addrs, err := r.LookupIP(ctx, host)
	if err != nil {
		return nil, err
	}
	out := make([]net.IPAddr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, net.IPAddr{IP: a.AsSlice(), Zone: a.Zone()})
	}
	return out, nil
}

// LookupCNAME returns the name at the end of the CNAME chain that starts at host, in lower
// case with the trailing dot; the end need not exist. A host that is not an alias is
// ErrNotFound, unlike net.LookupCNAME: domain verification asks "does this name point there?".
func (r *Resolver) LookupCNAME(ctx context.Context, host string) (string, error) {
	name, err := fqdn(host)
	if err != nil {
		return "", err
	}
	target := name
	for range maxCNAMEHops {
		rrs, err := r.resolve(ctx, target, dns.TypeCNAME)
		switch {
		case IsNotFound(err) && target != name:
			return target, nil
		case err != nil:
			return "", err
		}
		cname, ok := rrs[0].(*dns.CNAME)
		if !ok {
			return "", notFound(name, "", "no CNAME record")
		}
		target = strings.ToLower(cname.Target)
	}
	return "", notFound(name, "", "CNAME chain too long")
}

// LookupAddr returns the names of an IP address from its PTR records (reverse DNS), fully
// qualified with the trailing dot.
func (r *Resolver) LookupAddr(ctx context.Context, addr string) ([]string, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return nil, invalidName(addr, "not an IP address")
	}
	rev, err := dns.ReverseAddr(ip.WithZone("").Unmap().String())
	if err != nil {
		return nil, invalidName(addr, err.Error())
	}
	rrs, err := r.resolve(ctx, rev, dns.TypePTR)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		if ptr, ok := rr.(*dns.PTR); ok {
			names = append(names, ptr.Ptr)
		}
	}
	return names, nil
}

// resolve returns the records of type qtype at name. It follows the CNAMEs of each answer, and
// asks again for the last alias when an answer stops at one without its target's records (a
// server answering for the alias's zone only).
func (r *Resolver) resolve(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	name, err := fqdn(name)
	if err != nil {
		return nil, err
	}
	what := "no " + dns.TypeToString[qtype] + " record"
	target := name
	for range maxCNAMEHops {
		resp, server, err := r.query(ctx, target, qtype)
		if err != nil {
			return nil, err
		}
		rrs, end := answersAt(resp.Answer, target, qtype)
		switch {
		case len(rrs) > 0:
			return rrs, nil
		case resp.Rcode == dns.RcodeNameError:
			return nil, notFound(name, server, "no such domain")
		case end == target:
			return nil, notFound(name, server, what)
		}
		target = end
	}
	// A chain this long is a loop or a misconfiguration: the domain has no usable record.
	return nil, notFound(name, "", "CNAME chain too long")
}

// answersAt follows the CNAME chain from name through answer and returns the records of type
// qtype where it ends, and the name it ended at.
func answersAt(answer []dns.RR, name string, qtype uint16) ([]dns.RR, string) {
	for range maxCNAMEHops {
		var rrs []dns.RR
		alias := ""
		for _, rr := range answer {
			h := rr.Header()
			switch {
			case !strings.EqualFold(h.Name, name):
			case h.Rrtype == qtype:
				rrs = append(rrs, rr)
			case h.Rrtype == dns.TypeCNAME && alias == "":
				alias = strings.ToLower(rr.(*dns.CNAME).Target)
			}
		}
		if len(rrs) > 0 || alias == "" {
			return rrs, name
		}
		name = alias
	}
	return nil, name
}

// query asks the servers in turn about (name, qtype) and returns the first answer that settles
// the question, NOERROR or NXDOMAIN, with the server that gave it. SERVFAIL, REFUSED, other
// rcodes and network errors pass on to the next server; after the last, the lookup is unavailable.
func (r *Resolver) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, string, error) {
	if r.confErr != nil {
		return nil, "", unavailable(name, "", r.confErr)
	}
	var (
		lastErr    error
		lastServer string
	)
	for _, server := range r.servers {
		resp, err := r.ask(ctx, server, name, qtype)
		if err == nil {
			if resp.Rcode == dns.RcodeSuccess || resp.Rcode == dns.RcodeNameError {
				return resp, server, nil
			}
			err = fmt.Errorf("server answered %s", dns.RcodeToString[resp.Rcode])
		}
		lastErr, lastServer = err, server
		if ctx.Err() != nil {
			lastErr = ctx.Err()
			break
		}
	}
	if lastErr == nil {
		lastErr = errors.New("no DNS server configured")
	}
	return nil, lastServer, unavailable(name, lastServer, lastErr)
}

// ask puts one question to one server over UDP, once more if that timed out, and over TCP
// when the UDP answer was truncated.
func (r *Resolver) ask(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	var err error
	for range attemptsPerServer {
		var resp *dns.Msg
		resp, err = r.exchange(ctx, r.udp, server, name, qtype)
		if resp != nil && resp.Truncated {
			return r.exchange(ctx, r.tcp, server, name, qtype)
		}
		if err == nil {
			return resp, nil
		}
		if !isTimeout(err) || ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}

// exchange sends one query with a fresh ID and waits at most the resolver's timeout.
func (r *Resolver) exchange(ctx context.Context, c *dns.Client, server, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	m.SetEdns0(ednsUDPSize, false)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	resp, _, err := c.ExchangeContext(ctx, m, server)
	if err != nil {
		return resp, err
	}
	if len(resp.Question) != 1 || !strings.EqualFold(resp.Question[0].Name, name) || resp.Question[0].Qtype != qtype {
		return nil, errors.New("server answered another question")
	}
	return resp, nil
}

// fqdn checks name and returns it in lower case with the trailing dot, the form queries use.
// IDNA is not done: a name in Unicode must be given in its xn-- form.
func fqdn(name string) (string, error) {
	if name == "" {
		return "", invalidName(name, "empty name")
	}
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return "", invalidName(name, "name is not ASCII; give an internationalized name in its xn-- form")
		}
	}
	name = dns.Fqdn(strings.ToLower(name))
	if _, ok := dns.IsDomainName(name); !ok {
		return "", invalidName(name, "not a domain name")
	}
	return name, nil
}

// unescapeTXT undoes the escaping miekg/dns applies to TXT strings it unpacks: \" and \\ for
// a quote and a backslash, \DDD for a byte outside printable ASCII.
func unescapeTXT(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		if i+2 < len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
			if v := int(s[i]-'0')*100 + int(s[i+1]-'0')*10 + int(s[i+2]-'0'); v <= 255 {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// serverOf is the server a lookup error names, if any.
func serverOf(err error) string {
	var de *net.DNSError
	if errors.As(err, &de) {
		return de.Server
	}
	return ""
}
