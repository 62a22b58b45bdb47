package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/signingsecret"
)

// WebhookReconciler keeps the signing secret and Ready condition of project webhooks.
type WebhookReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=webhooks,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=webhooks/status,verbs=get;update;patch

// Reconcile gives the webhook its signing secret and computes Ready.
func (r *WebhookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var wh v1alpha1.Webhook
	if err := r.Get(ctx, req.NamespacedName, &wh); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !wh.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var projects v1alpha1.ProjectList
	if err := r.List(ctx, &projects, client.InNamespace(wh.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list projects in %s: %w", wh.Namespace, err)
	}
	before := wh.DeepCopy()
	result := readyOK("webhook is ready")
	if p := v1alpha1.NamespaceProject(projects.Items); p == nil {
		result = notReady(v1alpha1.ReasonProjectNotFound, fmt.Sprintf("namespace %s has no Project", wh.Namespace))
	}
	secret, failure, err := reconcileSigningSecret(ctx, r.Client, &wh, true, wh.Spec.SecretRef, signingsecret.ForProjectWebhook(&wh))
	if err != nil {
		return ctrl.Result{}, err
	}
	if result.ready && failure != nil {
		result = *failure
	}
	wh.Status.WebhookSecret = secret
	wh.Status.ObservedGeneration = wh.Generation
	// Disabled for failing, it is enabled again by a change of the spec (a fixed URL).
	v1alpha1.EnableWebhookOnSpecChange(&wh.Status.Conditions, wh.Generation)
	setReady(&wh.Status.Conditions, result, wh.Generation)
	if err := patchStatus(ctx, r.Client, before, &wh, func(w *v1alpha1.Webhook) any { return w.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status of webhook %s: %w", req, err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler.
func (r *WebhookReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Webhook{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.webhooksOfNamespace)).
		Watches(&v1alpha1.Project{}, handler.EnqueueRequestsFromMapFunc(r.webhooksOfNamespace)).
		Named("webhook").
		Complete(r)
}

func (r *WebhookReconciler) webhooksOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.WebhookList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, w := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
	}
	return reqs
}
