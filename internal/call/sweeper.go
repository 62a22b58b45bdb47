package call

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Sweeper ends the calls nobody holds any more: one whose relay's process died and that no
// other took over (its lease ran out), and one the provider never reported on (a lost status
// callback). It asks the provider first: a call it says ended ends as it says; one still up
// is hung up, its transcript kept, with endReason relay_lost.
type Sweeper struct {
	Service *Service
	// Every is how often it looks; 0 is 15 s.
	Every time.Duration
	// Quiet is how long a call with no relay may go without news before it is looked at; 0 is
	// two minutes.
	Quiet time.Duration
}

// Start implements manager.Runnable.
func (w *Sweeper) Start(ctx context.Context) error {
	every := w.Every
	if every <= 0 {
		every = 15 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
				w.Service.Log.Error(err, "sweep calls")
			}
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica may sweep; each
// end is one transaction that ends a call once.
func (w *Sweeper) NeedLeaderElection() bool { return false }

// Sweep looks at the stale calls once and returns how many it ended.
func (w *Sweeper) Sweep(ctx context.Context) (int, error) {
	s := w.Service
	quiet := w.Quiet
	if quiet <= 0 {
		quiet = 2 * time.Minute
	}
	now := s.now()
	q := db.Planned(s.Pool)
	if err := q.FailStaleCallExecutions(ctx, &now); err != nil {
		return 0, fmt.Errorf("fail the executions of lost calls: %w", err)
	}
	stale, err := q.StaleCalls(ctx, db.StaleCallsParams{LeaseBefore: &now, QuietBefore: now.Add(-quiet), MaxRows: 100})
	if err != nil {
		return 0, fmt.Errorf("list stale calls: %w", err)
	}
	n := 0
	for _, c := range stale {
		ended, err := w.sweep(ctx, c)
		if err != nil {
			s.Log.Error(err, "sweep a call", "call", c.ID)
			continue
		}
		if ended {
			n++
		}
	}
	return n, nil
}

func (w *Sweeper) sweep(ctx context.Context, c db.Call) (bool, error) {
	s := w.Service
	if c.ProviderCallID == nil {
		_, ended, err := s.end(ctx, c.ID, ending{status: StatusFailed, reason: EndFailed, message: "The call was never placed."})
		return ended, err
	}
	carrier, err := s.carrierOf(ctx, c.Provider)
	if err != nil {
		return false, err
	}
	p, err := carrier.Status(ctx, *c.ProviderCallID)
	if err != nil && !errors.Is(err, ErrUnknownCall) {
		return false, err
	}
	switch {
	case err == nil && p.Status != "" && !Active(p.Status):
		_, ended, err := s.end(ctx, c.ID, ending{status: p.Status, reason: map[string]string{StatusCompleted: EndRelayLost,
			StatusBusy: EndBusy, StatusNoAnswer: EndNoAnswer, StatusCanceled: EndCanceled}[p.Status], duration: p.Duration})
		return ended, err
	case c.Status == StatusInProgress || (err == nil && p.Status == StatusInProgress):
		if err := carrier.Hangup(ctx, *c.ProviderCallID, true); err != nil && !errors.Is(err, ErrUnknownCall) {
			return false, err
		}
		_, ended, err := s.end(ctx, c.ID, ending{status: StatusCompleted, reason: EndRelayLost, duration: p.Duration})
		return ended, err
	case errors.Is(err, ErrUnknownCall):
		_, ended, err := s.end(ctx, c.ID, ending{status: StatusFailed, reason: EndFailed, message: "The provider has no such call."})
		return ended, err
	}
	return false, db.Planned(s.Pool).TouchCall(ctx, db.TouchCallParams{ID: c.ID, Now: s.now()}) // still ringing: look again later
}

// agentOf is the agent holding c; nil when it is gone.
func (s *Service) agentOf(ctx context.Context, c db.Call) (*v1alpha1.Agent, error) {
	var a v1alpha1.Agent
	err := s.Reader.Get(ctx, client.ObjectKey{Namespace: c.Project, Name: c.Agent}, &a)
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("read agent %s/%s: %w", c.Project, c.Agent, err)
	}
	if err != nil {
		return nil, nil
	}
	return &a, nil
}
