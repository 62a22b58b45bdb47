package urlcheck

import (
	"context"
	"time"

	"github.com/switchboard-io/switchboard/internal/periodic"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// The error codes of a message refused for a URL (the message's errorCode).
const (
	ErrURLRejected  = "URL_REJECTED"
	ErrURLMalicious = "URL_MALICIOUS"
)

// Gate is what a message's URLs allow.
type Gate struct {
	// Code and Reason say why the message may not go (a rejected or malicious URL, named); ""
	// when none is.
	Code, Reason string
	// Waiting are the message's URLs that wait for a verdict: it waits with them.
	Waiting []string
}

// Check is the gate of a message with links (as risk.Features reads them) of project: each URL
// is the project's record of it, made and decided now when new (a broadcast's URL once, then
// read). A URL that is not one (a bare word the link finder took) is left alone.
func (s *Service) Check(ctx context.Context, project string, testMode bool, links []string) (Gate, error) {
	var g Gate
	seen := map[string]bool{}
	for _, raw := range links {
		norm, host, domain, err := Normalize(withScheme(raw))
		if err != nil || seen[norm] {
			continue
		}
		seen[norm] = true
		row, _, err := s.record(ctx, project, testMode, norm, host, domain)
		if err != nil {
			return Gate{}, err
		}
		switch row.Status {
		case StatusApproved:
		case StatusRejected, StatusMalicious:
			if g.Code == "" {
				g.Code = ErrURLRejected
				if row.Status == StatusMalicious {
					g.Code = ErrURLMalicious
				}
				g.Reason = "The message links to " + norm + ", which URL verification " + row.Status + deref(row.Reason, ": ") +
					" (GET /v1/urls/" + row.ID + "; a rejected URL may be escalated)."
			}
		default:
			g.Waiting = append(g.Waiting, norm)
		}
	}
	return g, nil
}

func withScheme(raw string) string {
	for _, p := range []string{"http://", "https://", "HTTP://", "HTTPS://"} {
		if len(raw) >= len(p) && raw[:len(p)] == p {
			return raw
		}
	}
	return "http://" + raw
}

func deref(s *string, prefix string) string {
	if s == nil || *s == "" {
		return ""
	}
	return prefix + *s
}

// Rechecker looks pending URLs up again (a lookup that failed, a threat intelligence that was
// down): a worker runs it.
type Rechecker struct {
	Service *Service
	// Every is how often, and how long a URL waits before it is looked up again (a minute
	// when zero).
	Every time.Duration
}

// Start implements manager.Runnable.
func (r *Rechecker) Start(ctx context.Context) error {
	every := r.Every
	if every <= 0 {
		every = time.Minute
	}
	periodic.Run(ctx, every, every, func(ctx context.Context) {
		s := r.Service
		rows, err := db.Planned(s.Pool).PendingVerifiedURLs(ctx, db.PendingVerifiedURLsParams{Before: s.now().Add(-every), MaxRows: 500})
		if err != nil {
			if ctx.Err() == nil {
				s.Log.Error(err, "listing pending URLs")
			}
			return
		}
		for _, row := range rows {
			if _, err := s.decide(ctx, row); err != nil && ctx.Err() == nil {
				s.Log.Error(err, "looking a pending URL up again", "url", row.ID)
			}
		}
	})
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: any worker may.
func (r *Rechecker) NeedLeaderElection() bool { return false }
