package emailcheck

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestNormalize(t *testing.T) {
	good := map[string]string{
		"ana@example.com":           "ana@example.com",
		"Ana.Lopez+tag@Example.COM": "Ana.Lopez+tag@example.com",
		"ana@bücher.example":        "ana@xn--bcher-kva.example",
	}
	for in, want := range good {
		got, _, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ana", "ana@", "@example.com", "Ana <ana@example.com>", "ana@example", "ana@[192.0.2.1]",
		strings.Repeat("a", 65) + "@example.com", "ana@exa mple.com", "ana@@example.com", "ana@example..com", "ana@192.0.2.1"} {
		if got, _, err := Normalize(in); err == nil {
			t.Errorf("Normalize(%q) = %q, want an error", in, got)
		}
	}
}

func newChecker(t *testing.T) (*Checker, *dnstest.Server) {
	t.Helper()
	srv, err := dnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &Checker{Pool: pgtest.NewPool(t), Resolver: dnsresolve.New(srv.Addr(), 300*time.Millisecond)}, srv
}

func TestDomainState(t *testing.T) {
	c, srv := newChecker(t)
	ctx := context.Background()
	srv.Set("mx.test", dns.TypeMX, "10 in.mx.test.")
	srv.Set("a-only.test", dns.TypeA, "192.0.2.10")
	srv.Set("null-mx.test", dns.TypeMX, "0 .")
	srv.Set("txt-only.test", dns.TypeTXT, "v=spf1 -all")
	srv.Fail("broken.test", dns.RcodeServerFailure)
	cases := map[string]DomainState{
		"mx.test": DomainTakesMail, "a-only.test": DomainNoMX, "null-mx.test": DomainNotFound,
		"txt-only.test": DomainNotFound, "nowhere.test": DomainNotFound, "broken.test": DomainUnknown,
	}
	for domain, want := range cases {
		if got := c.Domain(ctx, domain); got != want {
			t.Errorf("%s: %v, want %v", domain, got, want)
		}
	}
}

func TestPreflightAndSuppression(t *testing.T) {
	c, srv := newChecker(t)
	ctx := context.Background()
	srv.Set("mx.test", dns.TypeMX, "10 in.mx.test.")
	srv.Fail("broken.test", dns.RcodeServerFailure)
	check := func(testMode bool, address, want string) {
		t.Helper()
		code, _, err := c.Preflight(ctx, "acme", testMode, address, true)
		if err != nil || code != want {
			t.Errorf("Preflight(%v, %q) = %q, %v; want %q", testMode, address, code, err, want)
		}
	}
	check(false, "ana@mx.test", "")
	check(false, "ana@nowhere.test", CodeDomainNotFound)
	check(true, "ana@nowhere.test", "") // test mail goes to the sandbox: no DNS
	check(false, "ana@broken.test", "") // DNS down lets mail through
	check(false, "Ana <ana@mx.test>", CodeInvalidRecipient)

	// A hard bounce keeps the address off in its mode only, whatever the case it is written in.
	if err := c.Suppress(ctx, "acme", false, "Ana@MX.test", ReasonHardBounce, "msg_1", "550 5.1.1 no such user"); err != nil {
		t.Fatal(err)
	}
	check(false, "ana@mx.test", CodeRecipientSuppressed)
	check(true, "ana@mx.test", "")
	e, err := c.Suppressed(ctx, "acme", false, "ANA@mx.test")
	if err != nil || e == nil || e.Reason != ReasonHardBounce || e.MessageID != "msg_1" || e.Until != nil {
		t.Fatalf("entry = %+v, %v", e, err)
	}
	// A later soft bounce does not weaken it; a complaint replaces it.
	if err := c.Suppress(ctx, "acme", false, "ana@mx.test", ReasonSoftBounce, "msg_2", "452 mailbox full"); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Suppressed(ctx, "acme", false, "ana@mx.test"); e.Reason != ReasonHardBounce {
		t.Fatalf("a soft bounce replaced a hard one: %+v", e)
	}
	if err := c.Suppress(ctx, "acme", false, "ana@mx.test", ReasonComplaint, "msg_3", "abuse"); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Suppressed(ctx, "acme", false, "ana@mx.test"); e.Reason != ReasonComplaint {
		t.Fatalf("a complaint did not replace the bounce: %+v", e)
	}

	// A soft bounce lapses after a day.
	if err := c.Suppress(ctx, "acme", false, "bo@mx.test", ReasonSoftBounce, "", "mailbox full"); err != nil {
		t.Fatal(err)
	}
	check(false, "bo@mx.test", CodeRecipientSuppressed)
	c.Now = func() time.Time { return time.Now().Add(SoftBounceFor + time.Minute) }
	check(false, "bo@mx.test", "")
	c.Now = nil

	// The list pages newest first; removal lets mail go again.
	for i := range 5 {
		if err := c.Suppress(ctx, "acme", false, "u"+string(rune('a'+i))+"@mx.test", ReasonManual, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	var after Page
	for {
		page, err := c.List(ctx, "acme", false, "", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			seen = append(seen, e.Address)
		}
		if len(page) < 3 {
			break
		}
		after = Page{Time: page[2].CreatedAt, Address: page[2].Address}
	}
	if len(seen) != 7 {
		t.Fatalf("listed %v, want 7 entries", seen)
	}
	if manual, _ := c.List(ctx, "acme", false, ReasonManual, Page{}, 100); len(manual) != 5 {
		t.Fatalf("%d manual entries, want 5", len(manual))
	}
	if removed, err := c.Remove(ctx, "acme", false, "ANA@mx.test"); err != nil || !removed {
		t.Fatalf("remove = %v, %v", removed, err)
	}
	if removed, _ := c.Remove(ctx, "acme", false, "ana@mx.test"); removed {
		t.Fatal("removed twice")
	}
	check(false, "ana@mx.test", "")
}

// An unsubscribe refuses mail only when the caller says it does (a broadcast's mail, or a
// project whose unsubscribes stop everything); every other entry refuses it always.
func TestPreflightUnsubscribeScope(t *testing.T) {
	c, srv := newChecker(t)
	ctx := context.Background()
	srv.Set("mx.test", dns.TypeMX, "10 in.mx.test.")
	if err := c.Unsubscribe(ctx, "acme", false, "Una@mx.test", "brd_1"); err != nil {
		t.Fatal(err)
	}
	for _, reason := range []string{ReasonHardBounce, ReasonSoftBounce, ReasonComplaint, ReasonManual} {
		if err := c.Suppress(ctx, "acme", false, reason+"@mx.test", reason, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		address            string
		refuseUnsubscribed bool
		want               string
	}{
		{"una@mx.test", true, CodeRecipientSuppressed},
		{"UNA@mx.test", false, ""},
		{"hard_bounce@mx.test", false, CodeRecipientSuppressed},
		{"soft_bounce@mx.test", false, CodeRecipientSuppressed},
		{"complaint@mx.test", false, CodeRecipientSuppressed},
		{"manual@mx.test", false, CodeRecipientSuppressed},
		{"manual@mx.test", true, CodeRecipientSuppressed},
		{"clean@mx.test", true, ""},
	} {
		code, msg, err := c.Preflight(ctx, "acme", false, tc.address, tc.refuseUnsubscribed)
		if err != nil || code != tc.want {
			t.Errorf("Preflight(%q, refuseUnsubscribed %v) = %q %q, %v; want %q", tc.address, tc.refuseUnsubscribed, code, msg, err, tc.want)
		}
	}
	// An address let through past its unsubscribe still meets the other checks.
	if err := c.Unsubscribe(ctx, "acme", false, "una@nowhere.test", "brd_1"); err != nil {
		t.Fatal(err)
	}
	if code, _, err := c.Preflight(ctx, "acme", false, "una@nowhere.test", false); err != nil || code != CodeDomainNotFound {
		t.Errorf("an unsubscribed address of a domain with no mail = %q, %v", code, err)
	}
}

// Among reads the entries in force for many addresses at once, in one mode.
func TestAmong(t *testing.T) {
	c, _ := newChecker(t)
	ctx := context.Background()
	if err := c.Unsubscribe(ctx, "acme", true, "Una@mx.test", "brd_1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Suppress(ctx, "acme", true, "soft@mx.test", ReasonSoftBounce, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Suppress(ctx, "acme", false, "live@mx.test", ReasonManual, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Suppress(ctx, "other", true, "clean@mx.test", ReasonManual, "", ""); err != nil {
		t.Fatal(err)
	}
	got, err := Among(ctx, db.Planned(c.Pool), "acme", true, []string{"UNA@MX.test", "soft@mx.test", "live@mx.test", "clean@mx.test"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["una@mx.test"] == nil || got["una@mx.test"].Reason != ReasonUnsubscribe ||
		got["una@mx.test"].BroadcastID != "brd_1" || got["soft@mx.test"] == nil || got["soft@mx.test"].Until == nil {
		t.Fatalf("Among = %v", got)
	}
	// Past a soft bounce's day it is no longer in force.
	got, err = Among(ctx, db.Planned(c.Pool), "acme", true, []string{"soft@mx.test"}, time.Now().Add(SoftBounceFor+time.Minute))
	if err != nil || len(got) != 0 {
		t.Fatalf("Among after a day = %v, %v", got, err)
	}
	if got, err := Among(ctx, db.Planned(c.Pool), "acme", true, nil, time.Now()); err != nil || len(got) != 0 {
		t.Fatalf("Among of nothing = %v, %v", got, err)
	}
}

func TestInspect(t *testing.T) {
	c, srv := newChecker(t)
	ctx := context.Background()
	srv.Set("mx.test", dns.TypeMX, "10 in.mx.test.")
	srv.Set("a-only.test", dns.TypeA, "192.0.2.10")
	srv.Set("mailinator.com", dns.TypeMX, "10 mail.mailinator.com.")
	if err := c.Suppress(ctx, "acme", false, "gone@mx.test", ReasonHardBounce, "", ""); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"ana@mx.test":          "deliverable []",
		"info@mx.test":         "risky [role_address]",
		"ana@a-only.test":      "risky [domain_no_mx]",
		"x@mailinator.com":     "risky [disposable_domain]",
		"x@sub.mailinator.com": "undeliverable [domain_not_found disposable_domain]",
		"ana@nowhere.test":     "undeliverable [domain_not_found]",
		"gone@mx.test":         "undeliverable [suppressed_hard_bounce]",
		"not an address":       "undeliverable [invalid_syntax]",
	}
	for address, want := range cases {
		r, err := c.Inspect(ctx, "acme", false, ShippedDisposable(), address)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Verdict + " [" + strings.Join(r.Reasons, " ") + "]"; got != want {
			t.Errorf("%s: %s, want %s", address, got, want)
		}
	}
}

func TestDisposableList(t *testing.T) {
	d := ShippedDisposable()
	if !d.Has("mailinator.com") || !d.Has("x.mailinator.com") || d.Has("example.com") || d.Has("com") {
		t.Fatal("shipped list lookups")
	}
	if err := d.Add(strings.NewReader("# ours\nthrowaway.example\n")); err != nil || !d.Has("throwaway.example") {
		t.Fatalf("add: %v", err)
	}
	if err := d.Add(strings.NewReader("not a domain\n")); err == nil {
		t.Fatal("a line with spaces was taken")
	}
}
