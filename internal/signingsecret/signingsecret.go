// Package signingsecret owns the Secrets Switchboard generates to sign a webhook's deliveries:
// their names, their values, and the one way they are written. The controllers make one when a
// webhook has none; the API makes it at once, to show it in its answer, and rotates it. Both
// write through Store, so a Secret is created once (the first writer wins and the other reads
// it), replaced only by a rotation, and deleted only by its owner.
package signingsecret

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Key is the key of the value in a generated Secret.
const Key = v1alpha1.GeneratedWebhookSecretKey

// ForSender names the Secret generated for a sender's webhook.
func ForSender(s *v1alpha1.Sender) string { return s.Name + "-webhook" }

// ForProjectWebhook names the Secret generated for a project's v2 webhook.
func ForProjectWebhook(w *v1alpha1.Webhook) string { return "webhook-" + w.Name }

// New returns a new signing secret: "whsec_" and 32 base62 characters (~190 bits).
func New() (string, error) { return randid.Prefixed("whsec_", 32) }

// ErrForeign: a Secret by the generated name exists and belongs to something else.
var ErrForeign = errors.New("the Secret belongs to something else")

// Store writes generated Secrets.
type Store struct {
	Client client.Client
	// Live reads what another writer may have created a moment ago (the API server itself, or
	// the controller's cache, which sees its own writes soon enough).
	Live client.Reader
	// FieldManager names the writer; empty is the client's default.
	FieldManager string
}

// Ensure returns the value of owner's generated Secret name, creating it when it is absent. A
// concurrent writer that created it first wins: its value is returned.
func (s Store) Ensure(ctx context.Context, owner client.Object, name string) (string, error) {
	var existing corev1.Secret
	err := s.Live.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, &existing)
	if err == nil {
		return valueOf(&existing, owner)
	}
	if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("read signing secret %s: %w", name, err)
	}
	value, secret, err := s.fresh(owner, name)
	if err != nil {
		return "", err
	}
	err = s.Client.Create(ctx, secret, s.opts()...)
	if apierrors.IsAlreadyExists(err) {
		if err := s.Live.Get(ctx, client.ObjectKeyFromObject(secret), &existing); err != nil {
			return "", fmt.Errorf("read signing secret %s: %w", name, err)
		}
		return valueOf(&existing, owner)
	}
	if err != nil {
		return "", fmt.Errorf("create signing secret %s: %w", name, err)
	}
	return value, nil
}

// Rotate gives owner's generated Secret name a new value, effective from the next delivery,
// and returns it.
func (s Store) Rotate(ctx context.Context, owner client.Object, name string) (string, error) {
	value, secret, err := s.fresh(owner, name)
	if err != nil {
		return "", err
	}
	err = s.Client.Update(ctx, secret, s.updateOpts()...)
	if apierrors.IsNotFound(err) {
		err = s.Client.Create(ctx, secret, s.opts()...)
	}
	if err != nil {
		return "", fmt.Errorf("rotate signing secret %s: %w", name, err)
	}
	return value, nil
}

// Delete removes owner's generated Secret name, when owner owns it.
func (s Store) Delete(ctx context.Context, owner client.Object, name string) error {
	var secret corev1.Secret
	err := s.Live.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, &secret)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read signing secret %s: %w", name, err)
	}
	if !metav1.IsControlledBy(&secret, owner) {
		return nil
	}
	if err := s.Client.Delete(ctx, &secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete signing secret %s: %w", name, err)
	}
	return nil
}

// fresh is a new value and the Secret holding it, owned by owner and labelled so that
// Switchboard's cache holds it.
func (s Store) fresh(owner client.Object, name string) (string, *corev1.Secret, error) {
	value, err := New()
	if err != nil {
		return "", nil, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: name,
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{Key: []byte(value)},
	}
	if err := controllerutil.SetControllerReference(owner, secret, s.Client.Scheme()); err != nil {
		return "", nil, err
	}
	return value, secret, nil
}

func valueOf(secret *corev1.Secret, owner client.Object) (string, error) {
	if !metav1.IsControlledBy(secret, owner) {
		return "", fmt.Errorf("signing secret %s: %w", secret.Name, ErrForeign)
	}
	return string(secret.Data[Key]), nil
}

func (s Store) opts() []client.CreateOption {
	if s.FieldManager == "" {
		return nil
	}
	return []client.CreateOption{client.FieldOwner(s.FieldManager)}
}

func (s Store) updateOpts() []client.UpdateOption {
	if s.FieldManager == "" {
		return nil
	}
	return []client.UpdateOption{client.FieldOwner(s.FieldManager)}
}
