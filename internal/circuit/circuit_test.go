package circuit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-io/switchboard/internal/circuit"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clock is a shared, settable clock: two workers' breakers see the same time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Two workers share one circuit through Postgres: failures in a row from either open it, while
// it is open neither uses it, once it may be probed exactly one of them takes the probe, and the
// probe's outcome closes it again or opens it for another while.
func TestTwoWorkersShareACircuit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	clk := &clock{now: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	reg := prometheus.NewRegistry()
	one, two := circuit.New(pool, logr.Discard(), reg), circuit.New(pool, logr.Discard(), nil)
	one.SetClock(clk.Now)
	two.SetClock(clk.Now)
	const p = "acme/carrier-a"
	s := circuit.Settings{Failures: 3, OpenFor: 30 * time.Second}
	usable := func(b *circuit.Breakers, probe bool) bool {
		t.Helper()
		ok, err := b.Usable(ctx, p, s, probe)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	state := func(b *circuit.Breakers) string {
		t.Helper()
		clk.Add(time.Second + time.Millisecond) // past the view's age
		st, err := b.State(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	failed := func(b *circuit.Breakers) {
		t.Helper()
		if err := b.Failed(ctx, p, s); err != nil {
			t.Fatal(err)
		}
	}

	if !usable(one, true) || state(two) != circuit.Closed {
		t.Fatal("a Provider that never failed is not usable")
	}
	// Two failures, then a success: the count starts again.
	failed(one)
	failed(two)
	if err := one.Taken(ctx, p); err != nil {
		t.Fatal(err)
	}
	failed(two)
	failed(one)
	if state(one) != circuit.Closed {
		t.Fatal("two failures after a success opened the circuit")
	}
	failed(two) // the third in a row
	if state(one) != circuit.Open || usable(one, true) || usable(two, true) {
		t.Fatalf("three failures in a row: circuit %s", state(one))
	}
	if got := gaugeOf(t, reg, p); got != 1 {
		t.Errorf("switchboard_provider_circuit_state = %v, want 1 (open)", got)
	}

	// Past OpenFor: a caller with a closed Provider does not probe; of two that would, one does.
	clk.Add(30 * time.Second)
	if usable(one, false) {
		t.Fatal("a caller that does not probe may use an open circuit")
	}
	first, second := usable(one, true), usable(two, true)
	if first == second {
		t.Fatalf("probes taken: %v and %v, want exactly one", first, second)
	}
	if state(two) != circuit.HalfOpen {
		t.Fatalf("during the probe: %s", state(two))
	}
	// The probe fails: open again, for another OpenFor.
	failed(one)
	if state(two) != circuit.Open {
		t.Fatalf("after a failed probe: %s", state(two))
	}
	clk.Add(10 * time.Second)
	if usable(two, true) {
		t.Fatal("probed again before OpenFor passed")
	}
	// A probe that is never answered (its worker died) is given up after OpenFor.
	clk.Add(20 * time.Second)
	if !usable(two, true) {
		t.Fatal("no probe after OpenFor")
	}
	clk.Add(30 * time.Second)
	if !usable(one, true) {
		t.Fatal("a probe whose worker died was never given up")
	}
	if err := one.Taken(ctx, p); err != nil {
		t.Fatal(err)
	}
	if state(two) != circuit.Closed || !usable(two, false) {
		t.Fatalf("after the probe was taken: %s", state(two))
	}
	if got := gaugeOf(t, reg, p); got != 0 {
		t.Errorf("switchboard_provider_circuit_state = %v, want 0 (closed)", got)
	}
}

// gaugeOf is the value of switchboard_provider_circuit_state for provider in reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry, provider string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "switchboard_provider_circuit_state" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "provider" && l.GetValue() == provider {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no switchboard_provider_circuit_state for %s", provider)
	return 0
}
