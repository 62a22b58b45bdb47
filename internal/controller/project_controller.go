package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/index"
)

// The field indexes the controller lists by (registered by index.Register): spec.parent, so a
// parent's change reaches its sub-accounts; the team key, so a verification step reaches every
// project of the team.
const (
	projectParentField = index.ProjectParent
	projectTeamField   = index.ProjectTeam
)

// ProjectReconciler keeps the Ready condition of Projects.
type ProjectReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=projects,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=projects/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconcile computes the Project's Ready condition.
func (r *ProjectReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var project v1alpha1.Project
	if err := r.Get(ctx, req.NamespacedName, &project); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !project.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	before := project.DeepCopy()
	result, err := r.evaluate(ctx, &project)
	if err != nil {
		return ctrl.Result{}, err
	}
	var team v1alpha1.ProjectList
	if err := r.List(ctx, &team, client.MatchingFields{projectTeamField: project.TeamKey()}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list projects of team %s: %w", project.TeamKey(), err)
	}
	project.Status.RequestRateLimit = v1alpha1.EffectiveRequestRate(&project, team.Items)
	project.Status.ObservedGeneration = project.Generation
	setReady(&project.Status.Conditions, result, project.Generation)
	if err := patchStatus(ctx, r.Client, before, &project, func(p *v1alpha1.Project) any { return p.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status of project %s: %w", req, err)
	}
	return ctrl.Result{}, nil
}

// evaluate gathers what the readiness checks need from the cache.
func (r *ProjectReconciler) evaluate(ctx context.Context, project *v1alpha1.Project) (readiness, error) {
	var siblings v1alpha1.ProjectList
	if err := r.List(ctx, &siblings, client.InNamespace(project.Namespace)); err != nil {
		return readiness{}, fmt.Errorf("list projects in %s: %w", project.Namespace, err)
	}
	var parent *v1alpha1.Project
	if project.Spec.Parent != "" {
		var parents v1alpha1.ProjectList
		if err := r.List(ctx, &parents, client.InNamespace(project.Spec.Parent)); err != nil {
			return readiness{}, fmt.Errorf("list projects in %s: %w", project.Spec.Parent, err)
		}
		parent = v1alpha1.NamespaceProject(parents.Items)
	}
	return projectReadiness(project, siblings.Items, parent), nil
}

// projectReadiness is the chain of checks of a Project: it must be its namespace's project, and its
// parent, when it names one, must exist.
func projectReadiness(project *v1alpha1.Project, siblings []v1alpha1.Project, parent *v1alpha1.Project) readiness {
	if owner := v1alpha1.NamespaceProject(siblings); owner != nil && owner.UID != project.UID {
		return notReady(v1alpha1.ReasonDuplicateProject,
			fmt.Sprintf("namespace %s already has project %q; a namespace holds one project", project.Namespace, owner.Name))
	}
	if project.Spec.Parent != "" {
		if project.Spec.Parent == project.Namespace {
			return notReady(v1alpha1.ReasonParentNotFound, "a project cannot be its own parent")
		}
		if parent == nil {
			return notReady(v1alpha1.ReasonParentNotFound,
				fmt.Sprintf("parent namespace %s has no Project", project.Spec.Parent))
		}
	}
	return readyOK("project is ready")
}

// SetupWithManager registers the reconciler and the watches that bring related Projects back.
func (r *ProjectReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Project{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A Project that appears, goes or changes its spec can change which Project of its
		// namespace is the real one, whether the sub-accounts that name its namespace as parent
		// are ready, and the request-rate tier of its team.
		Watches(&v1alpha1.Project{}, handler.EnqueueRequestsFromMapFunc(r.relatedProjects),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("project").
		Complete(r)
}

func (r *ProjectReconciler) relatedProjects(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	lists := []client.ListOption{
		client.InNamespace(o.GetNamespace()),
		client.MatchingFields{projectParentField: o.GetNamespace()},
		client.MatchingFields{projectTeamField: o.(*v1alpha1.Project).TeamKey()},
	}
	for _, opt := range lists {
		var related v1alpha1.ProjectList
		if err := r.List(ctx, &related, opt); err != nil {
			log.FromContext(ctx).Error(err, "list related projects")
			continue
		}
		for _, p := range related.Items {
			if p.Namespace != o.GetNamespace() || p.Name != o.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
			}
		}
	}
	return reqs
}
