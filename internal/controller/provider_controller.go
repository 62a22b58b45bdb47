package controller

import (
	"cmp"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// ProviderReconciler checks the credentials of Providers against their provider and keeps their
// Ready condition.
type ProviderReconciler struct {
	client.Client
	// Checks asks each provider type whether credentials are good. A type without one is Ready
	// once its Secret is complete ("credentials are not checked for <type>").
	Checks map[v1alpha1.ProviderType]CredentialCheck
	// InstallationNamespace holds the Providers that may set baseURL; AllowProjectEndpoints lets
	// every Provider set it (v1alpha1.Provider.EndpointAllowed).
	InstallationNamespace string
	AllowProjectEndpoints bool
	// Circuits, when not nil, shows each Provider's circuit breaker in its status (circuit,
	// and the CircuitClosed condition), read again every CircuitEvery.
	Circuits     CircuitStates
	CircuitEvery time.Duration

	ledger checkLedger
}

// CircuitStates reads the Providers' circuit breakers (circuit.Breakers).
type CircuitStates interface {
	State(ctx context.Context, provider string) (string, error)
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=providers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=providers/status,verbs=get;update;patch

// Reconcile reads the Provider's Secret, checks the credentials with the provider, and writes
// Ready and status.account. It comes back for a periodic re-check, or after a backoff while the
// provider cannot be reached.
func (r *ProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p v1alpha1.Provider
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			r.ledger.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !p.DeletionTimestamp.IsZero() {
		r.ledger.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}

	before := p.DeepCopy()
	facts, again, err := r.evaluate(ctx, &p)
	if err != nil {
		return ctrl.Result{}, err
	}
	ready := providerReadiness(facts)
	p.Status.ObservedGeneration = p.Generation
	p.Status.Account = ""
	if ready.ready && facts.outcome != nil {
		p.Status.Account = facts.outcome.account
	}
	setReady(&p.Status.Conditions, ready, p.Generation)
	if r.Circuits != nil {
		if err := r.showCircuit(ctx, &p); err != nil {
			return ctrl.Result{}, err
		}
		if every := cmp.Or(r.CircuitEvery, defaultCircuitEvery); again == 0 || every < again {
			again = every
		}
	}
	if err := patchStatus(ctx, r.Client, before, &p, func(p *v1alpha1.Provider) any { return p.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status of provider %s: %w", req, err)
	}
	return ctrl.Result{RequeueAfter: again}, nil
}

// defaultCircuitEvery is how often a Provider's circuit is read into its status.
const defaultCircuitEvery = 10 * time.Second

// showCircuit writes p's circuit breaker into its status: circuit, and the CircuitClosed
// condition (False while routes put the Provider after their others).
func (r *ProviderReconciler) showCircuit(ctx context.Context, p *v1alpha1.Provider) error {
	state, err := r.Circuits.State(ctx, p.Namespace+"/"+p.Name)
	if err != nil {
		return err
	}
	c := metav1.Condition{Type: v1alpha1.ConditionCircuitClosed, Status: metav1.ConditionTrue, Reason: "Closed",
		Message: "calls go through", ObservedGeneration: p.Generation}
	switch state {
	case "open":
		p.Status.Circuit = "open"
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "Open",
			"calls failed in a row: routes try the Provider after their others until a probe call goes through"
	case "half_open":
		p.Status.Circuit = "halfOpen"
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "HalfOpen", "one probe call is under way"
	default:
		p.Status.Circuit = "closed"
	}
	meta.SetStatusCondition(&p.Status.Conditions, c)
	return nil
}

// evaluate runs the steps in order: read the Secret, then check the credentials with the provider.
// It returns the facts readiness is computed from, and when to come back (0: on a change only).
func (r *ProviderReconciler) evaluate(ctx context.Context, p *v1alpha1.Provider) (providerFacts, time.Duration, error) {
	facts := providerFacts{provider: p, endpointRefused: !p.EndpointAllowed(r.InstallationNamespace, r.AllowProjectEndpoints)}
	secret, err := readProviderSecret(ctx, r.Client, p)
	if err != nil {
		return facts, 0, err
	}
	facts.secret = secret
	again, err := r.checkCredentials(ctx, &facts)
	return facts, again, err
}

// SetupWithManager registers the reconciler; a change of a Secret brings back the Providers of
// its namespace that name it.
func (r *ProviderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Provider{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The cache holds only labelled Secrets (CacheOptions): labelling a Secret reads as its creation.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.providersOfSecret)).
		// A check waits on the provider for up to providerCheckTimeout: a few run side by side so
		// one unreachable provider does not hold up the others.
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: 4}).
		Named("provider").
		Complete(r)
}

// providersOfSecret maps a Secret to the Providers of its namespace whose secretRef names it.
func (r *ProviderReconciler) providersOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ProviderList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range list.Items {
		if p.Spec.SecretRef != nil && p.Spec.SecretRef.Name == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
		}
	}
	return reqs
}
