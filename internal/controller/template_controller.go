package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/templatereview"
)

// TemplateReconciler submits Templates as spec.submission asks (once per request: a change of
// sender, of the sandbox flag or of requestedAt), runs the sandbox's review, and keeps Ready.
type TemplateReconciler struct {
	client.Client
	Reviewer *templatereview.Reviewer
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=templates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=templates/status,verbs=get;update;patch

// Reconcile brings a Template's review forward.
func (r *TemplateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var t v1alpha1.Template
	if err := r.Get(ctx, req.NamespacedName, &t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if sub := t.Spec.Submission; sub != nil && !submitted(&t) {
		var snd v1alpha1.Sender
		err := r.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: sub.Sender}, &snd)
		if err == nil {
			err = r.Reviewer.Submit(ctx, &t, &snd)
		}
		switch {
		case apierrors.IsConflict(err):
			return ctrl.Result{Requeue: true}, nil
		case apierrors.IsNotFound(err), errors.Is(err, templatereview.ErrNoAccount):
			// Nothing to submit to until the sender is there, connected: its change brings us back.
			return ctrl.Result{}, r.Reviewer.Refresh(ctx, &t)
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("submit template %s: %w", req, err)
		}
	}
	wait, err := r.Reviewer.Advance(ctx, &t)
	if apierrors.IsConflict(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("review template %s: %w", req, err)
	}
	if err := r.Reviewer.Refresh(ctx, &t); err != nil && !apierrors.IsConflict(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

// submitted tells whether t's submission request was taken in.
func submitted(t *v1alpha1.Template) bool {
	sub := t.Spec.Submission
	return t.Status.SubmittedAt != nil && t.Status.SubmittedRequest == sub.RequestedAt && t.Status.Sender == sub.Sender &&
		t.Status.Sandbox == sub.Sandbox
}

// SetupWithManager watches Templates.
func (r *TemplateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Template{}).Named("template").Complete(r)
}
