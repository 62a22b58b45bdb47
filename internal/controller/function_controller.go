package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/functions"
)

// FunctionReconciler keeps a Function's parts: its key and URL token (for functions applied with
// kubectl), its trigger rows, a deployment of each new spec.source, its status read from its
// deployments, and, once it is deleted, its key revoked and its rows gone.
type FunctionReconciler struct {
	client.Client
	Functions *functions.Service
}

// buildingRecheck is how often the status of a function being built is read again: the build
// runs on a worker, which may be another process.
const buildingRecheck = 2 * time.Second

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=functions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=functions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=functions/finalizers,verbs=update
// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=agents,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings a Function's parts in line with it.
func (r *FunctionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var f v1alpha1.Function
	if err := r.Get(ctx, req.NamespacedName, &f); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !f.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&f, v1alpha1.FunctionFinalizer) {
			return ctrl.Result{}, nil
		}
		if err := r.Functions.Cleanup(ctx, &f); err != nil {
			return ctrl.Result{}, err
		}
		before := f.DeepCopy()
		controllerutil.RemoveFinalizer(&f, v1alpha1.FunctionFinalizer)
		return ctrl.Result{}, client.IgnoreNotFound(r.Patch(ctx, &f, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
	}
	if before := f.DeepCopy(); controllerutil.AddFinalizer(&f, v1alpha1.FunctionFinalizer) {
		if err := r.Patch(ctx, &f, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{Requeue: true}, nil
			}
			return ctrl.Result{}, fmt.Errorf("add finalizer to function %s: %w", req, err)
		}
	}
	adopted, err := r.Functions.Adopt(ctx, &f)
	if apierrors.IsConflict(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	f = *adopted
	if _, err := r.Functions.SyncTriggers(ctx, &f); err != nil {
		return ctrl.Result{}, err
	}
	digest, err := r.Functions.DeployManifest(ctx, &f)
	if err != nil {
		return ctrl.Result{}, err
	}
	st, err := r.Functions.StateOf(ctx, &f)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The agent and tools its active deployment declares.
	if err := r.Functions.SyncAgent(ctx, &f); err != nil {
		logf.FromContext(ctx).Error(err, "the function's agent")
	}
	before := f.DeepCopy()
	f.Status.SourceDigest = digest
	if functions.ApplyState(&f, st, r.Functions.PublicURLOf(&f)) || before.Status.SourceDigest != digest {
		if err := r.Status().Patch(ctx, &f, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if st.Phase == v1alpha1.FunctionBundling || st.Phase == v1alpha1.FunctionDeploying {
		return ctrl.Result{RequeueAfter: buildingRecheck}, nil
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler.
func (r *FunctionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Function{}).
		Owns(&v1alpha1.Agent{}).
		Named("function").
		Complete(r)
}
