package delivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/signingsecret"
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

// resolver reads endpoints from the informer cache. A webhook's signing Secret missing from the
// cache is read once more from the API server (live): the API creates it a moment before it
// answers, and this process's cache may not have seen it yet.
type resolver struct {
	reader client.Reader
	live   client.Reader
}

// subscription is a webhook subscribed to an event, before its secret is read.
type subscription struct {
	url       string
	version   v1alpha1.SignatureVersion
	secretRef v1alpha1.SecretKeyRef
	// generated: the secret is Switchboard's to make, not the user's.
	generated bool
	// disabled: the webhook failed for too long and is off until enabled again.
	disabled bool
}

// errNoSecret: the user's signing Secret an endpoint names (or its key) does not exist.
var errNoSecret = errors.New("the webhook's signing secret does not exist")

// ErrDisabled: the endpoint is disabled for failing too long (its WebhookEnabled condition).
var ErrDisabled = errors.New("the endpoint is disabled: every attempt failed for too long; enable it again to deliver")

// errSecretNotYet: the signing Secret Switchboard generates for an endpoint does not exist yet
// (a webhook applied with kubectl a moment ago, before the controller made it).
var errSecretNotYet = errors.New("the webhook's signing secret is not generated yet")

// declared is a webhook as its resource declares it: where it goes, how it signs, and which
// events it takes (all when empty). An event is delivered to it when subscribed says so.
type declared struct {
	subscription
	events []v1alpha1.WebhookEvent
}

// senderEndpoint returns the Sender's webhook; nil when the sender or its webhook is gone, or
// the webhook is off.
func (r resolver) senderEndpoint(ctx context.Context, project, sender string) (*declared, error) {
	var s v1alpha1.Sender
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: sender}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read sender %s/%s: %w", project, sender, err)
	}
	wh := s.Spec.Webhook
	if wh == nil || (wh.Active != nil && !*wh.Active) {
		return nil, nil
	}
	return &declared{subscription: subscription{url: wh.URL, version: wh.SignatureVersion,
		secretRef: secretRef(wh.SecretRef, signingsecret.ForSender(&s)), generated: wh.SecretRef == nil,
		disabled: v1alpha1.WebhookDisabled(s.Status.Conditions) != nil}, events: wh.Events}, nil
}

// senders names the project's senders, in name order.
func (r resolver) senders(ctx context.Context, project string) ([]string, error) {
	var list v1alpha1.SenderList
	if err := r.reader.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list senders of %s: %w", project, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, s := range list.Items {
		if s.DeletionTimestamp.IsZero() {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// projectEndpoint returns the project webhook name ("v2" or "invitations") when it exists.
func (r resolver) projectEndpoint(ctx context.Context, project, name string) (*declared, error) {
	var wh v1alpha1.Webhook
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, &wh)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read webhook %s/%s: %w", project, name, err)
	}
	if !wh.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return &declared{subscription: subscription{url: wh.Spec.URL, version: wh.Spec.SignatureVersion,
		secretRef: secretRef(wh.Spec.SecretRef, signingsecret.ForProjectWebhook(&wh)), generated: wh.Spec.SecretRef == nil,
		disabled: v1alpha1.WebhookDisabled(wh.Status.Conditions) != nil},
		events: wh.Spec.Events}, nil
}

// secretRef is the Secret a webhook signs with: the user's, else the generated one. It is known
// from the spec alone, so a delivery does not wait for a controller to copy it into status.
func secretRef(user *v1alpha1.SecretKeyRef, generated string) v1alpha1.SecretKeyRef {
	if user != nil {
		return *user
	}
	return v1alpha1.SecretKeyRef{Name: generated, Key: signingsecret.Key}
}

// webhookOf returns the webhook a delivery of kind and name goes to; nil when none is
// subscribed to event now.
func (r resolver) webhookOf(ctx context.Context, kind Kind, project, name, event string) (*subscription, error) {
	e, err := r.endpointOf(ctx, kind, project, name)
	if err != nil || e == nil {
		return nil, err
	}
	return e.takes(kind, name, event), nil
}

// endpointOf reads the webhook of kind and name, whatever it is subscribed to; nil when none.
func (r resolver) endpointOf(ctx context.Context, kind Kind, project, name string) (*declared, error) {
	switch kind {
	case KindSender:
		return r.senderEndpoint(ctx, project, name)
	case KindProjectV2, KindProjectV1:
		return r.projectEndpoint(ctx, project, name)
	default:
		return nil, fmt.Errorf("unknown endpoint kind %s", kind)
	}
}

// takes is e's subscription when it takes event; the invitations webhook takes invitation
// events only.
func (e *declared) takes(kind Kind, name, event string) *subscription {
	if e == nil || !subscribed(e.events, event) {
		return nil
	}
	if kind != KindSender && name == string(v1alpha1.WebhookKindInvitations) && !strings.HasPrefix(event, "invitation.") {
		return nil
	}
	sub := e.subscription
	return &sub
}

// secret reads a webhook's signing secret: from the cache, else from the API server.
func (r resolver) secret(ctx context.Context, project string, ref v1alpha1.SecretKeyRef) ([]byte, error) {
	for _, reader := range []client.Reader{r.reader, r.live} {
		if reader == nil {
			continue
		}
		var secret corev1.Secret
		err := reader.Get(ctx, client.ObjectKey{Namespace: project, Name: ref.Name}, &secret)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read webhook secret %s/%s: %w", project, ref.Name, err)
		}
		if err == nil && len(secret.Data[ref.Key]) > 0 {
			return secret.Data[ref.Key], nil
		}
	}
	return nil, errNoSecret
}

// resolve returns the current endpoint of a delivery: nil when no webhook is subscribed any
// more, and with ErrDisabled when it is disabled; with errNoSecret (the user's Secret is missing) or errSecretNotYet (the generated one
// is not made yet), the endpoint without its secret.
func (r resolver) resolve(ctx context.Context, kind Kind, project, name, event string) (*endpoint, error) {
	wh, err := r.webhookOf(ctx, kind, project, name, event)
	if wh == nil || err != nil {
		return nil, err
	}
	if wh.disabled {
		return nil, ErrDisabled
	}
	version := wh.version
	if version == "" {
		version = v1alpha1.SignatureV2
	}
	ep := &endpoint{url: wh.url, signatureVersion: string(version)}
	ep.secret, err = r.secret(ctx, project, wh.secretRef)
	if errors.Is(err, errNoSecret) && wh.generated {
		return ep, errSecretNotYet
	}
	if errors.Is(err, errNoSecret) {
		return ep, err
	}
	if err != nil {
		return nil, err
	}
	return ep, nil
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
