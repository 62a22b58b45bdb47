/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"fmt"
	"strings"
)

// Where a resolved route comes from (ResolvedRoute.Source).
const (
	RouteFromSender              = "route"
	RouteFromChannel             = "channel"
	RouteFromProjectDefault      = "projectDefault"
	RouteFromInstallationDefault = "installationDefault"
)

// RoutePlan is the route a message takes: its Providers in the route's order, with their
// weights, and how one is chosen first.
type RoutePlan struct {
	Strategy  RouteStrategy
	Providers []*Provider
	// Weights are the Providers' weights, in the same order (1 when unset).
	Weights []int32
	Source  string
	// Prefixes are those of the sender's route that matched (empty: every destination).
	Prefixes []string
	// Errors are the route's Providers that cannot be used, and why.
	Errors []string
}

// matchingRoute is the sender's route of channel for destination to: the one with the longest
// prefix to starts with, else the first without prefixes; nil when none.
func (s *Sender) matchingRoute(channel Channel, to string) *ChannelRoute {
	var best *ChannelRoute
	bestLen := -1
	for i := range s.Spec.Routes {
		r := &s.Spec.Routes[i]
		if r.Channel != channel {
			continue
		}
		if len(r.Prefixes) == 0 {
			if bestLen < 0 {
				best, bestLen = r, 0
			}
			continue
		}
		for _, p := range r.Prefixes {
			if strings.HasPrefix(to, p) && len(p) > bestLen {
				best, bestLen = r, len(p)
			}
		}
	}
	return best
}

// RouteFor is the route of a message on channel to destination to: the sender's route that
// matches it, else the single Provider ResolveProvider gives. It returns an empty plan and a
// reason a user can act on when no Provider can carry the message.
func (s *Sender) RouteFor(channel Channel, to string, project, installation []Provider) (RoutePlan, string) {
	if r := s.matchingRoute(channel, to); r != nil {
		plan := resolveRoute(r, project, installation)
		if len(plan.Providers) == 0 {
			return RoutePlan{}, strings.Join(plan.Errors, "; ")
		}
		return plan, ""
	}
	p, reason := ResolveProvider(channel, s.ProviderName(channel), project, installation)
	if p == nil {
		return RoutePlan{}, reason
	}
	return RoutePlan{Strategy: StrategyFailover, Providers: []*Provider{p}, Weights: []int32{1},
		Source: defaultSource(s, channel, p)}, ""
}

// resolveRoute finds the Providers of a sender's route: by name in the project's namespace,
// then the installation's, of a type that serves the route's channel.
func resolveRoute(r *ChannelRoute, project, installation []Provider) RoutePlan {
	plan := RoutePlan{Strategy: r.Strategy, Source: RouteFromSender, Prefixes: r.Prefixes}
	if plan.Strategy == "" {
		plan.Strategy = StrategyFailover
	}
	for _, rp := range r.Providers {
		p := findProvider(project, rp.Name)
		if p == nil {
			p = findProvider(installation, rp.Name)
		}
		switch {
		case p == nil:
			plan.Errors = append(plan.Errors, fmt.Sprintf("Provider %q not found", rp.Name))
			continue
		case !p.Spec.Type.Serves(r.Channel):
			plan.Errors = append(plan.Errors, fmt.Sprintf("Provider %q is of type %s, which does not serve %s", rp.Name, p.Spec.Type, r.Channel))
			continue
		}
		w := int32(1)
		if rp.Weight != nil {
			w = *rp.Weight
		}
		plan.Providers, plan.Weights = append(plan.Providers, p), append(plan.Weights, w)
	}
	return plan
}

// defaultSource says where the single Provider of a channel without a route came from.
func defaultSource(s *Sender, channel Channel, p *Provider) string {
	switch {
	case s.ProviderName(channel) != "":
		return RouteFromChannel
	case p.Namespace == s.Namespace:
		return RouteFromProjectDefault
	}
	return RouteFromInstallationDefault
}

// ResolvedRoutes are the sender's routes as its status shows them: each of its own routes, then,
// for each channel it sends on without a route for every destination, the Provider its other
// destinations use.
func (s *Sender) ResolvedRoutes(project, installation []Provider) []ResolvedRoute {
	var out []ResolvedRoute
	covered := map[Channel]bool{}
	for i := range s.Spec.Routes {
		r := &s.Spec.Routes[i]
		plan := resolveRoute(r, project, installation)
		out = append(out, resolvedOf(r.Channel, plan))
		if len(r.Prefixes) == 0 {
			covered[r.Channel] = true
		}
	}
	if s.Spec.Transport == TransportSandbox {
		return out
	}
	for _, ch := range s.SendableChannels() {
		if covered[ch] {
			continue
		}
		p, reason := ResolveProvider(ch, s.ProviderName(ch), project, installation)
		if p == nil {
			if ch == ChannelTelegram {
				continue // a bot needs no Provider: the public Bot API
			}
			out = append(out, ResolvedRoute{Channel: ch, Strategy: StrategyFailover, Source: RouteFromChannel, Error: reason})
			continue
		}
		out = append(out, resolvedOf(ch, RoutePlan{Strategy: StrategyFailover, Providers: []*Provider{p},
			Source: defaultSource(s, ch, p)}))
	}
	return out
}

func resolvedOf(ch Channel, plan RoutePlan) ResolvedRoute {
	r := ResolvedRoute{Channel: ch, Prefixes: plan.Prefixes, Strategy: plan.Strategy, Source: plan.Source,
		Error: strings.Join(plan.Errors, "; ")}
	for _, p := range plan.Providers {
		r.Providers = append(r.Providers, p.Namespace+"/"+p.Name)
	}
	return r
}
