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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RouteStrategy is how a route chooses among its Providers.
// +kubebuilder:validation:Enum=failover;leastCost;weighted
type RouteStrategy string

const (
	// StrategyFailover takes the Providers in order: the first whose circuit is closed.
	StrategyFailover RouteStrategy = "failover"
	// StrategyLeastCost takes the Provider whose cost for the destination (the PriceList's
	// providerCosts) is lowest; ties, and Providers without a cost, keep their order.
	StrategyLeastCost RouteStrategy = "leastCost"
	// StrategyWeighted shares messages among the Providers by their weights.
	StrategyWeighted RouteStrategy = "weighted"
)

// ChannelRoute is which Providers carry a channel's messages (to the destinations starting with
// one of its prefixes), and how one is chosen. The others are the failover order: a Provider
// that proves it did not take a message (connection refused, 5xx, not Ready) passes it on to the
// next in the same dispatch (docs/providers.md#routes).
// +kubebuilder:validation:XValidation:rule="!has(self.prefixes) || size(self.prefixes) == 0 || self.channel in ['sms', 'sms_oneway', 'voice', 'whatsapp']",message="prefixes match phone numbers: only sms, sms_oneway, voice and whatsapp routes take them"
// +kubebuilder:validation:XValidation:rule="self.strategy != 'weighted' || self.providers.exists(p, !has(p.weight) || p.weight > 0)",message="a weighted route needs a Provider of weight above 0"
type ChannelRoute struct {
	// Channel is the channel routed.
	Channel Channel `json:"channel"`

	// Prefixes are the starts of the destination numbers routed, in E.164 ("+44", "+1415");
	// empty routes every destination. Among a channel's routes the longest prefix that matches
	// wins, then the route without prefixes.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:Pattern=`^\+[0-9]{1,15}$`
	// +listType=set
	// +optional
	Prefixes []string `json:"prefixes,omitempty"`

	// Strategy is how the first Provider is chosen: failover (default), leastCost or weighted.
	// +kubebuilder:default=failover
	// +optional
	Strategy RouteStrategy `json:"strategy,omitempty"`

	// Providers are the Providers of the route, in order: names in the project's namespace, then
	// the installation's, of a type that serves the channel.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +listType=map
	// +listMapKey=name
	Providers []RouteProvider `json:"providers"`
}

// RouteProvider is one Provider of a route.
type RouteProvider struct {
	// Name is the Provider's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Weight is the Provider's share of a weighted route's messages (default 1; 0 takes none
	// but failover).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// ResolvedRoute is a route as the sender's status shows it: where each of its Providers was
// found, or why one cannot be used.
type ResolvedRoute struct {
	Channel Channel `json:"channel"`
	// +listType=atomic
	// +optional
	Prefixes []string      `json:"prefixes,omitempty"`
	Strategy RouteStrategy `json:"strategy"`
	// Providers are "namespace/name" of each Provider found, in the route's order.
	// +listType=atomic
	// +optional
	Providers []string `json:"providers,omitempty"`
	// Source is where the route comes from: the sender's routes, its channel's provider, its
	// project's RoutingPolicy or default Provider, or the installation's.
	// +kubebuilder:validation:Enum=route;channel;projectPolicy;projectDefault;installationPolicy;installationDefault
	Source string `json:"source"`
	// Error says why a Provider of the route cannot be used (not found, does not serve the
	// channel); the route's other Providers still are.
	// +optional
	Error string `json:"error,omitempty"`
}

// RoutingPolicySpec is the routes of every sender of a namespace without a route of its own for
// a message: in a project's namespace, that project's; in the installation's namespace, every
// project's (docs/providers.md#routing-policies).
type RoutingPolicySpec struct {
	// Routes, as a Sender's: per channel and destination prefix, the Providers in order and how
	// the first is chosen. The Providers of an installation's policy are the installation's.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Routes []ChannelRoute `json:"routes"`
}

// RoutingPolicy routes the messages of a namespace's senders (a project's), or of every
// project's (in the installation's namespace), across several Providers.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=routing
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RoutingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RoutingPolicySpec `json:"spec"`
}

// RoutingPolicyList is a list of RoutingPolicies.
// +kubebuilder:object:root=true
type RoutingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RoutingPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RoutingPolicy{}, &RoutingPolicyList{})
}
