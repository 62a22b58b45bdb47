// Package routing reads what a project's senders may route their messages through: the Providers
// and RoutingPolicies of its namespace and of the installation's (docs/providers.md#routes). The
// send path and the Sender controller read the same scope, so a sender's status shows the routes
// its messages take.
package routing

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=routingpolicies,verbs=get;list;watch

// Scope reads the routing scope of project; installation is the installation's namespace ("" for
// none).
func Scope(ctx context.Context, r client.Reader, project, installation string) (v1alpha1.RoutingScope, error) {
	var scope v1alpha1.RoutingScope
	var providers v1alpha1.ProviderList
	var policies v1alpha1.RoutingPolicyList
	if err := r.List(ctx, &providers, client.InNamespace(project)); err != nil {
		return scope, fmt.Errorf("list providers of %s: %w", project, err)
	}
	if err := r.List(ctx, &policies, client.InNamespace(project)); err != nil {
		return scope, fmt.Errorf("list routing policies of %s: %w", project, err)
	}
	scope.Project, scope.ProjectRoutes = providers.Items, v1alpha1.PolicyRoutes(policies.Items)
	if installation == "" || installation == project {
		return scope, nil
	}
	if err := r.List(ctx, &providers, client.InNamespace(installation)); err != nil {
		return scope, fmt.Errorf("list installation providers: %w", err)
	}
	if err := r.List(ctx, &policies, client.InNamespace(installation)); err != nil {
		return scope, fmt.Errorf("list installation routing policies: %w", err)
	}
	scope.Installation, scope.InstallationRoutes = providers.Items, v1alpha1.PolicyRoutes(policies.Items)
	return scope, nil
}
