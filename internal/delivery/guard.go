package delivery

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrAddressNotAllowed: the webhook's host resolves to an address deliveries may not reach.
var ErrAddressNotAllowed = errors.New("address not allowed for webhook deliveries")

// refused are the ranges a delivery never reaches unless allow-listed: every block of the IANA
// IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and its updates) that is not
// globally reachable, and a few more where no receiver lives. An IPv6 address outside 2000::/3
// is refused whether listed or not (see allowed); the IPv6 blocks outside it are listed to
// document them. IPv4-mapped addresses (::ffff:0:0/96) and NAT64 addresses (64:ff9b::/96) are
// judged by the IPv4 address they carry, as that is where the connection goes.
var refused = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"; 0.0.0.0 connects to this host
	netip.MustParsePrefix("10.0.0.0/8"),      // private use
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier-grade NAT)
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link local; cloud metadata at 169.254.169.254
	netip.MustParsePrefix("172.16.0.0/12"),   // private use
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments, PCP and TURN anycast too (served by the nearest gateway: ours)
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
	netip.MustParsePrefix("192.168.0.0/16"),  // private use
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the limited broadcast 255.255.255.255
	netip.MustParsePrefix("::/128"),          // unspecified
	netip.MustParsePrefix("::1/128"),         // loopback
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("100::/64"),        // discard only
	netip.MustParsePrefix("100:0:0:1::/64"),  // dummy IPv6 prefix
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments: Teredo, benchmarking, ORCHID, anycast services
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4 (deprecated): the tunnel's IPv4 end may be anywhere
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("5f00::/16"),       // segment routing (SRv6) SIDs
	netip.MustParsePrefix("fc00::/7"),        // unique local
	netip.MustParsePrefix("fe80::/10"),       // link local
	netip.MustParsePrefix("fec0::/10"),       // site local (deprecated)
	netip.MustParsePrefix("ff00::/8"),        // multicast
}

var (
	// globalUnicast is all the IPv6 space IANA allocates for global unicast; the rest is special
	// purpose or unassigned.
	globalUnicast = netip.MustParsePrefix("2000::/3")
	// nat64 is the well-known NAT64 prefix: 64:ff9b::a.b.c.d reaches a.b.c.d through the gateway.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// ClientOptions shape the HTTP client deliveries go through.
type ClientOptions struct {
	// Allow lists ranges deliveries may reach although they are forbidden by default (an
	// installation delivering to a receiver inside its own network).
	Allow []netip.Prefix
	// AllowHTTPLoopback lets plain http reach loopback receivers (dev only); everything else
	// must be https.
	AllowHTTPLoopback bool
	// RootCAs, when set, replaces the system roots (tests with a local TLS receiver).
	RootCAs *x509.CertPool
	// Timeout bounds one attempt, from dialling to the end of the answer's head.
	Timeout time.Duration
}

// allowed tells whether deliveries may connect to ip: an allow-listed range overrides every
// rule; an IPv4-mapped or NAT64 address is judged by the IPv4 address it carries.
func (o ClientOptions) allowed(ip netip.Addr) bool {
	ip = ip.WithZone("") // a zoned address matches no prefix
	for _, p := range o.Allow {
		if p.Contains(ip) {
			return true
		}
	}
	switch {
	case !ip.IsValid():
		return false
	case ip.Is4In6():
		return o.allowed(ip.Unmap())
	case nat64.Contains(ip):
		b := ip.As16()
		return o.allowed(netip.AddrFrom4([4]byte(b[12:])))
	case ip.Is6() && !globalUnicast.Contains(ip):
		return false
	}
	for _, p := range refused {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Allows tells whether deliveries (and every client of HTTPClient) may connect to ip, for an
// API that refuses a URL naming an address its client would never reach.
func (o ClientOptions) Allows(ip netip.Addr) bool { return o.allowed(ip) }

// newHTTPClient returns the client of deliveries. The address check runs on the resolved address
// at connect time, so no DNS answer and no redirect can lead a delivery somewhere forbidden.
func newHTTPClient(o ClientOptions) *http.Client {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	dialer := &net.Dialer{
		Timeout: 5 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !o.allowed(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrAddressNotAllowed, address)
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:               nil, // a proxy would connect on our behalf, past the address check
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs},
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   o.Timeout,
		// A redirect is an answer that is not 2xx: the delivery failed, and is retried.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// HTTPClient is a client under the same address rules as deliveries (no private, loopback or
// link-local address unless allowed), for other fetches of URLs API clients give, such as email
// attachments; timeout bounds one request.
func (o ClientOptions) HTTPClient(timeout time.Duration) *http.Client {
	o.Timeout = timeout
	return newHTTPClient(o)
}

// MaxURLLength bounds a webhook URL, as the CRDs do.
const MaxURLLength = 2048

// URLPolicy is which webhook URLs an installation takes and delivers to: the API refuses what
// the workers would not deliver.
type URLPolicy struct {
	// AllowHTTPLoopback takes plain http to a loopback host (dev); otherwise https only.
	AllowHTTPLoopback bool
}

// URLPolicy returns the rules for webhook URLs of an installation whose deliveries use o.
func (o ClientOptions) URLPolicy() URLPolicy {
	return URLPolicy{AllowHTTPLoopback: o.AllowHTTPLoopback}
}

// URLError says why a URL cannot be a webhook URL. Its reason never repeats the URL, so it
// can be shown and logged.
type URLError struct {
	// Reason completes "webhook URL …", e.g. "must be https".
	Reason string
}

func (e *URLError) Error() string { return "webhook URL " + e.Reason }

// Check returns raw parsed, or a *URLError when it is not absolute, carries credentials
// (user:password@, which would end up in logs; receivers authenticate deliveries by their
// signature), or is not https — plain http only to a loopback host where p allows it.
func (p URLPolicy) Check(raw string) (*url.URL, error) {
	if len(raw) > MaxURLLength {
		return nil, &URLError{fmt.Sprintf("must be at most %d characters", MaxURLLength)}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, &URLError{"must be an absolute https URL"}
	}
	if u.User != nil {
		return nil, &URLError{"must not carry credentials (user:password@); receivers authenticate deliveries by their signature"}
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if !p.AllowHTTPLoopback {
			return nil, &URLError{"must be https: this installation delivers plain http to no receiver"}
		}
		if ip, err := netip.ParseAddr(u.Hostname()); (err == nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return u, nil
		}
		return nil, &URLError{"must be https: plain http goes to loopback hosts only (localhost, 127.0.0.1, ::1)"}
	}
	return nil, &URLError{"must be an absolute https URL"}
}

// withoutUserinfo returns raw without the user:password@ of its authority (as net/url finds
// it), for the attempt log; it works on URLs net/url cannot parse, too.
func withoutUserinfo(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return scheme + "://" + rest[at+1:]
	}
	return raw
}
