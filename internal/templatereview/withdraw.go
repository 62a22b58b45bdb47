package templatereview

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// Finalizer holds a Template linked to a live WhatsApp business account until its template there
// is deleted too (or kept: KeepAnnotation).
const Finalizer = "messaging.switchboard.io/whatsapp-template"

// KeepAnnotation set to "true" on a Template keeps its template at the WhatsApp business account
// when the resource is deleted.
const KeepAnnotation = "messaging.switchboard.io/keep-at-provider"

// Linked tells whether t is a template of a live WhatsApp business account (submitted there,
// or linked by a sync), which deleting the resource deletes there too.
func Linked(t *v1alpha1.Template) bool {
	return t.Status.ProviderID != "" && t.Status.BusinessAccount != "" && !t.Status.Sandbox
}

// Withdraw deletes t's template at the WhatsApp business account it belongs to: only that
// language (by name and Meta's id; Meta deletes every language of a name otherwise). It goes
// through the sender t was submitted with, or another sender of the project on the same
// account; with none it is ErrNoAccount. The provider's errors are returned as they are.
func (r *Reviewer) Withdraw(ctx context.Context, t *v1alpha1.Template) error {
	if !Linked(t) {
		return nil
	}
	if r.Account == nil {
		return fmt.Errorf("%w: no meta Provider serves it", ErrNoAccount)
	}
	snd, err := r.senderOfAccount(ctx, t.Namespace, t.Status.Sender, t.Status.BusinessAccount)
	if err != nil {
		return err
	}
	name := t.Status.TemplateName
	if name == "" {
		name = t.Spec.Name
	}
	return r.Account.DeleteTemplate(ctx, snd, name, t.Status.ProviderID)
}

// senderOfAccount is the sender named, when its WhatsApp is on the business account waba, or
// else the first sender of the project that is.
func (r *Reviewer) senderOfAccount(ctx context.Context, project, name, waba string) (*v1alpha1.Sender, error) {
	onAccount := func(s *v1alpha1.Sender) bool {
		return s.Spec.WhatsApp != nil && s.Spec.WhatsApp.BusinessAccountID == waba
	}
	if name != "" {
		var snd v1alpha1.Sender
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, &snd)
		if err == nil && onAccount(&snd) {
			return &snd, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read sender %s: %w", name, err)
		}
	}
	var list v1alpha1.SenderList
	if err := r.Client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list senders of %s: %w", project, err)
	}
	for i := range list.Items {
		if onAccount(&list.Items[i]) {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no sender of project %s is on WhatsApp business account %s", ErrNoAccount, project, waba)
}
