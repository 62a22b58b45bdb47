package registry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/circuit"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Circuits are the Providers' circuit breakers (circuit.Breakers).
type Circuits interface {
	Usable(ctx context.Context, provider string, s circuit.Settings, probe bool) (bool, error)
	Record(ctx context.Context, provider string, s circuit.Settings, taken bool)
}

// PriceLists finds a project's PriceList (billing.Prices): least-cost routes read its
// providerCosts.
type PriceLists interface {
	For(ctx context.Context, project string) (*v1alpha1.PriceList, error)
}

// order is the order in which a message to destination to tries the Providers of plan: the
// strategy's, then the Providers that are usable now (circuit closed, or this message probes
// it; and Ready) before the others, which stay as a last resort.
func (r *Registry) order(ctx context.Context, project, channel, to string, plan v1alpha1.RoutePlan) ([]*v1alpha1.Provider, error) {
	ps := slices.Clone(plan.Providers)
	switch plan.Strategy {
	case v1alpha1.StrategyLeastCost:
		var err error
		if ps, err = r.byCost(ctx, project, channel, to, ps); err != nil {
			return nil, err
		}
	case v1alpha1.StrategyWeighted:
		ps = byWeight(ps, plan.Weights)
	}
	if len(ps) == 1 {
		return ps, nil // nothing to choose between
	}
	var usable, others []*v1alpha1.Provider
	for _, p := range ps {
		ok := ready(p)
		if ok && r.Circuits != nil {
			var err error
			// Only the first usable Provider may take an open circuit's probe: a probe given to
			// a Provider after it would rarely be made.
			if ok, err = r.Circuits.Usable(ctx, key(p), settingsOf(p), len(usable) == 0); err != nil {
				return nil, err
			}
		}
		if ok {
			usable = append(usable, p)
		} else {
			others = append(others, p)
		}
	}
	return append(usable, others...), nil
}

// byCost sorts ps by what each charges for the destination (the PriceList's providerCosts),
// cheapest first; ties, and Providers without a cost (last), keep the route's order.
func (r *Registry) byCost(ctx context.Context, project, channel, to string, ps []*v1alpha1.Provider) ([]*v1alpha1.Provider, error) {
	if r.Prices == nil {
		return ps, nil
	}
	list, err := r.Prices.For(ctx, project)
	if err != nil {
		return nil, err
	}
	type costed struct {
		p    *v1alpha1.Provider
		cost billing.Micros
		ok   bool
	}
	cs := make([]costed, len(ps))
	for i, p := range ps {
		cost, ok, err := billing.ProviderCostOf(list, p.Name, channel, to)
		if err != nil {
			return nil, err
		}
		cs[i] = costed{p, cost, ok}
	}
	slices.SortStableFunc(cs, func(a, b costed) int {
		switch {
		case a.ok != b.ok:
			if a.ok {
				return -1
			}
			return 1
		case a.cost < b.cost:
			return -1
		case a.cost > b.cost:
			return 1
		}
		return 0
	})
	for i := range cs {
		ps[i] = cs[i].p
	}
	return ps, nil
}

// byWeight puts first a Provider drawn by weight; the others follow in the route's order.
func byWeight(ps []*v1alpha1.Provider, weights []int32) []*v1alpha1.Provider {
	total := int32(0)
	for _, w := range weights {
		total += w
	}
	if total <= 0 {
		return ps
	}
	n := rand.Int32N(total) //nolint:gosec // a share of traffic, not a secret
	for i, w := range weights {
		if n < w {
			return append([]*v1alpha1.Provider{ps[i]}, append(slices.Clone(ps[:i]), ps[i+1:]...)...)
		}
		n -= w
	}
	return ps
}

// ready says whether p's Ready condition is True (or not reported yet).
func ready(p *v1alpha1.Provider) bool {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
	return c == nil || c.Status == "True"
}

// key names a Provider in messages and circuits: "namespace/name".
func key(p *v1alpha1.Provider) string { return p.Namespace + "/" + p.Name }

// settingsOf is p's circuit breaker settings.
func settingsOf(p *v1alpha1.Provider) circuit.Settings {
	var s circuit.Settings
	if cb := p.Spec.CircuitBreaker; cb != nil {
		if cb.Failures != nil {
			s.Failures = int(*cb.Failures)
		}
		if cb.OpenFor != nil {
			s.OpenFor = cb.OpenFor.Duration
		}
	}
	return s
}

// providerCircuit tells one Provider's circuit of its calls' outcomes (message.Circuit).
type providerCircuit struct {
	circuits Circuits
	provider string
	settings circuit.Settings
}

func (c providerCircuit) Record(ctx context.Context, taken bool) {
	c.circuits.Record(ctx, c.provider, c.settings, taken)
}

// routesThrough builds the route of the message through each Provider, in order. A Provider
// that cannot work until someone fixes it (unusable) is left out; when none is left, the first
// such failure is the message's.
func (r *Registry) routesThrough(ctx context.Context, ps []*v1alpha1.Provider, snd *v1alpha1.Sender, ch v1alpha1.Channel,
	messageID string) ([]message.Route, error) {
	var routes []message.Route
	var first error
	for _, p := range ps {
		if f := unusable(p); f != nil {
			if first == nil {
				first = f
			}
			continue
		}
		route, err := r.transportOf(ctx, p, snd, ch, messageID)
		if f := transport.AsFailure(err); f != nil && len(ps) > 1 {
			// One Provider's missing Secret or key: the route's others may still carry it.
			if first == nil {
				first = f
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		route.Provider = key(p)
		if p.Spec.Pace == v1alpha1.PaceAll && p.Spec.MessagesPerSecond != nil {
			// The key broadcasts pace the address with (Pace): both share its rate.
			route.PaceKey, route.PerSecond = key(p)+"/"+snd.Address(ch), float64(*p.Spec.MessagesPerSecond)
		}
		if r.Circuits != nil {
			route.Circuit = providerCircuit{circuits: r.Circuits, provider: key(p), settings: settingsOf(p)}
		}
		routes = append(routes, route)
	}
	if len(routes) == 0 {
		if first == nil {
			first = fmt.Errorf("no Provider of the route could be used")
		}
		return nil, first
	}
	return routes, nil
}
