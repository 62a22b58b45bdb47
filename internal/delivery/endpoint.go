package delivery

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// Kind is the kind of endpoint a delivery goes to.
type Kind string

const (
	// KindSender: a Sender's webhook (v1 envelope).
	KindSender Kind = "sender"
	// KindProjectV1: the v1 project webhook for invitation events (v1 envelope).
	KindProjectV1 Kind = "project_v1"
	// KindProjectV2: the v2 project webhook (v2 envelope).
	KindProjectV2 Kind = "project_v2"
)

// endpoint is where one delivery goes now: resolved at every attempt, so a change of URL,
// secret or signature version takes effect from the next attempt.
type endpoint struct {
	url              string
	signatureVersion string
	secret           []byte
}

// resolver reads endpoints from the informer cache.
type resolver struct {
	reader client.Reader
}

// senderEndpoint returns the Sender's webhook when it is on and subscribed to event; nil when
// the sender, its webhook or its secret is gone, or the webhook is off or not subscribed.
func (r resolver) senderEndpoint(ctx context.Context, project, sender, event string) (*endpoint, error) {
	var s v1alpha1.Sender
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: sender}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read sender %s/%s: %w", project, sender, err)
	}
	wh := s.Spec.Webhook
	if wh == nil || (wh.Active != nil && !*wh.Active) || !subscribed(wh.Events, event) {
		return nil, nil
	}
	return r.withSecret(ctx, project, wh.URL, wh.SignatureVersion, s.Status.WebhookSecret)
}

// projectEndpoint returns the project webhook name ("v2" or "invitations") when it exists and is
// subscribed to event; the invitations webhook takes invitation events only.
func (r resolver) projectEndpoint(ctx context.Context, project, name, event string) (*endpoint, error) {
	if name == string(v1alpha1.WebhookKindInvitations) && !strings.HasPrefix(event, "invitation.") {
		return nil, nil
	}
	var wh v1alpha1.Webhook
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, &wh)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read webhook %s/%s: %w", project, name, err)
	}
	if !wh.DeletionTimestamp.IsZero() || !subscribed(wh.Spec.Events, event) {
		return nil, nil
	}
	return r.withSecret(ctx, project, wh.Spec.URL, wh.Spec.SignatureVersion, wh.Status.WebhookSecret)
}

// withSecret completes an endpoint with its signing secret; nil while it has none.
func (r resolver) withSecret(ctx context.Context, project, url string, version v1alpha1.SignatureVersion, ref *v1alpha1.SecretKeyRef) (*endpoint, error) {
	if ref == nil {
		return nil, nil
	}
	var secret corev1.Secret
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: ref.Name}, &secret)
	if apierrors.IsNotFound(err) || (err == nil && len(secret.Data[ref.Key]) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read webhook secret %s/%s: %w", project, ref.Name, err)
	}
	if version == "" {
		version = v1alpha1.SignatureV2
	}
	return &endpoint{url: url, signatureVersion: string(version), secret: secret.Data[ref.Key]}, nil
}

// resolve returns the current endpoint of a delivery.
func (r resolver) resolve(ctx context.Context, kind Kind, project, name, event string) (*endpoint, error) {
	switch kind {
	case KindSender:
		return r.senderEndpoint(ctx, project, name, event)
	case KindProjectV2, KindProjectV1:
		return r.projectEndpoint(ctx, project, name, event)
	default:
		return nil, fmt.Errorf("unknown endpoint kind %s", kind)
	}
}

// StatusEvent is sent on every status change of a message, beside the change's own event.
const StatusEvent = string(v1alpha1.EventMessageStatus)

// subscribed tells whether a webhook with these events receives event; none means all — but
// message.status only goes to webhooks that name it, since "all" already has every change as
// its own message.<status> event.
func subscribed(events []v1alpha1.WebhookEvent, event string) bool {
	if event == StatusEvent {
		return slices.Contains(events, v1alpha1.WebhookEvent(event))
	}
	return len(events) == 0 || slices.Contains(events, v1alpha1.WebhookEvent(event))
}
