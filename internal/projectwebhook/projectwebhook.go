// Package projectwebhook manages the project webhooks: the v2 webhook (`/v2/webhook`) and the v1
// invitations webhook (`/v1/invitations/webhook`), one of each per project, stored apart as the
// Webhook resources "v2" and "invitations".
package projectwebhook

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/signingsecret"
)

const name = string(v1alpha1.WebhookKindV2)

// invitationEvents are the events the invitations webhook can take.
var invitationEvents = []string{string(v1alpha1.EventInvitationStatusChanged)}

// Service manages the v2 project webhook.
type Service struct {
	client client.Client
	live   client.Reader
	urls   delivery.URLPolicy
}

// NewService returns a Service; live reads bypass the cache for read-modify-write. It takes
// https webhook URLs only, unless told otherwise by WithURLPolicy.
func NewService(c client.Client, live client.Reader) *Service { return &Service{client: c, live: live} }

// WithURLPolicy makes s take webhook URLs by the installation's rules (the workers'
// delivery.ClientOptions.URLPolicy(): plain http to loopback in dev) and returns s.
func (s *Service) WithURLPolicy(urls delivery.URLPolicy) *Service {
	s.urls = urls
	return s
}

// PutInput is the body of PUT /v2/webhook.
type PutInput struct {
	URL                   *string   `json:"url"`
	Events                *[]string `json:"events"`
	DisableSenderWebhooks *bool     `json:"disableSenderWebhooks"`
	SignatureVersion      *string   `json:"signatureVersion"`
}

// State is what GET /v2/webhook shows.
type State struct {
	Webhook *v1alpha1.Webhook
	// SenderWebhooks are the project's v1 sender webhooks that are still on.
	SenderWebhooks []v1alpha1.Sender
}

// Get returns the project's v2 webhook (nil when none) and its sender webhooks still on.
func (s *Service) Get(ctx context.Context, project string) (State, error) {
	var st State
	var wh v1alpha1.Webhook
	err := s.client.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, &wh)
	switch {
	case err == nil && wh.DeletionTimestamp.IsZero():
		st.Webhook = &wh
	case err != nil && !apierrors.IsNotFound(err):
		return st, fmt.Errorf("read v2 webhook of %s: %w", project, err)
	}
	var senders v1alpha1.SenderList
	if err := s.client.List(ctx, &senders, client.InNamespace(project)); err != nil {
		return st, fmt.Errorf("list senders of %s: %w", project, err)
	}
	for _, snd := range senders.Items {
		if wh := snd.Spec.Webhook; wh != nil && (wh.Active == nil || *wh.Active) {
			st.SenderWebhooks = append(st.SenderWebhooks, snd)
		}
	}
	return st, nil
}

// Put creates the project's webhook of kind (created true, with its new secret) or replaces it,
// keeping its secret. The invitations webhook takes invitation events only, all of them when
// none are named.
func (s *Service) Put(ctx context.Context, project string, kind v1alpha1.WebhookKind, in PutInput) (wh *v1alpha1.Webhook, created bool, secret string, err error) {
	name := string(kind)
	known := v1alpha1.WebhookEventNames()
	if kind == v1alpha1.WebhookKindInvitations {
		known = invitationEvents
		if in.Events == nil || len(*in.Events) == 0 {
			in.Events = &invitationEvents
		}
		if in.DisableSenderWebhooks != nil {
			return nil, false, "", apperror.InvalidFields(apperror.FieldError{Path: "disableSenderWebhooks", Message: "applies to the v2 webhook only"})
		}
	}
	var errs []apperror.FieldError
	var allowedDetail bool
	var badURL *delivery.URLError
	if in.URL == nil {
		errs = append(errs, apperror.FieldError{Path: "url", Message: "is required"})
	} else if _, err := s.urls.Check(*in.URL); errors.As(err, &badURL) {
		errs = append(errs, apperror.FieldError{Path: "url", Message: badURL.Reason})
	}
	var events []v1alpha1.WebhookEvent
	if in.Events == nil || len(*in.Events) == 0 {
		errs = append(errs, apperror.FieldError{Path: "events", Message: "is required: the event names to deliver"})
	} else {
		for i, e := range *in.Events {
			if !slices.Contains(known, e) {
				errs = append(errs, apperror.FieldError{Path: fmt.Sprintf("events[%d]", i), Message: fmt.Sprintf("unknown event %q", e)})
				allowedDetail = true
				continue
			}
			if !slices.Contains(events, v1alpha1.WebhookEvent(e)) {
				events = append(events, v1alpha1.WebhookEvent(e))
			}
		}
	}
	version := v1alpha1.SignatureV2
	if in.SignatureVersion != nil {
		version = v1alpha1.SignatureVersion(*in.SignatureVersion)
		if !slices.Contains([]v1alpha1.SignatureVersion{v1alpha1.SignatureV1, v1alpha1.SignatureV1V2, v1alpha1.SignatureV2}, version) {
			errs = append(errs, apperror.FieldError{Path: "signatureVersion", Message: "must be v1, v1+v2 or v2"})
		}
	}
	if len(errs) > 0 {
		e := apperror.InvalidFields(errs...)
		if allowedDetail {
			e.Details["allowed"] = known
		}
		return nil, false, "", e
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &v1alpha1.Webhook{}
		getErr := s.live.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, current)
		if getErr != nil && !apierrors.IsNotFound(getErr) {
			return fmt.Errorf("read v2 webhook of %s: %w", project, getErr)
		}
		created = apierrors.IsNotFound(getErr)
		desired := &v1alpha1.Webhook{
			ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: name},
			Spec:       v1alpha1.WebhookSpec{Kind: kind, URL: *in.URL, Events: events, SignatureVersion: version},
		}
		if !created {
			desired.ObjectMeta = current.ObjectMeta
			desired.Spec.SecretRef = current.Spec.SecretRef
			if in.SignatureVersion == nil {
				desired.Spec.SignatureVersion = current.Spec.SignatureVersion // replacing keeps the scheme
			} else if from := current.Spec.SignatureVersion; (from == v1alpha1.SignatureV1 && version == v1alpha1.SignatureV2) ||
				(from == v1alpha1.SignatureV2 && version == v1alpha1.SignatureV1) {
				return apperror.InvalidFields(apperror.FieldError{Path: "signatureVersion",
					Message: fmt.Sprintf("cannot go from %s straight to %s; go through v1+v2", from, version)})
			}
		}
		if err := kubewrite.Write(ctx, s.client, desired); err != nil {
			return err
		}
		wh = desired
		return nil
	})
	if err != nil {
		return nil, false, "", err
	}
	if created {
		if secret, err = s.writeSecret(ctx, wh, false); err != nil {
			return nil, false, "", err
		}
	}
	if in.DisableSenderWebhooks != nil && *in.DisableSenderWebhooks {
		if err := s.disableSenderWebhooks(ctx, project); err != nil {
			return nil, false, "", err
		}
	}
	return wh, created, secret, nil
}

// RotateSecret gives the webhook a new secret; the old one stops working at once.
func (s *Service) RotateSecret(ctx context.Context, project string) (string, error) {
	var wh v1alpha1.Webhook
	if err := s.live.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, &wh); err != nil {
		if apierrors.IsNotFound(err) {
			return "", apperror.NotFoundf("This project has no v2 webhook.")
		}
		return "", fmt.Errorf("read v2 webhook of %s: %w", project, err)
	}
	if wh.Spec.SecretRef != nil {
		return "", apperror.New(apperror.Conflict, "secret_managed_elsewhere",
			"This webhook signs with a Secret you manage (spec.secretRef); rotate it there.")
	}
	return s.writeSecret(ctx, &wh, true)
}

// Delete removes the webhook and its generated secret at once (not waiting for garbage
// collection); sender webhooks stay as they are.
func (s *Service) Delete(ctx context.Context, project string) error {
	var wh v1alpha1.Webhook
	if err := s.live.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, &wh); err != nil {
		if apierrors.IsNotFound(err) {
			return apperror.NotFoundf("This project has no v2 webhook.")
		}
		return fmt.Errorf("read v2 webhook of %s: %w", project, err)
	}
	if err := s.client.Delete(ctx, &wh); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete v2 webhook of %s: %w", project, err)
	}
	store := signingsecret.Store{Client: s.client, Live: s.live, FieldManager: kubewrite.FieldManager}
	return store.Delete(ctx, &wh, signingsecret.ForProjectWebhook(&wh))
}

// writeSecret returns wh's generated signing secret, made now when it has none, or replaced
// when rotate is true.
func (s *Service) writeSecret(ctx context.Context, wh *v1alpha1.Webhook, rotate bool) (string, error) {
	store := signingsecret.Store{Client: s.client, Live: s.live, FieldManager: kubewrite.FieldManager}
	if rotate {
		return store.Rotate(ctx, wh, signingsecret.ForProjectWebhook(wh))
	}
	return store.Ensure(ctx, wh, signingsecret.ForProjectWebhook(wh))
}

// disableSenderWebhooks switches the project's sender webhooks off, keeping url, events and secret.
func (s *Service) disableSenderWebhooks(ctx context.Context, project string) error {
	var senders v1alpha1.SenderList
	if err := s.live.List(ctx, &senders, client.InNamespace(project)); err != nil {
		return fmt.Errorf("list senders of %s: %w", project, err)
	}
	off := false
	for i := range senders.Items {
		snd := &senders.Items[i]
		if snd.Spec.Webhook == nil || (snd.Spec.Webhook.Active != nil && !*snd.Spec.Webhook.Active) {
			continue
		}
		patch := client.MergeFrom(snd.DeepCopy())
		snd.Spec.Webhook.Active = &off
		if err := s.client.Patch(ctx, snd, patch, client.FieldOwner(kubewrite.FieldManager)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("switch off the webhook of sender %s: %w", snd.Name, err)
		}
	}
	return nil
}
