package controller

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/risk"
)

// RiskPolicyReconciler compiles a RiskPolicy's rules and says in Ready whether they do.
type RiskPolicyReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=riskpolicies/status,verbs=get;update;patch

// Reconcile sets Ready: True when every rule compiles, False (InvalidRules) with CEL's reasons.
func (r *RiskPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rp v1alpha1.RiskPolicy
	if err := r.Get(ctx, req.NamespacedName, &rp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := rp.DeepCopy()
	rules := risk.RulesOf(rp.Spec)
	ready := readyOK(fmt.Sprintf("%d rules compile", len(rules)))
	if _, err := risk.Compile(rules, rp.Spec.Lists); err != nil {
		ready = notReady(v1alpha1.ReasonInvalidRules, "reviewed sends are held until the rules compile: "+err.Error())
	}
	rp.Status.ObservedGeneration = rp.Generation
	setReady(&rp.Status.Conditions, ready, rp.Generation)
	if err := patchStatus(ctx, r.Client, before, &rp, func(p *v1alpha1.RiskPolicy) any { return p.Status }); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch status of risk policy %s: %w", req, err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches RiskPolicies.
func (r *RiskPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.RiskPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("riskpolicy").
		Complete(r)
}
