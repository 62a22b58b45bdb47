// Package emailcheck answers what Switchboard knows about an email address before mail goes
// to it: whether it is well formed (RFC 5321 limits), whether its domain takes mail (MX, else
// A/AAAA), whether the project's suppression list holds it (hard bounces, complaints,
// unsubscribes, entries made by hand, soft bounces for a day), and the advisory signals (role
// addresses, disposable domains) that never block a send. The dispatch pre-flight, the
// introspection endpoint and the bounce handling share it.
package emailcheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/emaildomain"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Reasons an address is on the suppression list (WIRE.md §9, introspection reasons without
// their suppressed_ prefix).
const (
	ReasonHardBounce  = "hard_bounce"
	ReasonSoftBounce  = "soft_bounce"
	ReasonComplaint   = "complaint"
	ReasonManual      = "manual"
	ReasonUnsubscribe = "unsubscribe"
)

// SoftBounceFor is how long a soft bounce (a mailbox full, a server refusing for now, given up
// by the relay) keeps an address off: mail is tried again after it.
const SoftBounceFor = 24 * time.Hour

// Resolver reads the DNS of recipient domains (dnsresolve.Resolver).
type Resolver interface {
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	LookupIP(ctx context.Context, host string) ([]netip.Addr, error)
}

// Checker checks addresses.
type Checker struct {
	Pool     *pgxpool.Pool
	Resolver Resolver
	Now      func() time.Time
}

// Normalize checks address against RFC 5321's limits (a local part of at most 64 octets, a
// domain name of labels, 254 octets in all; no display name, no comments, no IP literal) and
// returns it with its domain lowercased and in ASCII, and the domain. It reports why an
// address is malformed.
func Normalize(address string) (normalized, domain string, err error) {
	if len(address) > 254 {
		return "", "", errors.New("longer than 254 characters")
	}
	parsed, err := mail.ParseAddress(address)
	if err != nil || parsed.Name != "" || parsed.Address != address {
		return "", "", errors.New("not a bare address such as name@example.com")
	}
	at := strings.LastIndexByte(address, '@')
	local, host := address[:at], address[at+1:]
	if len(local) == 0 || len(local) > 64 {
		return "", "", errors.New("the part before @ must be 1 to 64 characters")
	}
	if strings.HasPrefix(host, "[") {
		return "", "", errors.New("an IP address literal is not accepted as a domain")
	}
	domain, err = emaildomain.Normalize(host)
	if err != nil {
		return "", "", fmt.Errorf("domain: %w", err)
	}
	return local + "@" + domain, domain, nil
}

// Key is how an address is kept on the suppression list: lowercased whole, since mailbox
// providers treat local parts without regard to case.
func Key(address string) string { return strings.ToLower(address) }

// DomainState is what DNS says of a recipient domain.
type DomainState int

const (
	// DomainTakesMail: it has MX records (other than a null MX), or an address record.
	DomainTakesMail DomainState = iota
	// DomainNoMX: no MX, but an A/AAAA record (RFC 5321 §5.1: mail goes to that host).
	DomainNoMX
	// DomainNotFound: no MX and no A/AAAA record, or a null MX (RFC 7505): no mail can reach it.
	DomainNotFound
	// DomainUnknown: DNS did not answer.
	DomainUnknown
)

// Domain looks up whether domain takes mail.
func (c *Checker) Domain(ctx context.Context, domain string) DomainState {
	mxs, err := c.Resolver.LookupMX(ctx, domain)
	switch {
	case err == nil && len(mxs) > 0:
		if len(mxs) == 1 && (mxs[0].Host == "." || mxs[0].Host == "") {
			return DomainNotFound // a null MX: the domain says it takes no mail
		}
		return DomainTakesMail
	case err != nil && !dnsresolve.IsNotFound(err):
		return DomainUnknown
	}
	ips, err := c.Resolver.LookupIP(ctx, domain)
	switch {
	case err == nil && len(ips) > 0:
		return DomainNoMX
	case err != nil && !dnsresolve.IsNotFound(err):
		return DomainUnknown
	default:
		return DomainNotFound
	}
}

// Entry is an address on a project's suppression list.
type Entry struct {
	Address   string
	Reason    string
	MessageID string
	// BroadcastID is the broadcast whose one-click link made an unsubscribe.
	BroadcastID string
	Detail      string
	CreatedAt   time.Time
	Until       *time.Time
}

// Suppressed returns the entry that keeps address off in the project's mode, nil when none does.
func (c *Checker) Suppressed(ctx context.Context, project string, testMode bool, address string) (*Entry, error) {
	row, err := db.Planned(c.Pool).GetSuppression(ctx, db.GetSuppressionParams{Project: project, TestMode: testMode,
		Address: Key(address), Now: c.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the suppression list: %w", err)
	}
	return entryOf(row), nil
}

// Suppress puts address on the project's list for reason; a soft bounce keeps it off for
// SoftBounceFor, and never replaces a stronger reason already there.
func (c *Checker) Suppress(ctx context.Context, project string, testMode bool, address, reason, messageID, detail string) error {
	now := c.now()
	var until *time.Time
	if reason == ReasonSoftBounce {
		t := now.Add(SoftBounceFor)
		until = &t
	}
	var msg *string
	if messageID != "" {
		msg = &messageID
	}
	if len(detail) > 1000 {
		detail = detail[:1000]
	}
	if err := db.Planned(c.Pool).Suppress(ctx, db.SuppressParams{Project: project, TestMode: testMode, Address: Key(address),
		Reason: reason, MessageID: msg, Detail: detail, CreatedAt: now, Until: until}); err != nil {
		return fmt.Errorf("suppress an address: %w", err)
	}
	return nil
}

// Unsubscribe puts address on the project's list in its mode as unsubscribed from broadcastID's
// email (its one-click link). An entry already in force stays as it is, so a second unsubscribe
// changes nothing; only a soft bounce gives way.
func (c *Checker) Unsubscribe(ctx context.Context, project string, testMode bool, address, broadcastID string) error {
	if err := db.Planned(c.Pool).Unsubscribe(ctx, db.UnsubscribeParams{Project: project, TestMode: testMode, Address: Key(address),
		BroadcastID: &broadcastID, CreatedAt: c.now()}); err != nil {
		return fmt.Errorf("record an unsubscribe: %w", err)
	}
	return nil
}

func entryOf(row db.EmailSuppression) *Entry {
	e := &Entry{Address: row.Address, Reason: row.Reason, Detail: row.Detail, CreatedAt: row.CreatedAt.UTC(), Until: row.Until}
	if row.MessageID != nil {
		e.MessageID = *row.MessageID
	}
	if row.BroadcastID != nil {
		e.BroadcastID = *row.BroadcastID
	}
	return e
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC()
	}
	return time.Now().UTC()
}
