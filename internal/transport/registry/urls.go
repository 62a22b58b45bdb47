package registry

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/transport/webrisk"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
)

// URL verification asks the installation's webrisk Provider (the oldest Ready one in the
// installation's namespace); without one there is no threat lookup.

var _ urlcheck.Lookup = (*Registry)(nil)

// LookupURL implements urlcheck.Lookup.
func (r *Registry) LookupURL(ctx context.Context, u string) ([]string, time.Time, bool, error) {
	if r.InstallationNamespace == "" {
		return nil, time.Time{}, false, nil
	}
	var list v1alpha1.ProviderList
	if err := r.Reader.List(ctx, &list, client.InNamespace(r.InstallationNamespace)); err != nil {
		return nil, time.Time{}, false, fmt.Errorf("list providers of %s: %w", r.InstallationNamespace, err)
	}
	var p *v1alpha1.Provider
	for _, c := range kubewrite.Live(list.Items) {
		if c.Spec.Type == v1alpha1.ProviderWebRisk && (p == nil || c.CreationTimestamp.Before(&p.CreationTimestamp)) {
			p = &c
		}
	}
	if p == nil {
		return nil, time.Time{}, false, nil
	}
	if f := unusable(p); f != nil {
		return nil, time.Time{}, true, f
	}
	secret, err := r.credentials(ctx, p)
	if err != nil {
		return nil, time.Time{}, true, err
	}
	c, err := webrisk.New(webrisk.Config{BaseURL: r.endpoint(p), APIKey: string(secret.Data[v1alpha1.ProviderKeyAPIKey]), HTTP: r.HTTP})
	if err != nil {
		return nil, time.Time{}, true, err
	}
	v, err := c.Lookup(ctx, u)
	if err != nil {
		return nil, time.Time{}, true, err
	}
	return v.Threats, v.ExpireTime, true, nil
}
