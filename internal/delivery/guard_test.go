package delivery

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestGuardRefusesSpecialPurposeRanges lists every range the guard refuses, with an address in
// it: refused by default, reached once its range is allow-listed (--webhook-allow-cidr); and
// addresses deliveries may reach by default.
func TestGuardRefusesSpecialPurposeRanges(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rng, sample string
		// allow is the allow-list entry that lets sample through; empty: rng itself.
		allow string
	}{
		// IANA IPv4 Special-Purpose Address Registry, not globally reachable.
		{"0.0.0.0/8", "0.0.0.0", ""},
		{"0.0.0.0/8", "0.1.2.3", ""},
		{"10.0.0.0/8", "10.20.0.5", ""},
		{"100.64.0.0/10", "100.100.100.200", ""},
		{"127.0.0.0/8", "127.0.0.1", ""},
		{"169.254.0.0/16", "169.254.169.254", ""},
		{"172.16.0.0/12", "172.31.255.1", ""},
		{"192.0.0.0/24", "192.0.0.8", ""},
		{"192.0.0.0/24 (PCP anycast: our gateway)", "192.0.0.9", "192.0.0.0/24"},
		{"192.0.0.0/24 (NAT64 discovery)", "192.0.0.170", "192.0.0.0/24"},
		{"192.0.2.0/24", "192.0.2.10", ""},
		{"192.88.99.0/24", "192.88.99.1", ""},
		{"192.168.0.0/16", "192.168.1.1", ""},
		{"198.18.0.0/15", "198.19.0.1", ""},
		{"198.51.100.0/24", "198.51.100.7", ""},
		{"203.0.113.0/24", "203.0.113.9", ""},
		{"224.0.0.0/4", "239.255.255.250", ""},
		{"240.0.0.0/4", "240.0.0.1", ""},
		{"240.0.0.0/4", "255.255.255.255", ""},
		// IANA IPv6 Special-Purpose Address Registry, not globally reachable.
		{"::/128", "::", ""},
		{"::1/128", "::1", ""},
		{"::/96", "::7f00:1", ""},
		{"::/96", "::808:808", ""},
		{"64:ff9b:1::/48", "64:ff9b:1::a00:1", ""},
		{"100::/64", "100::1", ""},
		{"100:0:0:1::/64", "100:0:0:1::1", ""},
		{"2001::/23", "2001:1::1", ""},
		{"2001::/23", "2001:2::1", ""},
		{"2001::/23", "2001:20::1", ""},
		{"2001::/32 (Teredo)", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::/32"},
		{"2001:db8::/32", "2001:db8::1", ""},
		{"2002::/16", "2002:a00:1::1", ""},
		{"2002::/16", "2002:808:808::1", ""},
		{"3fff::/20", "3fff::1", ""},
		{"5f00::/16", "5f00::1", ""},
		{"fc00::/7", "fd12:3456::1", ""},
		{"fe80::/10", "fe80::1", ""},
		{"fe80::/10 (with a zone)", "fe80::1%eth0", "fe80::/10"},
		{"fec0::/10", "fec0::1", ""},
		{"ff00::/8", "ff02::1", ""},
		{"outside 2000::/3 (unassigned)", "4000::1", "4000::/3"},
		// IPv6 that carries a refused IPv4 address: judged by it, and allowed with it.
		{"::ffff:0:0/96 + 127.0.0.0/8", "::ffff:127.0.0.1", "127.0.0.0/8"},
		{"::ffff:0:0/96 + 169.254.0.0/16", "::ffff:169.254.169.254", "169.254.0.0/16"},
		{"64:ff9b::/96 + 10.0.0.0/8", "64:ff9b::a00:1", "10.0.0.0/8"},
		{"64:ff9b::/96 + 169.254.0.0/16", "64:ff9b::a9fe:a9fe", "64:ff9b::/96"},
		{"64:ff9b::/96 + 127.0.0.0/8", "64:ff9b::127.0.0.1", "127.0.0.0/8"},
	} {
		ip := netip.MustParseAddr(c.sample)
		if (ClientOptions{}).allowed(ip) {
			t.Errorf("%s: %s is reached by default", c.rng, c.sample)
		}
		allow := c.allow
		if allow == "" {
			allow = c.rng
		}
		if !(ClientOptions{Allow: []netip.Prefix{netip.MustParsePrefix(allow)}}).allowed(ip) {
			t.Errorf("%s: %s is refused with %s allow-listed", c.rng, c.sample, allow)
		}
	}

	for _, global := range []string{
		"93.184.215.14", "8.8.8.8", "1.1.1.1",
		"100.63.255.255", "100.128.0.0", "172.32.0.1", "192.0.1.1", "192.31.196.1", "198.20.0.1", "223.255.255.254",
		"2606:4700::1111", "2a00:1450:4001::200e", "2001:200::1", "2620:4f:8000::1", "2003::1",
		"::ffff:8.8.8.8",     // IPv4-mapped: the public IPv4 address it carries
		"64:ff9b::808:808",   // NAT64 to 8.8.8.8, as DNS64 answers an IPv6-only cluster
		"64:ff9b::5db8:d70e", // NAT64 to 93.184.215.14
	} {
		if !(ClientOptions{}).allowed(netip.MustParseAddr(global)) {
			t.Errorf("%s is globally reachable, and refused", global)
		}
	}
	if (ClientOptions{}).allowed(netip.Addr{}) {
		t.Error("the zero address is reached")
	}
}

// TestGuardRefusesAtConnectTime: the dialer's check refuses a refused address before connecting.
func TestGuardRefusesAtConnectTime(t *testing.T) {
	t.Parallel()
	c := newHTTPClient(ClientOptions{})
	for _, u := range []string{"https://[64:ff9b::7f00:1]:1/hook", "https://[::ffff:127.0.0.1]:1/hook", "https://[2002:7f00:1::1]:1/hook"} {
		resp, err := c.Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, ErrAddressNotAllowed) {
			t.Errorf("POST %s: %v, want %v", u, err, ErrAddressNotAllowed)
		}
	}
}

func TestURLPolicy(t *testing.T) {
	t.Parallel()
	strict, dev := URLPolicy{}, URLPolicy{AllowHTTPLoopback: true}
	for _, c := range []struct {
		url        string
		strict     string // the reason strict refuses it; empty: taken
		devRefused bool
	}{
		{"https://hooks.acme.example/sb", "", false},
		{"HTTPS://hooks.acme.example/sb?x=1#f", "", false},
		{"https://hooks.acme.example/p@th?q=a@b", "", false},
		{"https://user:s3cr3t@hooks.acme.example/sb", "must not carry credentials", true},
		{"https://user@hooks.acme.example/sb", "must not carry credentials", true},
		{"https://@hooks.acme.example/sb", "must not carry credentials", true},
		{"https://user:s3cr%40t@hooks.acme.example/sb", "must not carry credentials", true},
		{"http://user:s3cr3t@127.0.0.1:8080/hook", "must not carry credentials", true},
		{"http://127.0.0.1:8080/hook", "must be https", false},
		{"http://[::1]:8080/hook", "must be https", false},
		{"http://localhost:8080/hook", "must be https", false},
		{"http://hooks.acme.example/sb", "must be https", true},
		{"ftp://hooks.acme.example/sb", "must be an absolute https URL", true},
		{"/hook", "must be an absolute https URL", true},
		{"https:hooks.acme.example", "must be an absolute https URL", true},
		{"https://hooks.acme.example/" + strings.Repeat("a", MaxURLLength), "must be at most 2048 characters", true},
	} {
		_, err := strict.Check(c.url)
		var ue *URLError
		switch {
		case c.strict == "" && err != nil:
			t.Errorf("strict %q: %v", c.url, err)
		case c.strict != "" && (!errors.As(err, &ue) || !strings.HasPrefix(ue.Reason, c.strict)):
			t.Errorf("strict %q: %v, want a URLError %q…", c.url, err, c.strict)
		case ue != nil && strings.Contains(ue.Error(), "s3cr"):
			t.Errorf("strict %q: the error %q repeats the credentials", c.url, ue)
		}
		if _, err := dev.Check(c.url); (err != nil) != c.devRefused {
			t.Errorf("dev %q: %v, want refused %v", c.url, err, c.devRefused)
		}
	}
}

func TestWithoutUserinfo(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://user:pass@hooks.acme.example/sb?a=b": "https://hooks.acme.example/sb?a=b",
		"https://u@v:pass@hooks.acme.example":         "https://hooks.acme.example",
		"https://user:pa ss@hooks.acme.example/%zz":   "https://hooks.acme.example/%zz", // net/url cannot parse it
		"https://hooks.acme.example/p@th?q=a@b#c@d":   "https://hooks.acme.example/p@th?q=a@b#c@d",
		"https://hooks.acme.example?q=a@b":            "https://hooks.acme.example?q=a@b",
		"mailto:a@b.example":                          "mailto:a@b.example",
	} {
		if got := withoutUserinfo(in); got != want {
			t.Errorf("withoutUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
