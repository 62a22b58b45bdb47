// Package sender manages Senders for the REST API: it validates requests, writes the Sender
// resources as field manager switchboard-api (see kubewrite), so kubectl and the API meet one
// object and one validation, and manages the webhook signing secret.
package sender

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/signingsecret"
)

// Service manages Senders.
type Service struct {
	client   client.Client // reads from the informer cache, writes to the API server
	live     client.Reader // reads from the API server, for read-modify-write
	scheme   *runtime.Scheme
	bots     Bots
	urls     delivery.URLPolicy
	profiles Profiles
	pictures Pictures
	fetch    *http.Client // fetches profile pictures
	numbers  phonenumber.Lookup
}

// NewService returns a Service; live reads bypass the cache where a change builds on the latest;
// tg checks Telegram bot tokens.
func NewService(c client.Client, live client.Reader, bots Bots) *Service {
	return &Service{client: c, live: live, scheme: c.Scheme(), bots: bots}
}

// WithURLPolicy makes s take webhook URLs by the installation's rules (the workers'
// delivery.ClientOptions.URLPolicy(): plain http to loopback in dev) and returns s. Without
// it, https only.
func (s *Service) WithURLPolicy(urls delivery.URLPolicy) *Service {
	s.urls = urls
	return s
}

// View is a sender as the API shows it, with what is in effect computed now rather than when
// the controller next runs.
type View struct {
	Sender    *v1alpha1.Sender
	Channels  []v1alpha1.Channel
	IsDefault bool
	// EmailReceiving and EmailCatchAll are what is in effect of the email settings.
	EmailReceiving, EmailCatchAll bool
	// Secret is the webhook secret, only right after it was made or rotated.
	Secret string
}

// Input is a create or update request; nil fields are left as they are.
type Input struct {
	Name                    *string
	PhoneNumber             *string
	EmailAddress            *string
	EmailDomainID           *string
	EmailFromName           *string
	EmailReceivingEnabled   *bool
	EmailCatchAllEnabled    *bool
	EnableSmsOneway         *bool
	EnableVoice             *bool
	SetAsDefault            *bool
	WebhookURL              *string
	RemoveWebhook           bool
	WebhookEvents           *[]string
	WebhookActive           *bool
	WebhookSignatureVersion *string
}

// Create makes a sender in project.
func (s *Service) Create(ctx context.Context, project string, in Input) (View, error) {
	if in.Name == nil {
		return View{}, apperror.InvalidFields(apperror.FieldError{Path: "name", Message: "is required"})
	}
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: project}}
	if errs := apply(&snd.Spec, in, s.urls); len(errs) > 0 {
		return View{}, apperror.InvalidFields(errs...)
	}
	if err := s.checkEmailDomain(ctx, project, nil, &snd.Spec, in); err != nil {
		return View{}, err
	}
	id, err := newID()
	if err != nil {
		return View{}, err
	}
	if err := s.checkNumber(ctx, project, id, "", &snd.Spec, in); err != nil {
		return View{}, err
	}
	if err := s.checkVoice(ctx, project, &snd.Spec); err != nil {
		return View{}, err
	}
	snd.Name = id
	if err := s.write(ctx, snd); err != nil {
		return View{}, err
	}
	view, err := s.viewAfterWrite(ctx, snd, in)
	if err != nil {
		return View{}, err
	}
	if snd.Spec.Webhook != nil {
		if view.Secret, err = s.ensureSecret(ctx, snd); err != nil {
			return View{}, err
		}
	}
	return view, nil
}

// viewAfterWrite shows the sender just written; when the request asked for it to be the default,
// the flag is cleared on the project's other senders first.
func (s *Service) viewAfterWrite(ctx context.Context, snd *v1alpha1.Sender, in Input) (View, error) {
	view, err := s.view(ctx, snd)
	if err != nil {
		return View{}, err
	}
	if in.SetAsDefault != nil && *in.SetAsDefault {
		if err := s.clearOtherDefaults(ctx, snd); err != nil {
			return View{}, err
		}
		view.IsDefault = true
	}
	return view, nil
}

// Get returns the sender id of project.
func (s *Service) Get(ctx context.Context, project, id string) (View, error) {
	snd, err := s.get(ctx, project, id)
	if err != nil {
		return View{}, err
	}
	return s.view(ctx, snd)
}

// List returns the project's senders, oldest first, then by id.
func (s *Service) List(ctx context.Context, project string) ([]View, error) {
	var list v1alpha1.SenderList
	if err := s.client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list senders of %s: %w", project, err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	def := v1alpha1.DefaultSender(list.Items)
	domains, err := s.domains(ctx, project)
	if err != nil {
		return nil, err
	}
	out := make([]View, 0, len(list.Items))
	for i := range list.Items {
		snd := &list.Items[i]
		if !snd.DeletionTimestamp.IsZero() {
			continue
		}
		channels, err := s.channelsOf(ctx, snd)
		if err != nil {
			return nil, err
		}
		v := View{Sender: snd, Channels: channels, IsDefault: def != nil && def.UID == snd.UID}
		v.EmailReceiving, v.EmailCatchAll = snd.EmailInEffect(domains)
		out = append(out, v)
	}
	return out, nil
}

// Update changes what in sets.
func (s *Service) Update(ctx context.Context, project, id string, in Input) (View, error) {
	var snd *v1alpha1.Sender
	var addedWebhook, removedWebhook bool
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.getLive(ctx, project, id)
		if err != nil {
			return err
		}
		snd = current.DeepCopy()
		addedWebhook = current.Spec.Webhook == nil
		removedWebhook = current.Spec.Webhook != nil && in.RemoveWebhook
		if errs := apply(&snd.Spec, in, s.urls); len(errs) > 0 {
			return apperror.InvalidFields(errs...)
		}
		if err := s.checkEmailDomain(ctx, project, current.Spec.Email, &snd.Spec, in); err != nil {
			return err
		}
		if err := s.checkNumber(ctx, project, id, current.Spec.PhoneNumber, &snd.Spec, in); err != nil {
			return err
		}
		if err := s.checkVoice(ctx, project, &snd.Spec); err != nil {
			return err
		}
		if in.WebhookSignatureVersion != nil && current.Spec.Webhook != nil {
			if err := checkTransition(current.Spec.Webhook.SignatureVersion, v1alpha1.SignatureVersion(*in.WebhookSignatureVersion)); err != nil {
				return err
			}
		}
		return s.write(ctx, snd)
	})
	if err != nil {
		return View{}, err
	}
	view, err := s.viewAfterWrite(ctx, snd, in)
	if err != nil {
		return View{}, err
	}
	if removedWebhook {
		// The removed webhook's secret goes with it, now: a webhook added later gets a new one.
		if err := s.secrets().Delete(ctx, snd, signingsecret.ForSender(snd)); err != nil {
			return View{}, err
		}
	}
	if addedWebhook && snd.Spec.Webhook != nil && snd.Spec.Webhook.SecretRef == nil {
		// A webhook added by this update shows the secret it signs with, in this answer only
		// (the controller may have made it a moment before; either way it is the one in use).
		if view.Secret, err = s.ensureSecret(ctx, snd); err != nil {
			return View{}, err
		}
	}
	return view, nil
}

// Delete removes the sender; its generated webhook Secret goes with it (owner reference).
func (s *Service) Delete(ctx context.Context, project, id string) error {
	snd, err := s.getLive(ctx, project, id)
	if err != nil {
		return err
	}
	if err := s.client.Delete(ctx, snd); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete sender %s: %w", id, err)
	}
	if snd.Spec.Telegram != nil {
		s.unhook(ctx, snd)
	}
	// Its Secrets go at once rather than whenever garbage collection gets to them.
	for _, name := range []string{signingsecret.ForSender(snd), telegramSecretName(snd)} {
		if err := s.secrets().Delete(ctx, snd, name); err != nil {
			return err
		}
	}
	return nil
}

// RotateSecret gives the sender's webhook a new signing secret, effective from the next
// delivery, and returns it (the only time it is shown).
func (s *Service) RotateSecret(ctx context.Context, project, id string) (string, error) {
	snd, err := s.getLive(ctx, project, id)
	if err != nil {
		return "", err
	}
	if snd.Spec.Webhook == nil {
		return "", apperror.InvalidFields(apperror.FieldError{Path: "", Message: "this sender has no webhook"})
	}
	if snd.Spec.Webhook.SecretRef != nil {
		e := apperror.New(apperror.Conflict, "secret_managed_elsewhere",
			"This webhook signs with a Secret you manage (spec.webhook.secretRef); rotate it there.")
		return "", e
	}
	value, err := s.secrets().Rotate(ctx, snd, signingsecret.ForSender(snd))
	if err != nil {
		return "", fmt.Errorf("rotate webhook secret of %s: %w", id, err)
	}
	return value, nil
}

// Activate switches a configured channel on.
func (s *Service) Activate(ctx context.Context, project, id string, channel v1alpha1.Channel) (View, error) {
	var snd *v1alpha1.Sender
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.getLive(ctx, project, id)
		if err != nil {
			return err
		}
		snd = current.DeepCopy()
		spec := &snd.Spec
		notConnected := func(what string) error {
			return apperror.InvalidFields(apperror.FieldError{Path: "channel", Message: fmt.Sprintf("%s is not connected to this sender: %s", channel, what)})
		}
		switch channel {
		case v1alpha1.ChannelSMS:
			if spec.PhoneNumber == "" {
				return notConnected("it has no phone number")
			}
			spec.SMS = &v1alpha1.Activation{Active: true}
		case v1alpha1.ChannelSMSOneway:
			spec.SMSOneway = &v1alpha1.Enablement{Enabled: true}
		case v1alpha1.ChannelVoice:
			if spec.PhoneNumber == "" {
				return notConnected("it has no phone number provisioned for calls")
			}
			spec.Voice = &v1alpha1.Enablement{Enabled: true}
		case v1alpha1.ChannelEmail:
			if spec.Email == nil {
				return notConnected("it has no email address")
			}
		case v1alpha1.ChannelWhatsApp, v1alpha1.ChannelTelegram, v1alpha1.ChannelInstagram, v1alpha1.ChannelMessenger:
			acc := account(spec, channel)
			if acc == nil {
				return notConnected("connect an account first (an invitation, or the channel's connect endpoint)")
			}
			acc.Active = true
		default:
			return apperror.InvalidFields(apperror.FieldError{Path: "channel", Message: fmt.Sprintf("unknown channel %q", channel)})
		}
		return s.write(ctx, snd)
	})
	if err != nil {
		return View{}, err
	}
	return s.view(ctx, snd)
}

func account(spec *v1alpha1.SenderSpec, c v1alpha1.Channel) *v1alpha1.ConnectedAccount {
	switch c {
	case v1alpha1.ChannelWhatsApp:
		return spec.WhatsApp
	case v1alpha1.ChannelTelegram:
		return spec.Telegram
	case v1alpha1.ChannelInstagram:
		return spec.Instagram
	case v1alpha1.ChannelMessenger:
		return spec.Messenger
	}
	return nil
}

// write stores the sender as the API's field manager, conditional on the version it was read at.
func (s *Service) write(ctx context.Context, snd *v1alpha1.Sender) error {
	return kubewrite.Write(ctx, s.client, snd)
}

func (s *Service) get(ctx context.Context, project, id string) (*v1alpha1.Sender, error) {
	return s.read(ctx, s.client, project, id)
}

func (s *Service) getLive(ctx context.Context, project, id string) (*v1alpha1.Sender, error) {
	return s.read(ctx, s.live, project, id)
}

func (s *Service) read(ctx context.Context, r client.Reader, project, id string) (*v1alpha1.Sender, error) {
	return kubewrite.Read[v1alpha1.Sender](ctx, r, project, id, "sender")
}

func (s *Service) view(ctx context.Context, snd *v1alpha1.Sender) (View, error) {
	var list v1alpha1.SenderList
	if err := s.client.List(ctx, &list, client.InNamespace(snd.Namespace)); err != nil {
		return View{}, fmt.Errorf("list senders of %s: %w", snd.Namespace, err)
	}
	if !slices.ContainsFunc(list.Items, func(o v1alpha1.Sender) bool { return o.UID == snd.UID }) {
		list.Items = append(list.Items, *snd) // the cache has not seen it yet
	}
	def := v1alpha1.DefaultSender(list.Items)
	domains, err := s.domains(ctx, snd.Namespace)
	if err != nil {
		return View{}, err
	}
	channels, err := s.channelsOf(ctx, snd)
	if err != nil {
		return View{}, err
	}
	v := View{Sender: snd, Channels: channels, IsDefault: def != nil && def.UID == snd.UID}
	v.EmailReceiving, v.EmailCatchAll = snd.EmailInEffect(domains)
	return v, nil
}

// domains lists the project's email domains (the informer cache).
func (s *Service) domains(ctx context.Context, project string) ([]v1alpha1.EmailDomain, error) {
	var list v1alpha1.EmailDomainList
	if err := s.client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list email domains of %s: %w", project, err)
	}
	return list.Items, nil
}

// checkEmailDomain applies the spec's rule to a new email address (or a new emailDomainId):
// its domain must be a verified email domain of the project, and emailDomainId, when given,
// must name that domain. An address the sender already had is not checked again (its domain
// may have lapsed since; the send path refuses to sign for it then).
func (s *Service) checkEmailDomain(ctx context.Context, project string, before *v1alpha1.EmailSettings, spec *v1alpha1.SenderSpec, in Input) error {
	if spec.Email == nil || (in.EmailAddress == nil && in.EmailDomainID == nil) {
		if in.EmailDomainID != nil {
			return apperror.InvalidFields(apperror.FieldError{Path: "emailAddress", Message: "is required with emailDomainId"})
		}
		return nil
	}
	if before != nil && before.Address == spec.Email.Address && in.EmailDomainID == nil {
		return nil
	}
	// Read the API server itself: a verify answered a moment ago must count.
	var list v1alpha1.EmailDomainList
	if err := s.live.List(ctx, &list, client.InNamespace(project)); err != nil {
		return fmt.Errorf("list email domains of %s: %w", project, err)
	}
	domain := v1alpha1.EmailDomainOf(spec.Email.Address)
	if in.EmailDomainID != nil {
		named := slices.IndexFunc(list.Items, func(d v1alpha1.EmailDomain) bool { return d.Name == *in.EmailDomainID })
		if named < 0 {
			return apperror.InvalidFields(apperror.FieldError{Path: "emailDomainId", Message: fmt.Sprintf("no email domain %s in this project", *in.EmailDomainID)})
		}
		if list.Items[named].Spec.Domain != domain {
			return apperror.InvalidFields(apperror.FieldError{Path: "emailDomainId", Message: fmt.Sprintf(
				"email domain %s is %s, and emailAddress is at %s", *in.EmailDomainID, list.Items[named].Spec.Domain, domain)})
		}
	}
	d := v1alpha1.DomainFor(list.Items, spec.Email.Address)
	switch {
	case d == nil:
		return apperror.InvalidFields(apperror.FieldError{Path: "emailAddress", Message: fmt.Sprintf(
			"%s is not an email domain of this project: add it (POST /v1/email-domains), publish its records and verify it", domain)})
	case !d.Status.Verified:
		return apperror.InvalidFields(apperror.FieldError{Path: "emailAddress", Message: fmt.Sprintf(
			"email domain %s (%s) is not verified yet: publish its records and verify it (POST /v1/email-domains/%s/verify)", domain, d.Name, d.Name)})
	}
	return nil
}

// clearOtherDefaults makes snd the project's only sender asking to be the default.
func (s *Service) clearOtherDefaults(ctx context.Context, snd *v1alpha1.Sender) error {
	var list v1alpha1.SenderList
	if err := s.client.List(ctx, &list, client.InNamespace(snd.Namespace)); err != nil {
		return fmt.Errorf("list senders of %s: %w", snd.Namespace, err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == snd.UID || !other.Spec.Default {
			continue
		}
		patch := client.MergeFrom(other.DeepCopy())
		other.Spec.Default = false
		if err := s.client.Patch(ctx, other, patch, client.FieldOwner(kubewrite.FieldManager)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("clear default of sender %s: %w", other.Name, err)
		}
	}
	return nil
}

// ensureSecret returns the webhook's signing secret, creating the generated one when needed;
// "" when the webhook signs with a Secret of the user's.
func (s *Service) ensureSecret(ctx context.Context, snd *v1alpha1.Sender) (string, error) {
	if snd.Spec.Webhook.SecretRef != nil {
		return "", nil
	}
	return s.secrets().Ensure(ctx, snd, signingsecret.ForSender(snd))
}

// secrets writes the senders' generated signing Secrets, as the controller does.
func (s *Service) secrets() signingsecret.Store {
	return signingsecret.Store{Client: s.client, Live: s.live, FieldManager: kubewrite.FieldManager}
}

// newID names a sender: "snd-" and 12 random lowercase letters and digits.
func newID() (string, error) { return randid.Name("snd-", 12) }

// checkTransition refuses signature-version jumps before the API server's CEL rule would, with
// the spec's wording.
func checkTransition(from, to v1alpha1.SignatureVersion) error {
	if (from == v1alpha1.SignatureV1 && to == v1alpha1.SignatureV2) || (from == v1alpha1.SignatureV2 && to == v1alpha1.SignatureV1) {
		return apperror.InvalidFields(apperror.FieldError{Path: "webhookSignatureVersion",
			Message: fmt.Sprintf("cannot go from %s straight to %s; go through v1+v2", from, to)})
	}
	return nil
}
