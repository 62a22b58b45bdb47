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

// WebhookDisabled returns the WebhookEnabled condition of conditions when it disables the
// webhook (status False), else nil.
func WebhookDisabled(conditions []metav1.Condition) *metav1.Condition {
	c := meta.FindStatusCondition(conditions, ConditionWebhookEnabled)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	return c
}

// EnableWebhookOnSpecChange enables a disabled webhook again once its resource's spec has moved
// past the generation it was disabled at; it says whether it did.
func EnableWebhookOnSpecChange(conditions *[]metav1.Condition, generation int64) bool {
	c := WebhookDisabled(*conditions)
	if c == nil || c.ObservedGeneration >= generation {
		return false
	}
	meta.SetStatusCondition(conditions, metav1.Condition{Type: ConditionWebhookEnabled, Status: metav1.ConditionTrue,
		Reason: ReasonSpecChanged, Message: "the spec changed after the webhook was disabled", ObservedGeneration: generation})
	return true
}
