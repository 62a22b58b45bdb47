package template

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// DefaultSyncEvery is how often a Syncer reads the accounts unless told otherwise.
const DefaultSyncEvery = time.Hour

// Syncer keeps templates in line with their WhatsApp business accounts between webhooks: every
// Every it reads the accounts of every project's senders and applies the verdicts and
// categories that changed (a webhook lost, or Meta's change made while Switchboard was down),
// each raising its template.status_changed as a webhook would. It imports nothing: importing an
// account's other templates is what POST /v1/templates/sync does when a client asks. It runs on
// the leader only.
type Syncer struct {
	Service *Service
	Every   time.Duration
	Log     logr.Logger
}

// Start runs the syncs until ctx ends; the first one after a tenth of Every, so a restart does
// not read every account at once with everything else starting.
func (s *Syncer) Start(ctx context.Context) error {
	every := s.Every
	if every <= 0 {
		every = DefaultSyncEvery
	}
	timer := time.NewTimer(every / 10)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		s.SyncAll(ctx)
		timer.Reset(every)
	}
}

// NeedLeaderElection: one replica syncs.
func (s *Syncer) NeedLeaderElection() bool { return true }

// SyncAll syncs every project once; what could not be read is logged (without tokens: the
// transport's errors never carry them).
func (s *Syncer) SyncAll(ctx context.Context) {
	var projects v1alpha1.ProjectList
	if err := s.Service.client.List(ctx, &projects); err != nil {
		s.Log.Error(err, "template sync: list projects")
		return
	}
	for _, p := range projects.Items {
		if ctx.Err() != nil {
			return
		}
		res, err := s.Service.sync(ctx, p.Namespace, nil, false)
		if err != nil {
			s.Log.Error(err, "template sync", "project", p.Namespace)
			continue
		}
		for _, e := range res.Errors {
			s.Log.Info("template sync: an account or template could not be synced", "project", p.Namespace, "error", e)
		}
		if res.Updated+res.Linked > 0 {
			s.Log.Info("template sync", "project", p.Namespace, "updated", res.Updated, "linked", res.Linked)
		}
	}
}
