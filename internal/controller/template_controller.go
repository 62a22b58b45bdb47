package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/templatereview"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// TemplateReconciler submits Templates as spec.submission asks (once per request: a change of
// sender, of the sandbox flag or of requestedAt), runs the sandbox's review, and keeps Ready.
type TemplateReconciler struct {
	client.Client
	Reviewer *templatereview.Reviewer
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=templates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=templates/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=templates/finalizers,verbs=update

// Reconcile brings a Template's review forward.
func (r *TemplateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var t v1alpha1.Template
	if err := r.Get(ctx, req.NamespacedName, &t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &t)
	}
	// A template of a live WhatsApp business account is deleted there when its resource is.
	if before := t.DeepCopy(); templatereview.Linked(&t) && controllerutil.AddFinalizer(&t, templatereview.Finalizer) {
		if err := r.Patch(ctx, &t, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{Requeue: true}, nil
			}
			return ctrl.Result{}, fmt.Errorf("add finalizer to template %s: %w", req, err)
		}
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

// finalize deletes a deleted Template's template at its WhatsApp business account (unless
// annotated to keep it), forgets its announced state and lets the resource go. The provider's
// permanent refusal (a revoked token, a template Meta no longer has) is logged and the resource
// goes all the same, so a namespace can always be deleted; a temporary one is tried again.
func (r *TemplateReconciler) finalize(ctx context.Context, t *v1alpha1.Template) error {
	if !controllerutil.ContainsFinalizer(t, templatereview.Finalizer) {
		return nil
	}
	log := logf.FromContext(ctx)
	if t.Annotations[templatereview.KeepAnnotation] != "true" {
		err := r.Reviewer.Withdraw(ctx, t)
		switch {
		case err == nil:
			log.Info("deleted the template at its WhatsApp business account", "account", t.Status.BusinessAccount, "providerId", t.Status.ProviderID)
		case errors.Is(err, templatereview.ErrNoAccount), transport.AsFailure(err) != nil:
			log.Error(err, "the template stays at its WhatsApp business account", "account", t.Status.BusinessAccount, "providerId", t.Status.ProviderID)
		default:
			return fmt.Errorf("delete template %s/%s at WhatsApp: %w", t.Namespace, t.Name, err)
		}
	}
	if err := r.Reviewer.Forget(ctx, t); err != nil {
		return err
	}
	before := t.DeepCopy()
	controllerutil.RemoveFinalizer(t, templatereview.Finalizer)
	if err := r.Patch(ctx, t, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer of template %s/%s: %w", t.Namespace, t.Name, err)
	}
	return nil
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
