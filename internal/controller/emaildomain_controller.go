package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/domainverify"
)

// EmailDomainReconciler keeps an EmailDomain's DKIM key, its records to publish and what DNS
// holds of them: it checks when the domain is new or changed, when a verify is asked for (the
// annotation messaging.switchboard.io/verify-requested-at), and then on the schedule
// domainverify.NextCheck sets, announcing each change of state once.
type EmailDomainReconciler struct {
	client.Client
	Verifier *domainverify.Verifier
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=emaildomains,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=emaildomains/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// Reconcile refreshes the domain's status, asking DNS when a check is due.
func (r *EmailDomainReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var d v1alpha1.EmailDomain
	if err := r.Get(ctx, req.NamespacedName, &d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !d.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.now()
	requested := d.Annotations[domainverify.VerifyRequestedAnnotation]
	restart := requested != "" && requested != d.Status.VerifyRequestedAt
	due := d.Status.ObservedGeneration != d.Generation || d.Status.NextCheckAt == nil || !now.Before(d.Status.NextCheckAt.Time) ||
		domainverify.OwnershipUnchecked(&d.Status) // after an upgrade: take the hold of a domain verified before, at once
	err := r.Verifier.Refresh(ctx, &d, domainverify.Options{Check: due || restart, Restart: restart, RequestedAt: requested})
	switch {
	case errors.Is(err, domainverify.ErrUnavailable):
		// Status records it; the next check comes on NextCheckAt.
	case apierrors.IsConflict(err):
		return ctrl.Result{Requeue: true}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("refresh email domain %s: %w", req, err)
	}
	if d.Status.NextCheckAt == nil {
		return ctrl.Result{}, nil // not verifiable: nothing to check until the spec changes
	}
	return ctrl.Result{RequeueAfter: max(d.Status.NextCheckAt.Sub(now), time.Second)}, nil
}

func (r *EmailDomainReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager watches EmailDomains and the DKIM Secrets they own: a deleted key is made
// again (and its new record asked for).
func (r *EmailDomainReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.EmailDomain{}).
		Owns(&corev1.Secret{}).
		Named("emaildomain").
		Complete(r)
}
