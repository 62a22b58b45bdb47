// Package circuit keeps each Provider's circuit breaker, shared by every worker through Postgres
// (docs/providers.md#circuit-breaker). After a number of calls in a row that a Provider did not
// take, its circuit opens: routes put it after their other Providers. Once it has been open for
// a while, one call probes it (half-open): taken, the circuit closes; not taken, it opens again.
//
// Only failures write: a healthy Provider has no row, and a worker learns the circuits that are
// not closed from one small query a second, so a send through a healthy Provider costs nothing.
package circuit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// States of a circuit.
const (
	Closed   = "closed"
	Open     = "open"
	HalfOpen = "half_open"
)

// Defaults of a Provider that sets no circuitBreaker.
const (
	DefaultFailures = 5
	DefaultOpenFor  = 30 * time.Second
)

// refreshEvery is how stale a worker's view of the circuits may be.
const refreshEvery = time.Second

// Settings are one Provider's breaker settings.
type Settings struct {
	// Failures in a row open the circuit; OpenFor is how long it stays open before a probe.
	Failures int
	OpenFor  time.Duration
}

func (s Settings) withDefaults() Settings {
	if s.Failures < 1 {
		s.Failures = DefaultFailures
	}
	if s.OpenFor <= 0 {
		s.OpenFor = DefaultOpenFor
	}
	return s
}

// Breakers reads and records the circuits.
type Breakers struct {
	pool *pgxpool.Pool
	log  logr.Logger
	now  func() time.Time

	mu        sync.Mutex
	view      map[string]db.ProviderCircuit // the circuits not closed, or with failures
	viewAt    time.Time
	refreshed chan struct{} // closed when a refresh in flight ends; nil when none is

	state       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
}

// New returns the breakers of the installation whose database is pool. reg, when not nil,
// registers switchboard_provider_circuit_state and switchboard_provider_circuit_transitions_total.
func New(pool *pgxpool.Pool, log logr.Logger, reg prometheus.Registerer) *Breakers {
	b := &Breakers{pool: pool, log: log, now: time.Now,
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "switchboard_provider_circuit_state",
			Help: "The circuit breaker of a Provider (namespace/name), as this process last saw it: 0 closed, 1 open, 2 half-open."},
			[]string{"provider"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_provider_circuit_transitions_total",
			Help: "Changes of a Provider's circuit breaker this process made, by the state it moved to."},
			[]string{"provider", "state"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{b.state, b.transitions} {
			if err := reg.Register(c); err != nil {
				var dup prometheus.AlreadyRegisteredError
				if !errors.As(err, &dup) {
					log.Error(err, "register circuit metrics")
				}
			}
		}
	}
	return b
}

// SetClock replaces the clock (tests).
func (b *Breakers) SetClock(now func() time.Time) { b.now = now }

// State is the circuit of provider as this worker sees it (at most a second old).
func (b *Breakers) State(ctx context.Context, provider string) (string, error) {
	view, err := b.current(ctx)
	if err != nil {
		return "", err
	}
	c, ok := view[provider]
	if !ok {
		return Closed, nil
	}
	return c.State, nil
}

// Usable says whether a call may go to provider now: its circuit is closed, or open long enough
// and this caller took its one probe (probe false: do not take it, the caller has a closed one).
func (b *Breakers) Usable(ctx context.Context, provider string, s Settings, probe bool) (bool, error) {
	view, err := b.current(ctx)
	if err != nil {
		return false, err
	}
	c, ok := view[provider]
	if !ok || c.State == Closed {
		return true, nil
	}
	now := b.now()
	if !probe || c.OpenUntil == nil || now.Before(*c.OpenUntil) {
		return false, nil
	}
	s = s.withDefaults()
	_, err = db.Planned(b.pool).ClaimProbe(ctx, db.ClaimProbeParams{Provider: provider, Until: ptr(now.Add(s.OpenFor)), Now: now})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim the probe of provider %s: %w", provider, err)
	}
	b.forget()
	b.moved(provider, HalfOpen)
	return true, nil
}

// Taken records that provider took a call (or refused the message itself, which proves it
// works): its circuit closes and its failures are forgotten. Without failures on record this
// writes nothing.
func (b *Breakers) Taken(ctx context.Context, provider string) error {
	view, err := b.current(ctx)
	if err != nil {
		return err
	}
	if c, ok := view[provider]; !ok || (c.State == Closed && c.Failures == 0) {
		return nil
	}
	var from string
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		c, err := q.GetCircuitForUpdate(ctx, provider)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		from = c.State
		return q.PutCircuit(ctx, db.PutCircuitParams{Provider: provider, Failures: 0, State: Closed, UpdatedAt: b.now()})
	})
	if err != nil {
		return fmt.Errorf("close the circuit of provider %s: %w", provider, err)
	}
	b.forget()
	if from != "" && from != Closed {
		b.log.Info("provider circuit closed", "provider", provider, "was", from)
		b.moved(provider, Closed)
	}
	return nil
}

// Failed records a call provider did not take, or did not answer: at s.Failures in a row, or
// when it was the probe, the circuit opens for s.OpenFor.
func (b *Breakers) Failed(ctx context.Context, provider string, s Settings) error {
	s = s.withDefaults()
	now := b.now()
	var from, to string
	var failures int32
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		c, err := q.GetCircuitForUpdate(ctx, provider)
		if errors.Is(err, pgx.ErrNoRows) {
			c, err = db.ProviderCircuit{Provider: provider, State: Closed}, nil
		}
		if err != nil {
			return err
		}
		from, to, failures = c.State, c.State, c.Failures+1
		openUntil := c.OpenUntil
		if c.State == HalfOpen || (c.State == Closed && int(failures) >= s.Failures) {
			to, openUntil = Open, ptr(now.Add(s.OpenFor))
		}
		return q.PutCircuit(ctx, db.PutCircuitParams{Provider: provider, Failures: failures, State: to, OpenUntil: openUntil, UpdatedAt: now})
	})
	if err != nil {
		return fmt.Errorf("count a failure of provider %s: %w", provider, err)
	}
	b.forget()
	if to != from {
		b.log.Info("provider circuit opened", "provider", provider, "was", from, "failuresInARow", failures, "openFor", s.OpenFor.String())
		b.moved(provider, to)
	}
	return nil
}

// Record is Taken (taken) or Failed, for a caller that cannot act on the breaker's own
// trouble: it is logged, and the call's outcome stands.
func (b *Breakers) Record(ctx context.Context, provider string, s Settings, taken bool) {
	var err error
	if taken {
		err = b.Taken(ctx, provider)
	} else {
		err = b.Failed(ctx, provider, s)
	}
	if err != nil {
		b.log.Error(err, "record a provider's circuit", "provider", provider)
	}
}

// current is the view of the circuits, read again when older than refreshEvery; concurrent
// callers share one read.
func (b *Breakers) current(ctx context.Context) (map[string]db.ProviderCircuit, error) {
	for {
		b.mu.Lock()
		if b.view != nil && b.now().Sub(b.viewAt) < refreshEvery {
			v := b.view
			b.mu.Unlock()
			return v, nil
		}
		if wait := b.refreshed; wait != nil {
			b.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		b.refreshed = done
		b.mu.Unlock()

		rows, err := db.Planned(b.pool).TroubledCircuits(ctx)
		view := make(map[string]db.ProviderCircuit, len(rows))
		for _, r := range rows {
			view[r.Provider] = r
		}
		b.mu.Lock()
		b.refreshed = nil
		if err == nil {
			for p, c := range b.view {
				if _, still := view[p]; !still && c.State != Closed {
					b.state.WithLabelValues(p).Set(0)
				}
			}
			for p, c := range view {
				b.state.WithLabelValues(p).Set(gauge(c.State))
			}
			b.view, b.viewAt = view, b.now()
		}
		b.mu.Unlock()
		close(done)
		if err != nil {
			return nil, fmt.Errorf("read provider circuits: %w", err)
		}
		return view, nil
	}
}

// forget makes the next read go to Postgres: this worker just changed a circuit.
func (b *Breakers) forget() {
	b.mu.Lock()
	b.viewAt = time.Time{}
	b.mu.Unlock()
}

func (b *Breakers) moved(provider, to string) {
	b.transitions.WithLabelValues(provider, to).Inc()
	b.state.WithLabelValues(provider).Set(gauge(to))
}

func gauge(state string) float64 {
	switch state {
	case Open:
		return 1
	case HalfOpen:
		return 2
	}
	return 0
}

func ptr[T any](v T) *T { return &v }
