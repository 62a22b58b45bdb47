package controller

import (
	"context"
	"time"

	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// SenderReconciler keeps the Ready condition, the active channels and the activity of Senders.
type SenderReconciler struct {
	client.Client
	// Activity, when set, puts the sender's traffic from Postgres in its status, refreshed every
	// Activity.Every.
	Activity *ActivitySource
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=senders,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=senders/status,verbs=get;update;patch

// Reconcile computes the Sender's Ready condition and status.channels.
func (r *SenderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sender v1alpha1.Sender
	if err := r.Get(ctx, req.NamespacedName, &sender); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sender.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	var projects v1alpha1.ProjectList
	if err := r.List(ctx, &projects, client.InNamespace(sender.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list projects in %s: %w", sender.Namespace, err)
	}
	var siblings v1alpha1.SenderList
	if err := r.List(ctx, &siblings, client.InNamespace(sender.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list senders in %s: %w", sender.Namespace, err)
	}

	before := sender.DeepCopy()
	readyResult := senderReadiness(&sender, v1alpha1.NamespaceProject(projects.Items))
	secret, secretFailure, err := r.reconcileWebhookSecret(ctx, &sender)
	if err != nil {
		return ctrl.Result{}, err
	}
	if readyResult.ready && secretFailure != nil {
		readyResult = *secretFailure
	}
	sender.Status.WebhookSecret = secret
	sender.Status.ObservedGeneration = sender.Generation
	sender.Status.Channels = nil
	if readyResult.ready {
		sender.Status.Channels = sender.SendableChannels()
	}
	// One default per project: the oldest of the senders that ask to be it.
	d := v1alpha1.DefaultSender(siblings.Items)
	sender.Status.IsDefault = d != nil && d.UID == sender.UID
	// Receiving needs the address's domain to receive (or the sandbox, which simulates mail).
	var domains v1alpha1.EmailDomainList
	if err := r.List(ctx, &domains, client.InNamespace(sender.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list email domains in %s: %w", sender.Namespace, err)
	}
	sender.Status.EmailReceivingEnabled, sender.Status.EmailCatchAllEnabled = sender.EmailInEffect(domains.Items)
	setReady(&sender.Status.Conditions, readyResult, sender.Generation)
	var result ctrl.Result
	if r.Activity != nil {
		activity, err := r.Activity.activity(ctx, &sender, time.Now())
		if err != nil {
			return ctrl.Result{}, err
		}
		sender.Status.Activity = activity
		result.RequeueAfter = r.Activity.Every
	}
	if err := patchStatus(ctx, r.Client, before, &sender, func(s *v1alpha1.Sender) any { return s.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status of sender %s: %w", req, err)
	}
	return result, nil
}

// senderReadiness is the chain of checks of a Sender: its namespace has a ready project, and its
// transport carries every channel it asks for.
func senderReadiness(sender *v1alpha1.Sender, project *v1alpha1.Project) readiness {
	if project == nil {
		return notReady(v1alpha1.ReasonProjectNotFound,
			fmt.Sprintf("namespace %s has no Project", sender.Namespace))
	}
	if !project.IsReady() {
		return notReady(v1alpha1.ReasonProjectNotReady,
			fmt.Sprintf("project %s is not ready", project.Name))
	}
	var unsupported []string
	for _, c := range sender.Spec.ActiveChannels() {
		if !sender.Spec.Transport.Supports(c) {
			unsupported = append(unsupported, string(c))
		}
	}
	if len(unsupported) > 0 {
		return notReady(v1alpha1.ReasonTransportUnsupportedChannel,
			fmt.Sprintf("transport %s does not carry %s", sender.Spec.Transport, strings.Join(unsupported, ", ")))
	}
	return readyOK("sender is ready")
}

// SetupWithManager registers the reconciler; a Project's change brings back its namespace's Senders.
func (r *SenderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Sender{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.Project{}, handler.EnqueueRequestsFromMapFunc(r.sendersOfProject)).
		// A domain that starts or stops receiving changes what its senders' settings do.
		Watches(&v1alpha1.EmailDomain{}, handler.EnqueueRequestsFromMapFunc(r.sendersOfProject)).
		// A sender that asks to be the default, or stops asking, changes which one is.
		Watches(&v1alpha1.Sender{}, handler.EnqueueRequestsFromMapFunc(r.sendersOfProject),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A generated webhook Secret that is deleted is made again; a referenced one that appears
		// makes its Sender ready. (The cache holds only labelled Secrets: see CacheOptions.)
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.sendersOfProject)).
		Named("sender").
		Complete(r)
}

// sendersOfProject maps an object (a Project, a Secret) to the Senders of its namespace.
func (r *SenderReconciler) sendersOfProject(ctx context.Context, o client.Object) []reconcile.Request {
	var senders v1alpha1.SenderList
	if err := r.List(ctx, &senders, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(senders.Items))
	for _, s := range senders.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return reqs
}
