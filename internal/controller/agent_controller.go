package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/flow"
)

// AgentReconciler keeps an Agent's status: the senders it answers on (a sender answers with at
// most one agent: the oldest that names it) and Ready, which says whether its model, and each
// fallback's, has an account to be called with.
type AgentReconciler struct {
	client.Client
	// InstallationNamespace holds the model Providers that serve agents of provider zavu.
	InstallationNamespace string
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=agents,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=agents/status,verbs=get;update;patch

// Reconcile writes the Agent's status.
func (r *AgentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var a v1alpha1.Agent
	if err := r.Get(ctx, req.NamespacedName, &a); err != nil || !a.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := a.DeepCopy()
	held, conflicts, err := r.senders(ctx, &a)
	if err != nil {
		return ctrl.Result{}, err
	}
	a.Status.Senders, a.Status.Conflicts = held, conflicts
	ready, err := r.readiness(ctx, &a)
	if err != nil {
		return ctrl.Result{}, err
	}
	a.Status.ObservedGeneration = a.Generation
	setReady(&a.Status.Conditions, ready, a.Generation)
	if err := patchStatus(ctx, r.Client, before, &a, func(a *v1alpha1.Agent) any { return a.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status of agent %s: %w", req, err)
	}
	return ctrl.Result{}, nil
}

// senders splits a's senders into those it answers on and those another agent holds.
func (r *AgentReconciler) senders(ctx context.Context, a *v1alpha1.Agent) (held, conflicts []string, err error) {
	var agents v1alpha1.AgentList
	if err := r.List(ctx, &agents, client.InNamespace(a.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("list agents of %s: %w", a.Namespace, err)
	}
	var senders v1alpha1.SenderList
	if err := r.List(ctx, &senders, client.InNamespace(a.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("list senders of %s: %w", a.Namespace, err)
	}
	exists := map[string]bool{}
	for _, s := range senders.Items {
		if s.DeletionTimestamp.IsZero() {
			exists[s.Name] = true
		}
	}
	holders := v1alpha1.SenderHolders(agents.Items)
	for _, s := range a.Spec.Senders {
		switch h := holders[s]; {
		case !exists[s]:
		case h == a.Name:
			held = append(held, s)
		default:
			conflicts = append(conflicts, s+"="+h)
		}
	}
	return held, conflicts, nil
}

// readiness resolves the account of the agent's model and of each fallback.
func (r *AgentReconciler) readiness(ctx context.Context, a *v1alpha1.Agent) (readiness, error) {
	models := []v1alpha1.FallbackModel{{Provider: a.Spec.Provider, Model: a.Spec.Model, APIKeyRef: a.Spec.APIKeyRef,
		ProviderRef: a.Spec.ProviderRef}}
	models = append(models, a.Spec.Fallbacks...)
	for i, m := range models {
		if i > 0 && m.APIKeyRef == nil && m.ProviderRef == "" && m.Provider == a.Spec.Provider {
			m.APIKeyRef, m.ProviderRef = a.Spec.APIKeyRef, a.Spec.ProviderRef
		}
		problem, err := r.resolve(ctx, a.Namespace, m)
		if err != nil {
			return readiness{}, err
		}
		if problem != "" {
			which := "the model " + m.Model
			if i > 0 {
				which = fmt.Sprintf("fallback %d (%s %s)", i, m.Provider, m.Model)
			}
			return notReady(v1alpha1.ReasonModelUnresolved, which+": "+problem), nil
		}
	}
	msg := fmt.Sprintf("%s %s", a.Spec.Provider, a.Spec.Model)
	if !a.Spec.Enabled {
		msg += "; disabled: it answers no message until spec.enabled is true"
	}
	// A flow that does not pass the API's checks never runs; the agent answers all the same.
	if errs := flow.Validate(a.Spec.Flows, a.Spec.Tools); len(errs) > 0 {
		msg += fmt.Sprintf("; %d flow problem(s), and those flows never run: %s: %s", len(errs), errs[0].Path, errs[0].Message)
	}
	return readyOK(msg), nil
}

// resolve says what keeps m from being called, "" when nothing does.
func (r *AgentReconciler) resolve(ctx context.Context, namespace string, m v1alpha1.FallbackModel) (string, error) {
	switch {
	case m.APIKeyRef != nil:
		var s corev1.Secret
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: m.APIKeyRef.Name}, &s)
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("Secret %q not found (it needs the label %s: \"true\")", m.APIKeyRef.Name, v1alpha1.SecretLabel), nil
		}
		if err != nil {
			return "", fmt.Errorf("read secret %s/%s: %w", namespace, m.APIKeyRef.Name, err)
		}
		if len(s.Data[m.APIKeyRef.Key]) == 0 {
			return fmt.Sprintf("Secret %q has no key %s", m.APIKeyRef.Name, m.APIKeyRef.Key), nil
		}
		return "", nil
	case m.ProviderRef != "":
		return r.providerProblem(ctx, namespace, m.ProviderRef, m.Provider)
	case m.Provider == v1alpha1.ModelZavu:
		var list v1alpha1.ProviderList
		if r.InstallationNamespace != "" {
			if err := r.List(ctx, &list, client.InNamespace(r.InstallationNamespace)); err != nil {
				return "", fmt.Errorf("list providers of %s: %w", r.InstallationNamespace, err)
			}
		}
		p := v1alpha1.InstallationModel(list.Items)
		if p == nil {
			return "this installation has no model Provider for provider zavu (a default openai, anthropic, google or mistral Provider in its namespace)", nil
		}
		if !p.IsReady() {
			return fmt.Sprintf("the installation's model Provider %s is not Ready", p.Name), nil
		}
		return "", nil
	default:
		return "no apiKeyRef and no providerRef", nil
	}
}

func (r *AgentReconciler) providerProblem(ctx context.Context, namespace, name string, want v1alpha1.ModelProvider) (string, error) {
	var p v1alpha1.Provider
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("Provider %q not found", name), nil
	}
	if err != nil {
		return "", fmt.Errorf("read provider %s/%s: %w", namespace, name, err)
	}
	if !v1alpha1.ServesModel(p.Spec.Type, want) {
		return fmt.Sprintf("Provider %q is of type %s, not a %s model provider", name, p.Spec.Type, want), nil
	}
	if !p.IsReady() {
		return fmt.Sprintf("Provider %q is not Ready", name), nil
	}
	return "", nil
}

// SetupWithManager registers the reconciler: an agent is looked at again when any agent of its
// namespace changes (who holds a sender), when a sender comes or goes, when a Secret of its
// namespace changes, and when a model Provider changes (its namespace's, or the installation's
// for zavu agents).
func (r *AgentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Agent{}).
		Watches(&v1alpha1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfNamespace)).
		Watches(&v1alpha1.Sender{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfNamespace)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfNamespace)).
		Watches(&v1alpha1.Provider{}, handler.EnqueueRequestsFromMapFunc(r.agentsOfProvider)).
		Named("agent").
		Complete(r)
}

func (r *AgentReconciler) agentsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.agentRequests(ctx, client.InNamespace(o.GetNamespace()))
}

// agentsOfProvider: a Provider of a project matters to its namespace's agents; one of the
// installation's to every zavu agent too.
func (r *AgentReconciler) agentsOfProvider(ctx context.Context, o client.Object) []reconcile.Request {
	p, ok := o.(*v1alpha1.Provider)
	if !ok || !p.Spec.Type.IsModel() {
		return nil
	}
	if o.GetNamespace() != r.InstallationNamespace {
		return r.agentRequests(ctx, client.InNamespace(o.GetNamespace()))
	}
	var list v1alpha1.AgentList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, a := range list.Items {
		if a.Spec.Provider == v1alpha1.ModelZavu || a.Namespace == r.InstallationNamespace ||
			slices.ContainsFunc(a.Spec.Fallbacks, func(f v1alpha1.FallbackModel) bool { return f.Provider == v1alpha1.ModelZavu }) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
		}
	}
	return reqs
}

func (r *AgentReconciler) agentRequests(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list v1alpha1.AgentList
	if err := r.List(ctx, &list, opts...); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, a := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
	}
	return reqs
}
