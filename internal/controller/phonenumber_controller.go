package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
)

// PhoneNumberReconciler decides which PhoneNumber holds each number: it proves each claim (an
// operator's assignment, or the project's own twilio account listing the number:
// phonenumber_proof.go), lets one proved claim hold the number (phonenumber_ownership.go), and
// lists the Senders that use it.
type PhoneNumberReconciler struct {
	client.Client
	// InstallationNamespace is where operators assign numbers to projects; "" assigns none.
	InstallationNamespace string
	// Accounts asks provider accounts which numbers they hold; nil proves no claim made in a
	// project's namespace.
	Accounts phonenumber.Lookup
	// Releases releases the numbers of deleted PhoneNumbers the API bought; nil leaves them
	// held by their finalizer.
	Releases phonenumber.Releaser
	// Events records releases and their failures on the PhoneNumber; nil records none.
	Events record.EventRecorder

	checks numberChecks
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=phonenumbers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=phonenumbers/status,verbs=get;update;patch

// Reconcile proves the PhoneNumber's claim, decides whether it holds its number, and writes Ready,
// the project, the proof and the Senders of the number in one status patch.
func (r *PhoneNumberReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pn v1alpha1.PhoneNumber
	if err := r.Get(ctx, req.NamespacedName, &pn); err != nil {
		if apierrors.IsNotFound(err) {
			r.checks.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pn.DeletionTimestamp.IsZero() {
		r.checks.forget(req.NamespacedName)
		return ctrl.Result{}, r.release(ctx, &pn)
	}

	before := pn.DeepCopy()
	proof, again, err := r.prove(ctx, &pn)
	if err != nil {
		return ctrl.Result{}, err
	}
	holder, err := r.holder(ctx, &pn, proof)
	if err != nil {
		return ctrl.Result{}, err
	}
	senders, err := r.senders(ctx, &pn, proof.project)
	if err != nil {
		return ctrl.Result{}, err
	}
	pn.Status.ObservedGeneration = pn.Generation
	pn.Status.Project = proof.project
	pn.Status.Ownership = proof.ownership
	pn.Status.Account = proof.account
	pn.Status.Capabilities = capabilitiesOf(&pn, proof.account)
	pn.Status.Senders = senders
	setReady(&pn.Status.Conditions, phoneNumberReadiness(&pn, proof, holder), pn.Generation)
	if err := patchStatus(ctx, r.Client, before, &pn, func(p *v1alpha1.PhoneNumber) any { return p.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status of phone number %s: %w", req, err)
	}
	return ctrl.Result{RequeueAfter: again}, nil
}

// release gives a deleted PhoneNumber's bought number back to the account that bought it, unless
// it is annotated to keep it, then lets the PhoneNumber go. A Provider that is gone cannot
// release anything: the number stays in its account, which an event says.
func (r *PhoneNumberReconciler) release(ctx context.Context, pn *v1alpha1.PhoneNumber) error {
	if !controllerutil.ContainsFinalizer(pn, v1alpha1.PhoneNumberReleaseFinalizer) {
		return nil
	}
	if r.Releases == nil {
		return nil // this manager releases nothing: the finalizer waits for one that does
	}
	sid := pn.Annotations[v1alpha1.PhoneNumberSIDAnnotation]
	if pn.Annotations[v1alpha1.PhoneNumberKeepAnnotation] != "true" && sid != "" {
		var p v1alpha1.Provider
		err := r.Get(ctx, client.ObjectKey{Namespace: pn.Namespace, Name: pn.Spec.Provider}, &p)
		switch {
		case apierrors.IsNotFound(err) || pn.Spec.Provider == "":
			r.event(pn, corev1.EventTypeWarning, "ProviderGone", fmt.Sprintf("%s stays in its account: twilio Provider %q is gone, release it there", pn.Spec.Number, pn.Spec.Provider))
		case err != nil:
			return err
		default:
			if err := r.Releases.ReleaseNumber(ctx, &p, sid); err != nil {
				r.event(pn, corev1.EventTypeWarning, "ReleaseFailed", fmt.Sprintf("releasing %s failed (tried again): %v", pn.Spec.Number, err))
				return fmt.Errorf("release %s of phone number %s/%s: %w", sid, pn.Namespace, pn.Name, err)
			}
			r.event(pn, corev1.EventTypeNormal, "Released", fmt.Sprintf("released %s from the account of twilio Provider %s", pn.Spec.Number, p.Name))
			log.FromContext(ctx).Info("released a phone number", "number", pn.Spec.Number, "sid", sid, "provider", p.Name)
		}
	}
	before := pn.DeepCopy()
	controllerutil.RemoveFinalizer(pn, v1alpha1.PhoneNumberReleaseFinalizer)
	if err := r.Patch(ctx, pn, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer of phone number %s/%s: %w", pn.Namespace, pn.Name, err)
	}
	return nil
}

func (r *PhoneNumberReconciler) event(pn *v1alpha1.PhoneNumber, kind, reason, msg string) {
	if r.Events != nil {
		r.Events.Event(pn, kind, reason, msg)
	}
}

// senders lists project's Senders with the PhoneNumber's number, by name.
func (r *PhoneNumberReconciler) senders(ctx context.Context, pn *v1alpha1.PhoneNumber, project string) ([]string, error) {
	if project == "" {
		return nil, nil
	}
	var list v1alpha1.SenderList
	if err := r.List(ctx, &list, client.InNamespace(project), client.MatchingFields{index.SenderPhoneNumber: pn.Spec.Number}); err != nil {
		return nil, fmt.Errorf("list senders of %s in %s: %w", pn.Spec.Number, project, err)
	}
	var names []string
	for _, s := range list.Items {
		if s.DeletionTimestamp.IsZero() {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// capabilitiesOf are what the number can do: as assigned, else as its account reports.
func capabilitiesOf(pn *v1alpha1.PhoneNumber, account *v1alpha1.PhoneNumberAccount) []v1alpha1.PhoneCapability {
	var caps []v1alpha1.PhoneCapability
	switch {
	case len(pn.Spec.Capabilities) > 0:
		caps = slices.Clone(pn.Spec.Capabilities)
	case account != nil:
		caps = slices.Clone(account.Capabilities)
	}
	v1alpha1.SortCapabilities(caps)
	return caps
}

// SetupWithManager registers the reconciler. A PhoneNumber that changes (its status included:
// its proof and whether it holds) brings back the other PhoneNumbers of its number; a Sender
// that takes or leaves a number brings back that number's; a Provider brings back the
// PhoneNumbers of its namespace, which it may prove; so does a Project.
func (r *PhoneNumberReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		// Status writes are the controller's own, except the renewer's Paid condition, which
		// suspends or resumes the number.
		For(&v1alpha1.PhoneNumber{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, paidChanged))).
		Watches(&v1alpha1.PhoneNumber{}, handler.EnqueueRequestsFromMapFunc(r.sameNumber)).
		Watches(&v1alpha1.Sender{}, handler.EnqueueRequestsFromMapFunc(r.ofSenderNumber),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.Provider{}, handler.EnqueueRequestsFromMapFunc(r.ofNamespace)).
		// A Project in the installation's namespace is what its PhoneNumbers without spec.project assign to.
		Watches(&v1alpha1.Project{}, handler.EnqueueRequestsFromMapFunc(r.ofNamespace)).
		Named("phonenumber").
		Complete(r)
}

// paidChanged passes a PhoneNumber whose Paid condition changed status (the renewer's write).
var paidChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	paid := func(o client.Object) metav1.ConditionStatus {
		if pn, ok := o.(*v1alpha1.PhoneNumber); ok {
			if c := meta.FindStatusCondition(pn.Status.Conditions, v1alpha1.ConditionNumberPaid); c != nil {
				return c.Status
			}
		}
		return ""
	}
	return paid(e.ObjectOld) != paid(e.ObjectNew)
}}

func (r *PhoneNumberReconciler) sameNumber(ctx context.Context, o client.Object) []reconcile.Request {
	return r.ofNumber(ctx, o.(*v1alpha1.PhoneNumber).Spec.Number)
}

func (r *PhoneNumberReconciler) ofSenderNumber(ctx context.Context, o client.Object) []reconcile.Request {
	return r.ofNumber(ctx, o.(*v1alpha1.Sender).Spec.PhoneNumber)
}

// ofNumber maps a number to its PhoneNumbers, in every namespace.
func (r *PhoneNumberReconciler) ofNumber(ctx context.Context, number string) []reconcile.Request {
	if number == "" {
		return nil
	}
	var list v1alpha1.PhoneNumberList
	if err := r.List(ctx, &list, client.MatchingFields{index.PhoneNumberNumber: number}); err != nil {
		return nil
	}
	return requestsOf(list.Items)
}

// ofNamespace maps an object to the PhoneNumbers of its namespace.
func (r *PhoneNumberReconciler) ofNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.PhoneNumberList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	return requestsOf(list.Items)
}

func requestsOf(items []v1alpha1.PhoneNumber) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(items))
	for _, p := range items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
	}
	return reqs
}
