package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/signingsecret"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// reconcileWebhookSecret makes sure the sender's webhook has a signing secret and returns where it
// is, or the readiness failure that explains why it has none. A sender without a webhook keeps
// its generated Secret (it goes with the Sender, or with a REST PATCH that removes the webhook):
// deleting it here would race a webhook added again at once, whose new secret the API has
// already shown.
func (r *SenderReconciler) reconcileWebhookSecret(ctx context.Context, sender *v1alpha1.Sender) (*v1alpha1.SecretKeyRef, *readiness, error) {
	if sender.Spec.Webhook == nil {
		return nil, nil, nil
	}
	return reconcileSigningSecret(ctx, r.Client, sender, true, sender.Spec.Webhook.SecretRef, signingsecret.ForSender(sender))
}

// reconcileSigningSecret gives owner's webhook a signing secret: the one ref names (it must exist
// and carry the webhook-secret label, or the cache does not see it), else a generated Secret
// named generated, owned by owner (signingsecret). When owner has no webhook (wanted false), the
// generated Secret is removed.
func reconcileSigningSecret(ctx context.Context, c client.Client, owner client.Object, wanted bool, ref *v1alpha1.SecretKeyRef,
	generated string) (*v1alpha1.SecretKeyRef, *readiness, error) {
	store := signingsecret.Store{Client: c, Live: c}
	if !wanted {
		return nil, nil, store.Delete(ctx, owner, generated)
	}
	if ref != nil {
		var s corev1.Secret
		err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: ref.Name}, &s)
		if apierrors.IsNotFound(err) || (err == nil && len(s.Data[ref.Key]) == 0) {
			failed := notReady(v1alpha1.ReasonWebhookSecretNotFound, fmt.Sprintf(
				"Secret %s with key %s and label %s=true not found", ref.Name, ref.Key, v1alpha1.SecretLabel))
			return nil, &failed, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read webhook secret %s: %w", ref.Name, err)
		}
		return ref, nil, store.Delete(ctx, owner, generated)
	}
	_, err := store.Ensure(ctx, owner, generated)
	if errors.Is(err, signingsecret.ErrForeign) {
		failed := notReady(v1alpha1.ReasonWebhookSecretNotFound,
			fmt.Sprintf("Secret %s exists and belongs to something else; set spec.webhook.secretRef", generated))
		return nil, &failed, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &v1alpha1.SecretKeyRef{Name: generated, Key: signingsecret.Key}, nil, nil
}
