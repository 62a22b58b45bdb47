package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/routing"
)

// SenderReconciler keeps the Ready condition, the active channels and the activity of Senders.
type SenderReconciler struct {
	client.Client
	// Activity, when set, puts the sender's traffic from Postgres in its status, refreshed every
	// Activity.Every.
	Activity *ActivitySource
	// WhatsApp, when set, puts what the provider reports of the sender's WhatsApp number in its
	// status, refreshed every WhatsAppEvery (a minute after a failed read).
	WhatsApp      WhatsAppReader
	WhatsAppEvery time.Duration
	// InstallationNamespace is where numbers are assigned to projects; AdoptNumbersBefore is
	// when this installation started checking who owns numbers: the numbers of live senders
	// created before it are assigned to the first project that held them (sender_number.go).
	// Zero adopts none.
	InstallationNamespace string
	AdoptNumbersBefore    time.Time
}

// WhatsAppReader reads what a provider reports of a sender's WhatsApp number: nil when the
// sender's WhatsApp goes through no provider that reports it (the sandbox).
type WhatsAppReader interface {
	WhatsAppStatus(ctx context.Context, snd *v1alpha1.Sender) (*v1alpha1.WhatsAppStatus, error)
}

// whatsAppRetry is how soon a failed read of a WhatsApp number is tried again.
const whatsAppRetry = time.Minute

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
	// A webhook disabled for failing is enabled again by a change of the spec (a fixed URL).
	v1alpha1.EnableWebhookOnSpecChange(&sender.Status.Conditions, sender.Generation)
	// A number the project does not own sends nothing live: its channels are not listed.
	numberOwned, err := r.reconcileNumber(ctx, &sender)
	if err != nil {
		return ctrl.Result{}, err
	}
	if numberOwned != nil {
		meta.SetStatusCondition(&sender.Status.Conditions, *numberOwned)
	} else {
		meta.RemoveStatusCondition(&sender.Status.Conditions, v1alpha1.ConditionNumberOwned)
	}
	sender.Status.Channels = nil
	if readyResult.ready {
		sender.Status.Channels = numberChannels(&sender, sender.SendableChannels(), numberOwned)
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
	if sender.Status.Routes, err = r.routes(ctx, &sender); err != nil {
		return ctrl.Result{}, err
	}
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
	if wait := r.refreshWhatsApp(ctx, &sender, time.Now()); wait > 0 && (result.RequeueAfter == 0 || wait < result.RequeueAfter) {
		result.RequeueAfter = wait
	}
	if err := patchStatus(ctx, r.Client, before, &sender, func(s *v1alpha1.Sender) any { return s.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status of sender %s: %w", req, err)
	}
	return result, nil
}

// refreshWhatsApp reads the sender's WhatsApp number from its provider when the status has not
// been read for it yet or is due, and returns how long until the next read (0: none).
func (r *SenderReconciler) refreshWhatsApp(ctx context.Context, snd *v1alpha1.Sender, now time.Time) time.Duration {
	if r.WhatsApp == nil || snd.Spec.WhatsApp == nil || snd.Spec.WhatsApp.AccountID == "" {
		snd.Status.WhatsApp = nil
		return 0
	}
	every := r.WhatsAppEvery
	if every <= 0 {
		every = time.Hour
	}
	prev := snd.Status.WhatsApp
	if prev != nil && prev.PhoneNumberID == snd.Spec.WhatsApp.AccountID {
		due := prev.CheckedAt.Add(every)
		if prev.Error != "" {
			due = prev.CheckedAt.Add(whatsAppRetry)
		}
		if now.Before(due) {
			return due.Sub(now)
		}
	} else {
		prev = nil
	}
	st, err := r.WhatsApp.WhatsAppStatus(ctx, snd)
	switch {
	case err != nil:
		// The figures of the last good read stay; what went wrong is said beside them.
		failed := &v1alpha1.WhatsAppStatus{PhoneNumberID: snd.Spec.WhatsApp.AccountID}
		if prev != nil {
			failed = prev.DeepCopy()
		}
		failed.CheckedAt, failed.Error = metav1.NewTime(now), err.Error()
		snd.Status.WhatsApp = failed
		return whatsAppRetry
	case st == nil:
		snd.Status.WhatsApp = nil
		return 0
	}
	st.CheckedAt = metav1.NewTime(now)
	snd.Status.WhatsApp = st
	return every
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
		// Whether a project owns a number follows its PhoneNumbers (their status included); a
		// project's own twilio Provider can prove its numbers.
		Watches(&v1alpha1.PhoneNumber{}, handler.EnqueueRequestsFromMapFunc(r.sendersOfNumber)).
		Watches(&v1alpha1.Provider{}, handler.EnqueueRequestsFromMapFunc(r.sendersOfProvider)).
		Watches(&v1alpha1.RoutingPolicy{}, handler.EnqueueRequestsFromMapFunc(r.sendersOfProvider)).
		Named("sender").
		Complete(r)
}

// routes are the sender's routes as resolved from the Providers and RoutingPolicies of its
// namespace and the installation's.
func (r *SenderReconciler) routes(ctx context.Context, sender *v1alpha1.Sender) ([]v1alpha1.ResolvedRoute, error) {
	scope, err := routing.Scope(ctx, r.Client, sender.Namespace, r.InstallationNamespace)
	if err != nil {
		return nil, err
	}
	return sender.ResolvedRoutes(scope), nil
}

// sendersOfProvider maps a Provider (or a RoutingPolicy) to the Senders that may route through
// it: those of its namespace, or every Sender for one of the installation's.
func (r *SenderReconciler) sendersOfProvider(ctx context.Context, o client.Object) []reconcile.Request {
	if r.InstallationNamespace == "" || o.GetNamespace() != r.InstallationNamespace {
		return r.sendersOfProject(ctx, o)
	}
	return r.senders(ctx)
}

// sendersOfProject maps an object (a Project, a Secret) to the Senders of its namespace.
func (r *SenderReconciler) sendersOfProject(ctx context.Context, o client.Object) []reconcile.Request {
	return r.senders(ctx, client.InNamespace(o.GetNamespace()))
}

// senders are the requests of the Senders opts list.
func (r *SenderReconciler) senders(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var senders v1alpha1.SenderList
	if err := r.List(ctx, &senders, opts...); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(senders.Items))
	for _, s := range senders.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return reqs
}

// sendersOfNumber maps a PhoneNumber to the Senders of its number, in every project.
func (r *SenderReconciler) sendersOfNumber(ctx context.Context, o client.Object) []reconcile.Request {
	return r.senders(ctx, client.MatchingFields{index.SenderPhoneNumber: o.(*v1alpha1.PhoneNumber).Spec.Number})
}
