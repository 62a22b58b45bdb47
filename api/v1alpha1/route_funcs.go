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
	"slices"
	"strings"
)

// Where a resolved route comes from (ResolvedRoute.Source).
const (
	RouteFromSender              = "route"
	RouteFromChannel             = "channel"
	RouteFromProjectPolicy       = "projectPolicy"
	RouteFromProjectDefault      = "projectDefault"
	RouteFromInstallationPolicy  = "installationPolicy"
	RouteFromInstallationDefault = "installationDefault"
)

// RoutingScope is what a sender's messages may be routed through: the Providers of its project's
// namespace and of the installation's, and the routes of their RoutingPolicies.
type RoutingScope struct {
	Project, Installation []Provider
	// ProjectRoutes and InstallationRoutes are the RoutingPolicies' routes of each namespace, the
	// oldest policy's first.
	ProjectRoutes, InstallationRoutes []ChannelRoute
}

// PolicyRoutes are the routes of a namespace's RoutingPolicies, the oldest policy's first (then
// by name).
func PolicyRoutes(policies []RoutingPolicy) []ChannelRoute {
	ps := slices.Clone(policies)
	slices.SortStableFunc(ps, func(a, b RoutingPolicy) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var out []ChannelRoute
	for _, p := range ps {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p.Spec.Routes...)
		}
	}
	return out
}

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

// matchingRoute is the route of channel for destination to among routes: the one with the
// longest prefix to starts with, else the first without prefixes; nil when none.
func matchingRoute(routes []ChannelRoute, channel Channel, to string) *ChannelRoute {
	var best *ChannelRoute
	bestLen := -1
	for i := range routes {
		r := &routes[i]
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

// RouteFor is the route of a message on channel to destination to, the first of:
//
//  1. the sender's route that matches it;
//  2. the Provider its channel names;
//  3. its project's RoutingPolicy route that matches it;
//  4. its project's default Provider;
//  5. the installation's RoutingPolicy route that matches it (through the installation's
//     Providers only);
//  6. the installation's default Provider.
//
// It returns an empty plan and a reason a user can act on when no Provider can carry the message.
func (s *Sender) RouteFor(channel Channel, to string, scope RoutingScope) (RoutePlan, string) {
	if plan, reason, ok := s.routeFor(channel, to, scope); ok {
		return plan, reason
	}
	_, reason := ResolveProvider(channel, "", scope.Project, scope.Installation)
	return RoutePlan{}, reason
}

// routeFor is RouteFor; ok is false when no step applies.
func (s *Sender) routeFor(channel Channel, to string, scope RoutingScope) (RoutePlan, string, bool) {
	resolved := func(plan RoutePlan) (RoutePlan, string, bool) {
		if len(plan.Providers) == 0 {
			return RoutePlan{}, strings.Join(plan.Errors, "; "), true
		}
		return plan, "", true
	}
	single := func(p *Provider, source string) (RoutePlan, string, bool) {
		return RoutePlan{Strategy: StrategyFailover, Providers: []*Provider{p}, Weights: []int32{1}, Source: source}, "", true
	}
	if r := matchingRoute(s.Spec.Routes, channel, to); r != nil {
		return resolved(resolveRoute(r, RouteFromSender, scope.Project, scope.Installation))
	}
	if named := s.ProviderName(channel); named != "" {
		p, reason := ResolveProvider(channel, named, scope.Project, scope.Installation)
		if p == nil {
			return RoutePlan{}, reason, true
		}
		return single(p, RouteFromChannel)
	}
	if r := matchingRoute(scope.ProjectRoutes, channel, to); r != nil {
		return resolved(resolveRoute(r, RouteFromProjectPolicy, scope.Project, scope.Installation))
	}
	if p := DefaultProvider(scope.Project, channel); p != nil {
		return single(p, RouteFromProjectDefault)
	}
	if r := matchingRoute(scope.InstallationRoutes, channel, to); r != nil {
		return resolved(resolveRoute(r, RouteFromInstallationPolicy, scope.Installation, nil))
	}
	if p := DefaultProvider(scope.Installation, channel); p != nil {
		return single(p, RouteFromInstallationDefault)
	}
	return RoutePlan{}, "", false
}

// resolveRoute finds the Providers of a route: by name in first, then in second, of a type that
// serves the route's channel.
func resolveRoute(r *ChannelRoute, source string, first, second []Provider) RoutePlan {
	plan := RoutePlan{Strategy: r.Strategy, Source: source, Prefixes: r.Prefixes}
	if plan.Strategy == "" {
		plan.Strategy = StrategyFailover
	}
	for _, rp := range r.Providers {
		p := findProvider(first, rp.Name)
		if p == nil {
			p = findProvider(second, rp.Name)
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

// ResolvedRoutes are the sender's routes as its status shows them: each of its own routes, then,
// for each channel it sends on without a route for every destination, the RoutingPolicy routes
// that apply to it and where its other destinations go.
func (s *Sender) ResolvedRoutes(scope RoutingScope) []ResolvedRoute {
	var out []ResolvedRoute
	covered := map[Channel]bool{}
	for i := range s.Spec.Routes {
		r := &s.Spec.Routes[i]
		out = append(out, resolvedOf(r.Channel, resolveRoute(r, RouteFromSender, scope.Project, scope.Installation)))
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
		// The policies' routes with prefixes the sender's route for every destination or its
		// channel's Provider do not already take, in the order RouteFor tries them.
		if s.ProviderName(ch) == "" {
			for _, layer := range []struct {
				routes        []ChannelRoute
				source        string
				first, second []Provider
				stop          bool
			}{
				{scope.ProjectRoutes, RouteFromProjectPolicy, scope.Project, scope.Installation, DefaultProvider(scope.Project, ch) != nil},
				{scope.InstallationRoutes, RouteFromInstallationPolicy, scope.Installation, nil, true},
			} {
				for i := range layer.routes {
					r := &layer.routes[i]
					switch {
					case r.Channel != ch:
					case len(r.Prefixes) > 0:
						out = append(out, resolvedOf(ch, resolveRoute(r, layer.source, layer.first, layer.second)))
					default:
						layer.stop = true // the layer takes every other destination: shown below
					}
				}
				if layer.stop {
					break
				}
			}
		}
		plan, reason, ok := s.routeFor(ch, "", scope)
		switch {
		case !ok && ch == ChannelTelegram:
			// A bot needs no Provider: the public Bot API.
		case !ok:
			_, reason = ResolveProvider(ch, "", scope.Project, scope.Installation)
			out = append(out, ResolvedRoute{Channel: ch, Strategy: StrategyFailover, Source: RouteFromChannel, Error: reason})
		case len(plan.Providers) == 0:
			out = append(out, ResolvedRoute{Channel: ch, Strategy: StrategyFailover, Source: RouteFromChannel, Error: reason})
		default:
			out = append(out, resolvedOf(ch, plan))
		}
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
