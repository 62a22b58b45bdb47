package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// readiness is the outcome of a chain of checks: the first failing check names the reason.
type readiness struct {
	ready   bool
	reason  string
	message string
}

func readyOK(message string) readiness {
	return readiness{ready: true, reason: v1alpha1.ReasonReady, message: message}
}

func notReady(reason, message string) readiness {
	return readiness{reason: reason, message: message}
}

// condition renders the readiness as the Ready condition for the given generation.
func (r readiness) condition(generation int64) metav1.Condition {
	status := metav1.ConditionFalse
	if r.ready {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{
		Type:               v1alpha1.ConditionReady,
		Status:             status,
		Reason:             r.reason,
		Message:            r.message,
		ObservedGeneration: generation,
	}
}

// setReady puts the Ready condition into conditions; LastTransitionTime moves only when the status does.
func setReady(conditions *[]metav1.Condition, r readiness, generation int64) {
	meta.SetStatusCondition(conditions, r.condition(generation))
}

// patchStatus writes obj's status when it differs from before's, with an optimistic lock so a
// status computed from a stale object is never written.
func patchStatus[T client.Object](ctx context.Context, c client.Client, before, obj T, status func(T) any) error {
	if equality.Semantic.DeepEqual(status(before), status(obj)) {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}
