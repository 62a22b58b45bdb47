package knowledge

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// IndexListener keeps the process's vector indexes current: another replica's change of an
// agent's chunks drops the index it names (manager runnable, every replica).
type IndexListener struct {
	Service *Service
}

// Start listens until ctx ends.
func (l *IndexListener) Start(ctx context.Context) error {
	return l.Service.Index.Listen(ctx, l.Service.Pool, NotifyChannel, l.Service.Log.WithName("index"))
}

// NeedLeaderElection: every replica holds indexes of its own.
func (l *IndexListener) NeedLeaderElection() bool { return false }

// SweepEvery is how often the knowledge of deleted agents is deleted, and stale vectors
// re-embedded.
const SweepEvery = time.Minute

// Sweeper keeps agents' knowledge in step with the agents: it deletes the knowledge bases of
// agents that are gone (deleted with kubectl, or by a GitOps tool, as well as through the API;
// an agent deleted and made again between two sweeps keeps its documents), and processes again
// the documents whose vectors are not of the model the agent embeds with now (its provider or
// the installation's embedding Provider changed).
type Sweeper struct {
	Service *Service
	// Live reads Agents from the API server, not the cache: a cache still filling must not
	// make every agent look deleted.
	Live client.Reader
	// Every is how often it sweeps; zero: SweepEvery.
	Every time.Duration
}

// Start sweeps every SweepEvery until ctx ends.
func (s *Sweeper) Start(ctx context.Context) error {
	every := s.Every
	if every <= 0 {
		every = SweepEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := s.sweep(ctx); err != nil && ctx.Err() == nil {
			s.Service.Log.Error(err, "delete the knowledge of deleted agents")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// NeedLeaderElection: one replica sweeps.
func (s *Sweeper) NeedLeaderElection() bool { return true }

func (s *Sweeper) sweep(ctx context.Context) error {
	owners, err := db.Planned(s.Service.Pool).KnowledgeOwners(ctx)
	if err != nil {
		return err
	}
	for _, o := range owners {
		var a v1alpha1.Agent
		err := s.Live.Get(ctx, client.ObjectKey{Namespace: o.Project, Name: o.Agent}, &a)
		if !apierrors.IsNotFound(err) {
			if err != nil {
				return err
			}
			if err := s.Service.reembed(ctx, &a); err != nil {
				return err
			}
			continue
		}
		if err := s.Service.Forget(ctx, o.Project, o.Agent); err != nil {
			return err
		}
		s.Service.Log.Info("deleted the knowledge of a deleted agent", "project", o.Project, "agent", o.Agent)
	}
	return nil
}
