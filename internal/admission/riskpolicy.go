// Package admission holds the manager's admission webhooks: checks the API server asks before it
// stores a resource, for what a CRD's schema and CEL rules cannot say.
package admission

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/risk"
)

// RiskPolicyPath is where the API server asks about RiskPolicies.
const RiskPolicyPath = "/validate-messaging-switchboard-io-v1alpha1-riskpolicy"

// +kubebuilder:webhook:path=/validate-messaging-switchboard-io-v1alpha1-riskpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=messaging.switchboard.io,resources=riskpolicies,verbs=create;update,versions=v1alpha1,name=riskpolicies.messaging.switchboard.io,admissionReviewVersions=v1

// RiskPolicies refuses a RiskPolicy whose rules do not compile, naming each rule's expression
// and CEL's reason, so `kubectl apply` and GitOps see the mistake instead of a policy that holds
// every reviewed send (the controller's InvalidRules condition stays for policies stored before
// the webhook, or while it was not reachable).
type RiskPolicies struct{}

// Setup serves the webhook on the manager's webhook server.
func Setup(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.RiskPolicy{}).WithValidator(RiskPolicies{}).Complete()
}

func (RiskPolicies) ValidateCreate(_ context.Context, rp *v1alpha1.RiskPolicy) (admission.Warnings, error) {
	return nil, check(rp)
}

func (RiskPolicies) ValidateUpdate(_ context.Context, _, rp *v1alpha1.RiskPolicy) (admission.Warnings, error) {
	return nil, check(rp)
}

func (RiskPolicies) ValidateDelete(context.Context, *v1alpha1.RiskPolicy) (admission.Warnings, error) {
	return nil, nil
}

// check compiles each rule alone, so each error names its rule's field.
func check(rp *v1alpha1.RiskPolicy) error {
	var errs field.ErrorList
	rules := field.NewPath("spec", "rules")
	for i, r := range risk.RulesOf(rp.Spec) {
		if _, err := risk.Compile([]risk.Rule{r}, rp.Spec.Lists); err != nil {
			reason := strings.TrimPrefix(err.Error(), "rule "+r.Name+": ")
			errs = append(errs, field.Invalid(rules.Index(i).Child("expression"), r.Expression, reason))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("RiskPolicy").GroupKind(), rp.Name, errs)
}
