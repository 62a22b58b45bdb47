package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// readProviderSecret is the step that reads the Provider's credentials Secret from the cache. It
// returns nil when the Provider names none, or when the Secret is not there. The cache holds only
// Secrets labelled messaging.switchboard.io/secret=true (CacheOptions), so an unlabelled Secret
// reads as missing, and the SecretNotFound message says so.
func readProviderSecret(ctx context.Context, c client.Client, p *v1alpha1.Provider) (*corev1.Secret, error) {
	if p.Spec.SecretRef == nil {
		return nil, nil
	}
	var s corev1.Secret
	err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.SecretRef.Name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read secret %s of provider %s: %w", p.Spec.SecretRef.Name, p.Name, err)
	}
	return &s, nil
}
