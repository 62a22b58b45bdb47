// Package templatereview moves templates through their review: submission to the WhatsApp
// business account of a sender (or to the sandbox, which approves after a short delay and
// rejects names starting with test_reject), the provider's verdicts and recategorisations, and
// one template.status_changed per change of status or category, whoever made it (the
// controller, the API, a provider's webhook). The controller and the API share it.
package templatereview

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// SandboxDelay is how long the sandbox takes to review a template.
const SandboxDelay = 2 * time.Second

// SandboxRejectPrefix starts the names the sandbox rejects.
const SandboxRejectPrefix = "test_reject"

// SandboxRejection is the reason the sandbox gives.
const SandboxRejection = "INVALID_FORMAT: the sandbox rejects templates whose name starts with " + SandboxRejectPrefix

// Submitted is what a provider answered a submission.
type Submitted struct {
	ID, Status, Category, Namespace string
}

// Listed is a template of a WhatsApp business account: Meta's id and verdict, and its content.
type Listed struct {
	ID, Status, Category, Reason string
	Spec                         v1alpha1.TemplateSpec
}

// Account submits templates to the WhatsApp business account of a sender, lists those it has,
// and deletes one (the Meta transport).
type Account interface {
	SubmitTemplate(ctx context.Context, snd *v1alpha1.Sender, t *v1alpha1.Template) (Submitted, error)
	ListTemplates(ctx context.Context, snd *v1alpha1.Sender) ([]Listed, error)
	// DeleteTemplate deletes the template of that name and provider id.
	DeleteTemplate(ctx context.Context, snd *v1alpha1.Sender, name, id string) error
}

// ErrNoAccount: the sender has no WhatsApp business account to submit to.
var ErrNoAccount = errors.New("the sender has no connected WhatsApp business account")

// Reviewer moves templates.
type Reviewer struct {
	// Client writes status; Live reads the latest.
	Client       client.Client
	Live         client.Reader
	FieldManager string
	// Account submits live templates; nil: the installation cannot submit to WhatsApp.
	Account    Account
	Pool       *pgxpool.Pool
	Deliveries *delivery.Service
	Now        func() time.Time
}

// Submit sends t for review as spec.submission asks (the sandbox, or the sender's account)
// and records it: pending, with where it went. A live submission the provider refuses is an
// error and changes nothing.
func (r *Reviewer) Submit(ctx context.Context, t *v1alpha1.Template, snd *v1alpha1.Sender) error {
	return r.SubmitOnce(ctx, t, snd, &Answer{})
}

// Answer keeps what the provider answered a submission: a caller that retries its status write
// (a conflict with the controller) passes the same Answer, and the template is not submitted to
// the business account a second time (Meta refuses a name it already has).
type Answer struct{ got *Submitted }

// SubmitOnce is Submit, calling the provider only when answer holds nothing yet.
func (r *Reviewer) SubmitOnce(ctx context.Context, t *v1alpha1.Template, snd *v1alpha1.Sender, answer *Answer) error {
	sub := t.Spec.Submission
	before := t.DeepCopy()
	st := &t.Status
	now := metav1.NewTime(r.now())
	st.SubmittedRequest, st.SubmittedAt, st.Sender, st.Sandbox = sub.RequestedAt, &now, sub.Sender, sub.Sandbox
	st.RejectionReason, st.ProviderStatus = "", "PENDING"
	st.State = v1alpha1.TemplatePending
	if st.Category == "" || st.Sandbox {
		st.Category = t.Spec.Category
	}
	if !sub.Sandbox {
		if snd.Spec.WhatsApp == nil || snd.Spec.WhatsApp.BusinessAccountID == "" {
			return ErrNoAccount
		}
		if r.Account == nil {
			return fmt.Errorf("%w: no meta Provider serves it", ErrNoAccount)
		}
		if answer.got == nil {
			got, err := r.Account.SubmitTemplate(ctx, snd, t)
			if err != nil {
				return err
			}
			answer.got = &got
		}
		got := *answer.got
		st.BusinessAccount, st.ProviderID, st.Namespace = snd.Spec.WhatsApp.BusinessAccountID, got.ID, got.Namespace
		st.TemplateName = t.Spec.Name
		if got.Category != "" {
			st.Category = v1alpha1.TemplateCategory(got.Category)
		}
		applyProviderStatus(st, got.Status, "")
	} else {
		st.BusinessAccount, st.ProviderID, st.TemplateName, st.Namespace = "", "", t.Spec.Name, ""
	}
	return r.write(ctx, before, t)
}

// Advance runs the sandbox's review of a pending sandboxed template: once SandboxDelay has
// passed since its submission, approved (rejected when its name starts with test_reject). It
// returns how long until the review is due (0 when there is nothing to wait for).
func (r *Reviewer) Advance(ctx context.Context, t *v1alpha1.Template) (time.Duration, error) {
	st := &t.Status
	if st.State != v1alpha1.TemplatePending || !st.Sandbox || st.SubmittedAt == nil {
		return 0, nil
	}
	if wait := st.SubmittedAt.Add(SandboxDelay).Sub(r.now()); wait > 0 {
		return wait, nil
	}
	before := t.DeepCopy()
	if strings.HasPrefix(t.Spec.Name, SandboxRejectPrefix) {
		applyProviderStatus(st, "REJECTED", SandboxRejection)
	} else {
		applyProviderStatus(st, "APPROVED", "")
	}
	if st.Category == "" {
		st.Category = v1alpha1.CategoryUtility
	}
	return 0, r.write(ctx, before, t)
}

// Link records that t is the account's template id of sender (found by a sync), and applies its
// verdict.
func (r *Reviewer) Link(ctx context.Context, t *v1alpha1.Template, snd *v1alpha1.Sender, l Listed) error {
	before := t.DeepCopy()
	st := &t.Status
	st.ProviderID, st.TemplateName, st.Sender, st.Sandbox = l.ID, t.Spec.Name, snd.Name, false
	st.BusinessAccount = snd.Spec.WhatsApp.BusinessAccountID
	applyProviderStatus(st, l.Status, l.Reason)
	if l.Category != "" {
		st.Category = v1alpha1.TemplateCategory(strings.ToUpper(l.Category))
	}
	now := metav1.NewTime(r.now())
	st.LastSyncedAt = &now
	return r.write(ctx, before, t)
}

// ProviderUpdate applies what the provider said of t (a webhook, a sync): its status, the
// reason of a rejection, the category it bills under ("" keeps the one recorded).
func (r *Reviewer) ProviderUpdate(ctx context.Context, t *v1alpha1.Template, status, reason, category string) error {
	before := t.DeepCopy()
	if status != "" {
		applyProviderStatus(&t.Status, status, reason)
	}
	if category != "" {
		t.Status.Category = v1alpha1.TemplateCategory(strings.ToUpper(category))
	}
	now := metav1.NewTime(r.now())
	t.Status.LastSyncedAt = &now
	return r.write(ctx, before, t)
}

// applyProviderStatus maps the provider's status to the template's state: approved; rejected
// (also paused or disabled: it cannot be sent, with the provider's status as the reason);
// pending (in review or appeal). A status it does not know leaves the state as it is.
func applyProviderStatus(st *v1alpha1.TemplateStatus, status, reason string) {
	status = strings.ToUpper(status)
	st.ProviderStatus = status
	switch status {
	case "APPROVED":
		st.State, st.RejectionReason = v1alpha1.TemplateApproved, ""
	case "REJECTED":
		st.State, st.RejectionReason = v1alpha1.TemplateRejected, reason
	case "PAUSED", "DISABLED":
		st.State, st.RejectionReason = v1alpha1.TemplateRejected, strings.ToLower(status)+" by WhatsApp"
		if reason != "" {
			st.RejectionReason += ": " + reason
		}
	case "PENDING", "IN_APPEAL", "PENDING_DELETION":
		st.State = v1alpha1.TemplatePending
	}
}

// Refresh brings the bookkeeping of t's status up to date (state draft when unset, the Ready
// condition) and writes it when it changed.
func (r *Reviewer) Refresh(ctx context.Context, t *v1alpha1.Template) error {
	return r.write(ctx, t.DeepCopy(), t)
}

// write stores t's status (conditional on the version read) and announces it.
func (r *Reviewer) write(ctx context.Context, before, t *v1alpha1.Template) error {
	st := &t.Status
	if st.State == "" {
		st.State = v1alpha1.TemplateDraft
	}
	st.ObservedGeneration = t.Generation
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: t.Generation}
	switch st.State {
	case v1alpha1.TemplateApproved:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ReasonReady, "approved: WhatsApp sends it"
	case v1alpha1.TemplateRejected:
		cond.Reason, cond.Message = "Rejected", "rejected: "+st.RejectionReason
	case v1alpha1.TemplatePending:
		cond.Reason, cond.Message = "InReview", "submitted, waiting for the review"
	default:
		cond.Reason, cond.Message = "Draft", "not submitted: set spec.submission, or POST /v1/templates/{id}/submit"
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if !equality.Semantic.DeepEqual(before.Status, t.Status) {
		if err := r.Client.Status().Patch(ctx, t, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
			client.FieldOwner(r.fieldManager())); err != nil {
			return err
		}
	}
	return r.Announce(ctx, t)
}

// Announce writes template.status_changed when t's status or category is not the one last
// announced; a template's first record (a draft) announces nothing.
func (r *Reviewer) Announce(ctx context.Context, t *v1alpha1.Template) error {
	if r.Pool == nil {
		return nil
	}
	return pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		prev, err := q.AnnouncedTemplate(ctx, db.AnnouncedTemplateParams{Project: t.Namespace, TemplateUid: string(t.UID)})
		first := errors.Is(err, pgx.ErrNoRows)
		if err != nil && !first {
			return fmt.Errorf("read announced state of template %s: %w", t.Name, err)
		}
		changed, err := q.AnnounceTemplate(ctx, db.AnnounceTemplateParams{Project: t.Namespace, TemplateUid: string(t.UID),
			Status: string(t.Status.State), Category: string(t.Status.Category), ChangedAt: r.now().UTC()})
		if err != nil {
			return fmt.Errorf("record announced state of template %s: %w", t.Name, err)
		}
		if !changed || (first && t.Status.State == v1alpha1.TemplateDraft) {
			return nil
		}
		previous := string(v1alpha1.TemplateDraft) // every template starts as one
		if !first {
			previous = prev.Status
		}
		data := map[string]any{"templateId": t.Name, "name": t.Spec.Name, "language": t.Spec.Language,
			"previousStatus": previous, "currentStatus": string(t.Status.State), "rejectionReason": nilIfEmpty(t.Status.RejectionReason),
			"category": nilIfEmpty(string(t.Status.Category))}
		_, err = r.Deliveries.Enqueue(ctx, tx, delivery.Event{Project: t.Namespace,
			Name: string(v1alpha1.EventTemplateStatusChanged), Data: data, AllSenders: true})
		return err
	})
}

// Forget drops the announced state of a deleted template.
func (r *Reviewer) Forget(ctx context.Context, t *v1alpha1.Template) error {
	if r.Pool == nil {
		return nil
	}
	return db.Planned(r.Pool).ForgetTemplateAnnouncement(ctx, db.ForgetTemplateAnnouncementParams{Project: t.Namespace, TemplateUid: string(t.UID)})
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (r *Reviewer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reviewer) fieldManager() string {
	if r.FieldManager != "" {
		return r.FieldManager
	}
	return "switchboard-manager"
}
