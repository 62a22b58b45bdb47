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
	"syscall"
	"time"
)

// ErrAddressNotAllowed: the webhook's host resolves to an address deliveries may not reach.
var ErrAddressNotAllowed = errors.New("address not allowed for webhook deliveries")

// forbidden are the ranges a delivery never reaches unless allow-listed: this host, private
// networks, link-local (cloud metadata lives at 169.254.169.254), shared and multicast space.
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

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

func (o ClientOptions) allowed(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range o.Allow {
		if p.Contains(ip) {
			return true
		}
	}
	for _, p := range forbidden {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

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

// checkURL refuses URLs deliveries must not use: not absolute, not https (but for plain http
// to a loopback host in dev).
func (o ClientOptions) checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("webhook URL %q is not an absolute URL", raw)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if o.AllowHTTPLoopback {
			if ip, err := netip.ParseAddr(u.Hostname()); (err == nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
				return u, nil
			}
		}
	}
	return nil, fmt.Errorf("webhook URL must be https")
}
