// Package template manages Templates for the REST API (/v1/templates, /v2/templates): it checks
// a template as WhatsApp would before anyone is asked, writes the resource as the API's field
// manager (kubectl and the API meet one object and one validation), and submits it through
// templatereview.
package template

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/templatereview"
	"github.com/switchboard-io/switchboard/internal/templatetext"
)

// Service manages a project's templates.
type Service struct {
	client   client.Client
	live     client.Reader
	reviewer *templatereview.Reviewer
}

// NewService returns a Service submitting through reviewer.
func NewService(c client.Client, live client.Reader, reviewer *templatereview.Reviewer) *Service {
	return &Service{client: c, live: live, reviewer: reviewer}
}

// Button is a template button as the API takes it (WIRE.md §5).
type Button struct {
	Type, Text, URL, Example, PhoneNumber, OTPType, PackageName, SignatureHash *string
}

// Input is TemplateCreate (WIRE.md §5); nil fields were not given.
type Input struct {
	Name, Language, Body, Category       *string
	HeaderType, HeaderContent, Footer    *string
	Buttons                              *[]Button
	Variables                            *[]string
	SMSBody, TelegramBody, InstagramBody *string
	AddSecurityRecommendation            *bool
	CodeExpirationMinutes                *int
}

// Reviewer is the reviewer the service submits through.
func (s *Service) Reviewer() *templatereview.Reviewer { return s.reviewer }

// Create makes a template, a draft; a second one of the same name and language is 409.
func (s *Service) Create(ctx context.Context, project string, in Input) (*v1alpha1.Template, error) {
	spec, errs := specOf(in)
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(errs...)
	}
	t := &v1alpha1.Template{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: v1alpha1.TemplateResourceName(spec.Name, spec.Language)},
		Spec: spec}
	err := kubewrite.Write(ctx, s.client, t)
	if apierrors.IsAlreadyExists(err) {
		e := apperror.New(apperror.Conflict, "template_exists",
			fmt.Sprintf("This project already has template %s in %s (%s).", spec.Name, spec.Language, t.Name))
		e.Details = map[string]any{"templateId": t.Name}
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	if err := s.refresh(ctx, t, func(t *v1alpha1.Template) error { return s.reviewer.Refresh(ctx, t) }); err != nil {
		return nil, err
	}
	return t, nil
}

// List returns the project's templates, oldest first, then by id.
func (s *Service) List(ctx context.Context, project string) ([]v1alpha1.Template, error) {
	var list v1alpha1.TemplateList
	if err := s.client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list templates of %s: %w", project, err)
	}
	return kubewrite.Live(list.Items), nil
}

// Get returns template id of project.
func (s *Service) Get(ctx context.Context, project, id string) (*v1alpha1.Template, error) {
	return s.read(ctx, s.client, project, id)
}

// Delete removes the template.
func (s *Service) Delete(ctx context.Context, project, id string) error {
	t, err := s.read(ctx, s.live, project, id)
	if err != nil {
		return err
	}
	if err := s.client.Delete(ctx, t); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete template %s: %w", id, err)
	}
	return s.reviewer.Forget(ctx, t)
}

// Submit submits the template to the WhatsApp business account of sender, or to the sandbox
// (sandbox: test keys), asking for category when given; it answers the template, pending.
func (s *Service) Submit(ctx context.Context, project, id, sender string, category *string, sandbox bool) (*v1alpha1.Template, error) {
	var errs []apperror.FieldError
	if category != nil && !validCategory(*category) {
		errs = append(errs, apperror.FieldError{Path: "category", Message: "must be UTILITY, MARKETING or AUTHENTICATION"})
	}
	t, err := s.read(ctx, s.live, project, id)
	if err != nil {
		return nil, err
	}
	if n := len(templatetext.Placeholders(t.Spec.Body)); n > 0 && len(t.Spec.Variables) != n {
		errs = append(errs, apperror.FieldError{Path: "variables", Message: fmt.Sprintf(
			"WhatsApp reviews a template with a sample value for each placeholder: the body has %d, the template %d (update it first)", n, len(t.Spec.Variables))})
	}
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(errs...)
	}
	if sandbox && t.Status.ProviderID != "" && !t.Status.Sandbox {
		// The sandbox's review would replace the provider's verdict, which live sends use.
		return nil, apperror.New(apperror.Forbidden, "forbidden", fmt.Sprintf(
			"Template %s was reviewed by the provider; a test key's sandbox review would replace that verdict for live sends. Use a live key.", t.Name))
	}
	var snd v1alpha1.Sender
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: project, Name: sender}, &snd); apierrors.IsNotFound(err) {
		return nil, apperror.NotFoundf("No sender %s.", sender)
	} else if err != nil {
		return nil, fmt.Errorf("read sender %s: %w", sender, err)
	}
	if !sandbox && (snd.Spec.WhatsApp == nil || snd.Spec.WhatsApp.BusinessAccountID == "") {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "senderId",
			Message: fmt.Sprintf("sender %s has no connected WhatsApp business account to submit to", sender)})
	}
	// Submitted first, then the request recorded in the spec: the controller, which submits a
	// request whose status does not show it taken, finds it taken and does not submit again.
	sub := &v1alpha1.TemplateSubmission{Sender: sender, Sandbox: sandbox, RequestedAt: metav1.Now().UTC().Format("2006-01-02T15:04:05.000000Z")}
	answer := &templatereview.Answer{} // a write retried after a conflict does not submit again
	err = s.refresh(ctx, t, func(t *v1alpha1.Template) error {
		t.Spec.Submission = sub
		if category != nil {
			t.Spec.Category = v1alpha1.TemplateCategory(*category)
		}
		return s.reviewer.SubmitOnce(ctx, t, &snd, answer)
	})
	if err != nil {
		if apperror.As(err) != nil {
			return nil, err
		}
		return nil, apperror.New(apperror.Invalid, "template_submission_failed", "WhatsApp did not take the template: "+err.Error())
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.read(ctx, s.live, project, id)
		if err != nil {
			return err
		}
		*t = *current.DeepCopy()
		t.Spec.Submission = sub
		if category != nil {
			t.Spec.Category = v1alpha1.TemplateCategory(*category)
		}
		return kubewrite.Write(ctx, s.client, t)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// refresh runs step on t, reading it again when another writer changed it meanwhile.
func (s *Service) refresh(ctx context.Context, t *v1alpha1.Template, step func(*v1alpha1.Template) error) error {
	return kubewrite.Retry(ctx, s.live, t, step)
}

func (s *Service) read(ctx context.Context, r client.Reader, project, id string) (*v1alpha1.Template, error) {
	return kubewrite.Read[v1alpha1.Template](ctx, r, project, id, "template")
}
