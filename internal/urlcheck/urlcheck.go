// Package urlcheck verifies the URLs projects send (docs/urls.md). Every URL in a live SMS or
// email body is verified before the message goes: a URL shortener is always rejected, the
// RiskPolicy's blockedDomains reject and its allowedDomains approve, and anything else is looked
// up in the installation's threat intelligence (a webrisk Provider: Google's Web Risk). A
// message whose URL waits for a verdict is held; one with a rejected or malicious URL fails.
// Verdicts are kept per project (and mode) and lookups per URL for the whole installation, so a
// broadcast of 100,000 messages with one link looks it up once.
package urlcheck

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/net/publicsuffix"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/risk"
)

// The statuses of a URL (the client's VerifiedURLStatus).
const (
	StatusPending   = "pending"
	StatusApproved  = "approved"
	StatusRejected  = "rejected"
	StatusEscalated = "escalated"
	StatusMalicious = "malicious"
)

// Statuses are the statuses a list filters by.
var Statuses = []string{StatusPending, StatusApproved, StatusRejected, StatusEscalated, StatusMalicious}

// How a URL was decided (the client's approvalType).
const (
	ApprovalManual      = "manual"
	ApprovalAutoWebRisk = "auto_web_risk"
)

// The RiskPolicy lists that decide URLs.
const (
	ListBlockedDomains = "blockedDomains"
	ListAllowedDomains = "allowedDomains"
)

// How long verdicts are kept: a safe lookup (Web Risk gives no lifetime for one), and a
// threat's when Web Risk gives none.
const (
	safeFor   = 24 * time.Hour
	threatFor = time.Hour
)

// lookupTimeout bounds one lookup made while a caller waits.
const lookupTimeout = 5 * time.Second

// Lookup asks the installation's threat intelligence about a URL (the transport registry's
// webrisk Provider).
type Lookup interface {
	// LookupURL returns the threats the URL is known for (none: safe) and until when the answer
	// stands (zero: the caller chooses). ok is false when the installation has no threat
	// intelligence.
	LookupURL(ctx context.Context, u string) (threats []string, until time.Time, ok bool, err error)
}

// Policies finds a project's RiskPolicy (its lists).
type Policies interface {
	For(ctx context.Context, project string) (*risk.Policy, error)
}

// Service verifies URLs.
type Service struct {
	Pool     *pgxpool.Pool
	Lookup   Lookup
	Policies Policies
	Clock    func() time.Time
	Log      logr.Logger
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC()
	}
	return time.Now().UTC()
}

// URL is a URL as the API shows it (the client's VerifiedURL).
type URL struct {
	ID           string    `json:"id"`
	URL          string    `json:"url"`
	Domain       string    `json:"domain"`
	Status       string    `json:"status"`
	ApprovalType string    `json:"approvalType,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

func view(r db.VerifiedUrl) URL {
	v := URL{ID: r.ID, URL: r.Url, Domain: r.Domain, Status: r.Status, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if r.ApprovalType != nil {
		v.ApprovalType = *r.ApprovalType
	}
	return v
}

// Normalize reads raw as a URL Switchboard verifies: absolute http or https with a host; the
// scheme and host in lower case, without the fragment (it never reaches the server). It returns
// the URL, its host and its registrable domain.
func Normalize(raw string) (string, string, string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" { // Parse lowers the scheme
		return "", "", "", errors.New("must be an absolute http or https URL, e.g. https://example.com/offer")
	}
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	host := strings.TrimSuffix(u.Hostname(), ".")
	domain, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		domain = host
	}
	return u.String(), host, domain, nil
}

// Submit verifies a URL for the key's project (POST /v1/urls): it is decided now when it can be
// (shortener, lists, a lookup), else it stays pending and is looked up again. A URL submitted
// before is answered as it stands; created says it is new.
func (s *Service) Submit(ctx context.Context, key apikey.Key, raw string) (URL, bool, error) {
	norm, host, domain, err := Normalize(raw)
	if err != nil {
		return URL{}, false, apperror.InvalidFields(apperror.FieldError{Path: "url", Message: err.Error()})
	}
	row, created, err := s.record(ctx, key.Project, key.TestMode(), norm, host, domain)
	if err != nil {
		return URL{}, false, err
	}
	return view(row), created, nil
}

// record finds or makes the project's record of a normalized URL, deciding a new one.
func (s *Service) record(ctx context.Context, project string, testMode bool, norm, host, domain string) (db.VerifiedUrl, bool, error) {
	q := db.Planned(s.Pool)
	if row, err := q.VerifiedURLByURL(ctx, db.VerifiedURLByURLParams{Project: project, TestMode: testMode, Url: norm}); err == nil {
		return row, false, nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return db.VerifiedUrl{}, false, err
	}
	id, err := randid.Name("url_", 20)
	if err != nil {
		return db.VerifiedUrl{}, false, err
	}
	row, err := q.InsertVerifiedURL(ctx, db.InsertVerifiedURLParams{ID: id, Project: project, TestMode: testMode, Url: norm, Host: host,
		Domain: domain, Now: s.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		// Another request made it meanwhile.
		row, err = q.VerifiedURLByURL(ctx, db.VerifiedURLByURLParams{Project: project, TestMode: testMode, Url: norm})
		return row, false, err
	}
	if err != nil {
		return db.VerifiedUrl{}, false, err
	}
	row, err = s.decide(ctx, row)
	return row, true, err
}

// verdict is what the automatic checks say of a URL.
type verdict struct {
	status, approval, reason string
}

// check runs the automatic checks on a pending URL: a shortener, the policy's lists, then the
// lookup (the sandbox's for test mode). A lookup that cannot be made leaves it pending.
func (s *Service) check(ctx context.Context, row db.VerifiedUrl) (verdict, error) {
	if risk.Shorteners[row.Host] || risk.Shorteners[row.Domain] {
		return verdict{StatusRejected, ApprovalAutoWebRisk, row.Host + " shortens links, which hides where they go: URL shorteners are always rejected"}, nil
	}
	if s.Policies != nil {
		pol, err := s.Policies.For(ctx, row.Project)
		if err != nil {
			return verdict{}, err
		}
		if pol != nil {
			if listed(pol.Lists[ListBlockedDomains], row.Host, row.Domain) {
				return verdict{StatusRejected, ApprovalManual, row.Domain + " is on the RiskPolicy's blockedDomains"}, nil
			}
			if listed(pol.Lists[ListAllowedDomains], row.Host, row.Domain) {
				return verdict{StatusApproved, ApprovalManual, ""}, nil
			}
		}
	}
	if row.TestMode {
		return sandboxVerdict(row.Host), nil
	}
	threats, found, err := s.lookup(ctx, row.Url)
	switch {
	case err != nil:
		s.Log.Info("a URL lookup failed: the URL stays pending and is looked up again", "url", row.ID, "error", err.Error())
		return verdict{status: StatusPending}, nil
	case !found:
		return verdict{status: StatusApproved}, nil // no threat intelligence here: shorteners and lists only
	case len(threats) > 0:
		return verdict{StatusMalicious, ApprovalAutoWebRisk, "Web Risk lists it as " + strings.Join(threats, ", ")}, nil
	}
	return verdict{status: StatusApproved, approval: ApprovalAutoWebRisk}, nil
}

// sandboxVerdict is what test keys get (docs/urls.md#sandbox): hosts under malicious.test are
// malicious, under pending.test stay pending, anything else is approved.
func sandboxVerdict(host string) verdict {
	switch {
	case host == "malicious.test" || strings.HasSuffix(host, ".malicious.test"):
		return verdict{StatusMalicious, ApprovalAutoWebRisk, "the sandbox lists it as MALWARE"}
	case host == "pending.test" || strings.HasSuffix(host, ".pending.test"):
		return verdict{status: StatusPending}
	}
	return verdict{status: StatusApproved, approval: ApprovalAutoWebRisk}
}

// listed tells whether host or domain is on list (a domain on it covers its subdomains).
func listed(list []string, host, domain string) bool {
	for _, d := range list {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "*."))
		if d != "" && (host == d || domain == d || strings.HasSuffix(host, "."+d)) {
			return true
		}
	}
	return false
}

// lookup asks the threat intelligence about u through the installation's cache; found is false
// when there is none.
func (s *Service) lookup(ctx context.Context, u string) ([]string, bool, error) {
	if s.Lookup == nil {
		return nil, false, nil
	}
	q := db.Planned(s.Pool)
	now := s.now()
	if v, err := q.URLVerdict(ctx, db.URLVerdictParams{Url: u, Now: now}); err == nil {
		return v.Threats, true, nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	threats, until, ok, err := s.Lookup.LookupURL(ctx, u)
	if err != nil || !ok {
		return nil, ok, err
	}
	if until.IsZero() || !until.After(now) {
		until = now.Add(safeFor)
		if len(threats) > 0 {
			until = now.Add(threatFor)
		}
	}
	if threats == nil {
		threats = []string{}
	}
	if err := q.PutURLVerdict(ctx, db.PutURLVerdictParams{Url: u, Threats: threats, Now: now, ExpiresAt: until}); err != nil {
		return nil, true, err
	}
	return threats, true, nil
}

// decide records the automatic verdict on a pending row.
func (s *Service) decide(ctx context.Context, row db.VerifiedUrl) (db.VerifiedUrl, error) {
	v, err := s.check(ctx, row)
	if err != nil || v.status == StatusPending {
		return row, err
	}
	return s.set(ctx, row, v, "", []string{StatusPending})
}

// set records v on row when it is in one of from; unchanged otherwise.
func (s *Service) set(ctx context.Context, row db.VerifiedUrl, v verdict, by string, from []string) (db.VerifiedUrl, error) {
	out, err := db.Planned(s.Pool).DecideVerifiedURL(ctx, db.DecideVerifiedURLParams{ID: row.ID, Status: v.status, ApprovalType: nonEmpty(v.approval),
		Reason: nonEmpty(v.reason), DecidedBy: nonEmpty(by), Now: s.now(), FromStatuses: from})
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Planned(s.Pool).VerifiedURLByID(ctx, row.ID) // decided meanwhile
	}
	if err != nil {
		return row, err
	}
	return out, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Get reads one of the key's project's URLs.
func (s *Service) Get(ctx context.Context, key apikey.Key, id string) (URL, error) {
	row, err := db.Planned(s.Pool).GetVerifiedURL(ctx, db.GetVerifiedURLParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
	if errors.Is(err, pgx.ErrNoRows) {
		return URL{}, apperror.New(apperror.NotFound, "not_found", "URL not found.")
	}
	if err != nil {
		return URL{}, err
	}
	return view(row), nil
}

// Page is where a list continues (before this creation time and id; nil from the newest), and
// its status filter ("" for all).
type Page struct {
	Status     string
	BeforeTime *time.Time
	BeforeID   *string
	Limit      int32
}

// List lists the project's URLs, newest first.
func (s *Service) List(ctx context.Context, key apikey.Key, p Page) ([]URL, error) {
	if p.Status != "" && !slices.Contains(Statuses, p.Status) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "status", Message: "must be one of " + strings.Join(Statuses, ", ")})
	}
	rows, err := db.Planned(s.Pool).ListVerifiedURLs(ctx, db.ListVerifiedURLsParams{Project: key.Project, TestMode: key.TestMode(),
		Status: nonEmpty(p.Status), BeforeTime: p.BeforeTime, BeforeID: p.BeforeID, MaxRows: p.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]URL, len(rows))
	for i, r := range rows {
		out[i] = view(r)
	}
	return out, nil
}

// Escalate sends a rejected URL to the installation's operators for review (`switchboard review
// urls`); any other status is 400.
func (s *Service) Escalate(ctx context.Context, key apikey.Key, id, reason string) (URL, error) {
	if strings.TrimSpace(reason) == "" {
		return URL{}, apperror.InvalidFields(apperror.FieldError{Path: "reason", Message: "is required: say why the URL should be reviewed"})
	}
	if len([]rune(reason)) > 1000 {
		return URL{}, apperror.InvalidFields(apperror.FieldError{Path: "reason", Message: "must be at most 1000 characters"})
	}
	cur, err := s.Get(ctx, key, id)
	if err != nil {
		return URL{}, err
	}
	row, err := db.Planned(s.Pool).EscalateVerifiedURL(ctx, db.EscalateVerifiedURLParams{ID: id, EscalationReason: &reason, Now: s.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return URL{}, apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Only a rejected URL is escalated; this one is %s.", cur.Status))
	}
	if err != nil {
		return URL{}, err
	}
	return view(row), nil
}

// Escalated lists the URLs waiting for an operator (every project's), oldest first.
func (s *Service) Escalated(ctx context.Context, limit int32) ([]db.VerifiedUrl, error) {
	return db.Planned(s.Pool).EscalatedVerifiedURLs(ctx, limit)
}

// Review is an operator's decision on an escalated (or pending) URL: approved or rejected,
// approvalType manual. by names the operator.
func (s *Service) Review(ctx context.Context, id string, approve bool, by, reason string) (db.VerifiedUrl, error) {
	row, err := db.Planned(s.Pool).VerifiedURLByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return db.VerifiedUrl{}, apperror.New(apperror.NotFound, "not_found", "URL not found.")
	}
	if err != nil {
		return db.VerifiedUrl{}, err
	}
	v := verdict{StatusRejected, ApprovalManual, reason}
	if approve {
		v = verdict{StatusApproved, ApprovalManual, ""}
	}
	if v.reason == "" && !approve {
		v.reason = "an operator rejected it"
	}
	out, err := s.set(ctx, row, v, by, []string{StatusPending, StatusEscalated})
	if err == nil && out.Status != v.status {
		return out, apperror.New(apperror.Conflict, "conflict", fmt.Sprintf("URL %s is %s, not waiting for a review.", id, out.Status))
	}
	return out, err
}
