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

import "time"

// Stored is the invitation's stored state: pending until one is written.
func (i *Invitation) Stored() InvitationState {
	if i.Status.State == "" {
		return InvitationPending
	}
	return i.Status.State
}

// StateAt is the state the invitation reads as at now: expired once its expiry has passed,
// unless it completed or was cancelled first (those are final whatever the date).
func (i *Invitation) StateAt(now time.Time) InvitationState {
	st := i.Stored()
	if st == InvitationCompleted || st == InvitationCancelled {
		return st
	}
	if exp := i.Status.ExpiresAt; exp != nil && !now.Before(exp.Time) {
		return InvitationExpired
	}
	return st
}

// ActiveAt says whether the invitation's link works at now: pending, in progress or failed
// (a failed one may be tried again), and not expired.
func (i *Invitation) ActiveAt(now time.Time) bool {
	switch i.StateAt(now) {
	case InvitationPending, InvitationInProgress, InvitationFailed:
		return true
	}
	return false
}

// ResendAsked says whether spec.resendRequestedAt asks for a resend not carried out yet.
func (i *Invitation) ResendAsked() bool {
	req := i.Spec.ResendRequestedAt
	return req != nil && (i.Status.ResentAt == nil || req.After(i.Status.ResentAt.Time))
}
