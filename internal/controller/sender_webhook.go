package controller

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// generatedWebhookSecretName is the Secret the controller makes for a webhook without secretRef.
func generatedWebhookSecretName(sender *v1alpha1.Sender) string { return sender.Name + "-webhook" }

// reconcileWebhookSecret makes sure the sender's webhook has a signing secret and returns where it
// is, or the readiness failure that explains why it has none. Without a webhook, a generated
// Secret is removed with it.
func (r *SenderReconciler) reconcileWebhookSecret(ctx context.Context, sender *v1alpha1.Sender) (*v1alpha1.SecretKeyRef, *readiness, error) {
	wh := sender.Spec.Webhook
	if wh == nil {
		return nil, nil, r.deleteGeneratedSecret(ctx, sender)
	}
	if ref := wh.SecretRef; ref != nil {
		// The cache holds only labelled Secrets, so an unlabelled one reads as missing.
		var s corev1.Secret
		err := r.Get(ctx, client.ObjectKey{Namespace: sender.Namespace, Name: ref.Name}, &s)
		if apierrors.IsNotFound(err) || (err == nil && len(s.Data[ref.Key]) == 0) {
			failed := notReady(v1alpha1.ReasonWebhookSecretNotFound, fmt.Sprintf(
				"Secret %s with key %s and label %s=true not found", ref.Name, ref.Key, v1alpha1.WebhookSecretLabel))
			return nil, &failed, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read webhook secret %s: %w", ref.Name, err)
		}
		return ref, nil, r.deleteGeneratedSecret(ctx, sender)
	}

	name := generatedWebhookSecretName(sender)
	ref := &v1alpha1.SecretKeyRef{Name: name, Key: v1alpha1.GeneratedWebhookSecretKey}
	var s corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: sender.Namespace, Name: name}, &s)
	switch {
	case err == nil:
		if !metav1.IsControlledBy(&s, sender) {
			failed := notReady(v1alpha1.ReasonWebhookSecretNotFound,
				fmt.Sprintf("Secret %s exists and belongs to something else; set spec.webhook.secretRef", name))
			return nil, &failed, nil
		}
		return ref, nil, nil
	case !apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("read webhook secret %s: %w", name, err)
	}
	value, err := NewWebhookSecret()
	if err != nil {
		return nil, nil, err
	}
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: sender.Namespace, Name: name,
			Labels: map[string]string{v1alpha1.WebhookSecretLabel: "true"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{v1alpha1.GeneratedWebhookSecretKey: []byte(value)},
	}
	if err := controllerutil.SetControllerReference(sender, &s, r.Scheme()); err != nil {
		return nil, nil, err
	}
	if err := r.Create(ctx, &s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, nil, fmt.Errorf("create webhook secret %s: %w", name, err)
	}
	return ref, nil, nil
}

func (r *SenderReconciler) deleteGeneratedSecret(ctx context.Context, sender *v1alpha1.Sender) error {
	var s corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: sender.Namespace, Name: generatedWebhookSecretName(sender)}, &s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read webhook secret: %w", err)
	}
	if !metav1.IsControlledBy(&s, sender) {
		return nil
	}
	if err := r.Delete(ctx, &s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete webhook secret %s: %w", s.Name, err)
	}
	return nil
}

// NewWebhookSecret returns a new signing secret: "whsec_" and 32 base62 characters (~190 bits).
func NewWebhookSecret() (string, error) {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 32)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", fmt.Errorf("generate webhook secret: %w", err)
		}
		b[i] = alphabet[n.Int64()]
	}
	return "whsec_" + string(b), nil
}
