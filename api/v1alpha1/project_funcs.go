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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsReady tells whether the project's Ready condition is True for its current generation.
func (p *Project) IsReady() bool {
	return isReady(p.Status.Conditions, p.Generation)
}

// IsSubAccount tells whether the project is a sub-account of another project.
func (p *Project) IsSubAccount() bool {
	return p.Spec.Parent != ""
}

func isReady(conditions []metav1.Condition, generation int64) bool {
	c := meta.FindStatusCondition(conditions, ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
}

// NamespaceProject picks the project of a namespace out of the Projects in it: the oldest, and by
// name among equally old ones. The others are duplicates and are never used.
func NamespaceProject(items []Project) *Project {
	var chosen *Project
	for i := range items {
		p := &items[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if chosen == nil || p.CreationTimestamp.Before(&chosen.CreationTimestamp) ||
			(p.CreationTimestamp.Equal(&chosen.CreationTimestamp) && p.Name < chosen.Name) {
			chosen = p
		}
	}
	return chosen
}

// Request-rate tiers, per minute (spec: Limits / Request rate).
const (
	RequestRateDefault          int32 = 600
	RequestRateBusinessApproved int32 = 1200
	RequestRateTenDLCBrand      int32 = 2400
)

// RequestRateTier is the request rate per minute that a verification level earns.
func (v Verification) RequestRateTier() int32 {
	switch v {
	case VerificationTenDLCBrand:
		return RequestRateTenDLCBrand
	case VerificationBusinessApproved:
		return RequestRateBusinessApproved
	default:
		return RequestRateDefault
	}
}

// TeamKey names the project's team: spec.team, or the project's own namespace when it has none.
func (p *Project) TeamKey() string {
	if p.Spec.Team != "" {
		return p.Spec.Team
	}
	return p.Namespace
}

// EffectiveRequestRate is the rate in force for p when its team's projects are team: the highest
// tier any project of the team earned, raised further by p's hand-set limit, never lowered by it.
func EffectiveRequestRate(p *Project, team []Project) int32 {
	limit := p.Spec.Verification.RequestRateTier()
	for i := range team {
		if t := team[i].Spec.Verification.RequestRateTier(); t > limit {
			limit = t
		}
	}
	if p.Spec.RequestRateLimit != nil && *p.Spec.RequestRateLimit > limit {
		limit = *p.Spec.RequestRateLimit
	}
	return limit
}

// RequestRate is the rate in force per minute: from status, or, before the controller has
// computed it, from the project's own spec.
func (p *Project) RequestRate() int32 {
	switch {
	case p == nil:
		return RequestRateDefault
	case p.Status.RequestRateLimit > 0:
		return p.Status.RequestRateLimit
	default:
		return EffectiveRequestRate(p, nil)
	}
}

// IsDeactivated tells whether the project is a sub-account its parent deactivated.
func (p *Project) IsDeactivated() bool {
	return p != nil && p.Spec.SubAccount != nil && p.Spec.SubAccount.Deactivated
}

// UnsubscribesRefuseAll tells whether an unsubscribe on the project's suppression list refuses
// single sends too (spec.email.unsubscribeScope all), not only broadcast email; a nil project
// keeps the default (broadcasts).
func (p *Project) UnsubscribesRefuseAll() bool {
	return p != nil && p.Spec.Email != nil && p.Spec.Email.UnsubscribeScope == UnsubscribeScopeAll
}
