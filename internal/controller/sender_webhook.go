package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// generatedWebhookSecretName is the Secret the controller makes for a sender's webhook without secretRef.
func generatedWebhookSecretName(sender *v1alpha1.Sender) string { return sender.Name + "-webhook" }

// reconcileWebhookSecret makes sure the sender's webhook has a signing secret and returns where it
// is, or the readiness failure that explains why it has none. A sender without a webhook keeps
// its generated Secret (it goes with the Sender, or with a REST PATCH that removes the webhook):
// deleting it here would race a webhook added again at once, whose new secret the API has
// already shown.
func (r *SenderReconciler) reconcileWebhookSecret(ctx context.Context, sender *v1alpha1.Sender) (*v1alpha1.SecretKeyRef, *readiness, error) {
	if sender.Spec.Webhook == nil {
		return nil, nil, nil
	}
	return reconcileSigningSecret(ctx, r.Client, sender, true, sender.Spec.Webhook.SecretRef, generatedWebhookSecretName(sender))
}

// reconcileSigningSecret gives owner's webhook a signing secret: the one ref names (it must exist
// and carry the webhook-secret label, or the cache does not see it), else a generated Secret
// named generated, owned by owner. When owner has no webhook (wanted false), the generated Secret
// is removed.
func reconcileSigningSecret(ctx context.Context, c client.Client, owner client.Object, wanted bool, ref *v1alpha1.SecretKeyRef,
	generated string) (*v1alpha1.SecretKeyRef, *readiness, error) {
	if !wanted {
		return nil, nil, deleteGeneratedSecret(ctx, c, owner, generated)
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
		return ref, nil, deleteGeneratedSecret(ctx, c, owner, generated)
	}

	out := &v1alpha1.SecretKeyRef{Name: generated, Key: v1alpha1.GeneratedWebhookSecretKey}
	var s corev1.Secret
	err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: generated}, &s)
	switch {
	case err == nil:
		if !metav1.IsControlledBy(&s, owner) {
			failed := notReady(v1alpha1.ReasonWebhookSecretNotFound,
				fmt.Sprintf("Secret %s exists and belongs to something else; set spec.webhook.secretRef", generated))
			return nil, &failed, nil
		}
		return out, nil, nil
	case !apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("read webhook secret %s: %w", generated, err)
	}
	value, err := NewWebhookSecret()
	if err != nil {
		return nil, nil, err
	}
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: owner.GetNamespace(), Name: generated,
			Labels: map[string]string{v1alpha1.SecretLabel: "true"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{v1alpha1.GeneratedWebhookSecretKey: []byte(value)},
	}
	if err := controllerutil.SetControllerReference(owner, &s, c.Scheme()); err != nil {
		return nil, nil, err
	}
	if err := c.Create(ctx, &s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, nil, fmt.Errorf("create webhook secret %s: %w", generated, err)
	}
	return out, nil, nil
}

func deleteGeneratedSecret(ctx context.Context, c client.Client, owner client.Object, name string) error {
	var s corev1.Secret
	err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read webhook secret: %w", err)
	}
	if !metav1.IsControlledBy(&s, owner) {
		return nil
	}
	if err := c.Delete(ctx, &s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete webhook secret %s: %w", s.Name, err)
	}
	return nil
}

// NewWebhookSecret returns a new signing secret: "whsec_" and 32 base62 characters (~190 bits).
func NewWebhookSecret() (string, error) { return randid.Prefixed("whsec_", 32) }
