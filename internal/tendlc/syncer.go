package tendlc

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// liveAskEvery bounds how often a live registration is asked about: the registry decides in
// days, and each question is a call to the provider's API.
const liveAskEvery = 5 * time.Minute

// Syncer records the registrar's verdicts on pending brands and campaigns without anyone asking
// (POST .../sync asks at once).
type Syncer struct {
	Service *Service
	Log     logr.Logger
	// Every is how often pending registrations are looked at.
	Every time.Duration

	asked map[string]time.Time
}

// Start syncs every Every until ctx ends; the elected manager runs it.
func (y *Syncer) Start(ctx context.Context) error {
	t := time.NewTicker(y.Every)
	defer t.Stop()
	for {
		y.SyncOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// SyncOnce looks once at what is pending.
func (y *Syncer) SyncOnce(ctx context.Context) {
	if y.asked == nil {
		y.asked = map[string]time.Time{}
	}
	rows, err := db.Planned(y.Service.pool).PendingTenDLC(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			y.Log.Error(err, "list pending 10DLC registrations")
		}
		return
	}
	now := y.Service.now()
	for _, r := range rows {
		if !r.TestMode && now.Sub(y.asked[r.ID]) < liveAskEvery {
			continue
		}
		y.asked[r.ID] = now
		if r.Kind == "brand" {
			_, err = y.Service.SyncBrand(ctx, r.Project, r.TestMode, r.ID)
		} else {
			_, err = y.Service.SyncCampaign(ctx, r.Project, r.TestMode, r.ID)
		}
		if err != nil && ctx.Err() == nil {
			y.Log.Error(err, "sync 10DLC registration", "kind", r.Kind, "id", r.ID, "project", r.Project)
		}
	}
	for id, at := range y.asked {
		if now.Sub(at) > 2*liveAskEvery {
			delete(y.asked, id)
		}
	}
}
