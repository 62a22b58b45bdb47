package template

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/templatereview"
)

// SyncResult is what a sync did (WIRE.md §5).
type SyncResult struct {
	AccountsSynced int      `json:"accountsSynced"`
	Errors         []string `json:"errors"`
	Imported       int      `json:"imported"`
	Linked         int      `json:"linked"`
	Skipped        int      `json:"skipped"`
	Updated        int      `json:"updated"`
}

// Sync reads the templates of the WhatsApp business accounts of the project's senders (or of
// sender, when named) and brings the project's Templates in line: a template the project does
// not have is imported, one it has that was never submitted is linked, one whose verdict or
// category changed is updated, the rest skipped. An account that cannot be read is named in
// Errors and the others are synced all the same. Test keys have no accounts: the sandbox.
func (s *Service) Sync(ctx context.Context, project string, sender *string, testMode bool) (SyncResult, error) {
	if testMode {
		return SyncResult{Errors: []string{}}, nil
	}
	return s.sync(ctx, project, sender, true)
}

// sync is Sync of live accounts; a template the project does not have is imported only with
// importNew (skipped otherwise).
func (s *Service) sync(ctx context.Context, project string, sender *string, importNew bool) (SyncResult, error) {
	res := SyncResult{Errors: []string{}}
	if s.reviewer.Account == nil {
		return res, nil
	}
	var list v1alpha1.SenderList
	if err := s.client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return res, fmt.Errorf("list senders of %s: %w", project, err)
	}
	seen := map[string]bool{}
	var senders []*v1alpha1.Sender
	for i := range list.Items {
		snd := &list.Items[i]
		if sender != nil && snd.Name != *sender {
			continue
		}
		if snd.Spec.WhatsApp == nil || snd.Spec.WhatsApp.BusinessAccountID == "" || seen[snd.Spec.WhatsApp.BusinessAccountID] {
			continue
		}
		seen[snd.Spec.WhatsApp.BusinessAccountID] = true
		senders = append(senders, snd)
	}
	if sender != nil && len(senders) == 0 {
		return res, apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: fmt.Sprintf("no sender %s with a WhatsApp business account", *sender)})
	}
	sort.Slice(senders, func(i, j int) bool { return senders[i].Name < senders[j].Name })
	for _, snd := range senders {
		listed, err := s.reviewer.Account.ListTemplates(ctx, snd)
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("sender %s: %v", snd.Name, err))
			continue
		}
		res.AccountsSynced++
		for _, l := range listed {
			if err := s.syncOne(ctx, project, snd, l, importNew, &res); err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("template %s (%s): %v", l.Spec.Name, l.Spec.Language, err))
			}
		}
	}
	return res, nil
}

// syncOne brings one listed template into the project.
func (s *Service) syncOne(ctx context.Context, project string, snd *v1alpha1.Sender, l templatereview.Listed, importNew bool, res *SyncResult) error {
	name := v1alpha1.TemplateResourceName(l.Spec.Name, l.Spec.Language)
	t, err := s.read(ctx, s.live, project, name)
	if apperror.As(err) != nil && apperror.As(err).Kind == apperror.NotFound {
		if !importNew {
			res.Skipped++
			return nil
		}
		t = &v1alpha1.Template{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: name}, Spec: l.Spec}
		if err := kubewrite.Write(ctx, s.client, t); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		res.Imported++
		return s.refresh(ctx, t, func(t *v1alpha1.Template) error { return s.reviewer.Link(ctx, t, snd, l) })
	}
	if err != nil {
		return err
	}
	st := t.Status
	switch {
	case st.BusinessAccount != "" && st.BusinessAccount != snd.Spec.WhatsApp.BusinessAccountID:
		res.Skipped++ // another account's template of the same name and language
		return nil
	case st.ProviderID == "":
		res.Linked++
	case st.ProviderStatus == l.Status && string(st.Category) == l.Category:
		res.Skipped++
		return nil
	default:
		res.Updated++
	}
	return s.refresh(ctx, t, func(t *v1alpha1.Template) error { return s.reviewer.Link(ctx, t, snd, l) })
}
