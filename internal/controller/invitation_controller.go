package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/invitation"
)

// DefaultAbandonAfter is how long a client may take to connect once started before the
// invitation fails with signup_abandoned (the page reports a closed dialog at once; this
// catches a tab closed mid-way).
const DefaultAbandonAfter = time.Hour

// InvitationReconciler gives Invitations applied with kubectl their token and expiry, carries
// out resends (spec.resendRequestedAt), fails connections left unfinished, and announces every
// stored change a writer did not (a process that stopped between its write and its event).
type InvitationReconciler struct {
	client.Client
	Invitations  *invitation.Service
	AbandonAfter time.Duration
	Now          func() time.Time
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=invitations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=invitations/status,verbs=get;update;patch

// Reconcile brings an Invitation's stored state forward.
func (r *InvitationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var got v1alpha1.Invitation
	if err := r.Get(ctx, req.NamespacedName, &got); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !got.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	inv, err := r.Invitations.Initialize(ctx, &got)
	if err == nil && inv.ResendAsked() {
		inv, err = r.Invitations.Resend(ctx, inv)
	}
	if err == nil {
		err = r.Invitations.Announce(ctx, inv)
	}
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return ctrl.Result{Requeue: apierrors.IsConflict(err)}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("invitation %s: %w", req, err)
	}
	if inv.Stored() != v1alpha1.InvitationInProgress || inv.Status.StartedAt == nil {
		return ctrl.Result{}, nil
	}
	abandon := r.AbandonAfter
	if abandon <= 0 {
		abandon = DefaultAbandonAfter
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	if wait := inv.Status.StartedAt.Add(abandon).Sub(now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if _, err := r.Invitations.Fail(ctx, inv, v1alpha1.FailureSignupAbandoned); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("fail abandoned invitation %s: %w", req, err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches Invitations.
func (r *InvitationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Invitation{}).Named("invitation").Complete(r)
}
