// Package emaildomain manages EmailDomains for the REST API (/v1 and /v2 email-domains): it
// validates a domain, writes the resource as the API's field manager, has domainverify make
// its key and records at once (so the answer to create lists what to publish), checks it on
// verify, and refuses to delete a domain senders still send from.
package emaildomain

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"golang.org/x/net/idna"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/signingsecret"
)

// Service manages a project's email domains.
type Service struct {
	client   client.Client // reads from the informer cache, writes to the API server
	live     client.Reader
	verifier *domainverify.Verifier
}

// NewService returns a Service; verifier makes keys and records and checks DNS.
func NewService(c client.Client, live client.Reader, verifier *domainverify.Verifier) *Service {
	return &Service{client: c, live: live, verifier: verifier}
}

// Input is a create request.
type Input struct {
	Domain          *string
	EnhancedRecords *bool
	Receiving       *bool
}

// Create adds a domain to project and returns it with the records to publish. A domain the
// project already has is returned as it is, with created false; strict (v2) answers it so,
// v1 answers 409 domain_already_exists.
func (s *Service) Create(ctx context.Context, project string, in Input, strict bool) (d *v1alpha1.EmailDomain, created bool, err error) {
	if in.Domain == nil || *in.Domain == "" {
		return nil, false, apperror.InvalidFields(apperror.FieldError{Path: "domain", Message: "is required"})
	}
	name, err := Normalize(*in.Domain)
	if err != nil {
		return nil, false, apperror.InvalidFields(apperror.FieldError{Path: "domain", Message: err.Error()})
	}
	existing, err := s.find(ctx, project, name)
	if err != nil {
		return nil, false, err
	}
	if existing == nil {
		d = &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: ID(name)},
			Spec: v1alpha1.EmailDomainSpec{Domain: name, EnhancedRecords: deref(in.EnhancedRecords), Receiving: deref(in.Receiving)}}
		err = kubewrite.Write(ctx, s.client, d)
		if apierrors.IsAlreadyExists(err) {
			existing, err = s.read(ctx, s.live, project, ID(name))
		} else if err == nil {
			created = true
		}
		if err != nil {
			return nil, false, err
		}
	}
	if existing != nil {
		if !strict {
			e := apperror.New(apperror.Conflict, "domain_already_exists", fmt.Sprintf("This project already has %s as email domain %s.", name, existing.Name))
			e.Details = map[string]any{"domainId": existing.Name}
			return nil, false, e
		}
		return existing, false, nil
	}
	// The key and the records now, so the answer lists what to publish; the controller
	// checks DNS next.
	if err := s.refresh(ctx, d, domainverify.Options{}); err != nil {
		return nil, false, err
	}
	return d, true, nil
}

// find returns the project's EmailDomain for name, the first when kubectl made several.
func (s *Service) find(ctx context.Context, project, name string) (*v1alpha1.EmailDomain, error) {
	var list v1alpha1.EmailDomainList
	if err := s.live.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list email domains of %s: %w", project, err)
	}
	return v1alpha1.FirstDomainNamed(list.Items, name), nil
}

// List returns the project's domains, oldest first.
func (s *Service) List(ctx context.Context, project string) ([]v1alpha1.EmailDomain, error) {
	var list v1alpha1.EmailDomainList
	if err := s.client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list email domains of %s: %w", project, err)
	}
	return kubewrite.Live(list.Items), nil
}

// Get returns the domain id of project.
func (s *Service) Get(ctx context.Context, project, id string) (*v1alpha1.EmailDomain, error) {
	return s.read(ctx, s.client, project, id)
}

// Verify opens a new verification window and checks DNS now. When DNS cannot answer, strict
// (v2) answers 503 verification_unavailable; v1 answers the domain, its unanswered records
// marked temporary_failure.
func (s *Service) Verify(ctx context.Context, project, id string, strict bool) (*v1alpha1.EmailDomain, error) {
	d, err := s.read(ctx, s.live, project, id)
	if err != nil {
		return nil, err
	}
	err = s.refresh(ctx, d, domainverify.Options{Check: true, Restart: true})
	if errors.Is(err, domainverify.ErrUnavailable) {
		if strict {
			e := apperror.New(apperror.Unavailable, "verification_unavailable",
				"The DNS check of this domain could not run (the resolver did not answer); try again in a minute.")
			e.Details = map[string]any{"domainId": d.Name}
			return nil, e
		}
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// refresh runs the verifier, reading the domain again when another writer (the controller)
// changed it meanwhile. DNS being unavailable is returned after the status is written.
func (s *Service) refresh(ctx context.Context, d *v1alpha1.EmailDomain, o domainverify.Options) error {
	return kubewrite.Retry(ctx, s.live, d, func(d *v1alpha1.EmailDomain) error { return s.verifier.Refresh(ctx, d, o) })
}

// Delete removes the domain and its generated key. A domain a sender of the project sends from
// is kept (409 domain_in_use, naming the senders): change their addresses first. kubectl
// delete is not stopped; those senders' mail then fails with EMAIL_DOMAIN_NOT_VERIFIED.
func (s *Service) Delete(ctx context.Context, project, id string) error {
	d, err := s.read(ctx, s.live, project, id)
	if err != nil {
		return err
	}
	users, err := s.senders(ctx, project, d.Spec.Domain)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		e := apperror.New(apperror.Conflict, "domain_in_use", fmt.Sprintf(
			"Senders %s send from %s; give them another email address before deleting the domain.", strings.Join(users, ", "), d.Spec.Domain))
		e.Details = map[string]any{"senders": users}
		return e
	}
	if err := s.client.Delete(ctx, d); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete email domain %s: %w", id, err)
	}
	// The key goes at once rather than whenever garbage collection gets to it.
	secrets := signingsecret.Store{Client: s.client, Live: s.live, FieldManager: kubewrite.FieldManager}
	for _, name := range []string{domainverify.SecretName(d), domainverify.Ed25519SecretName(d)} {
		if err := secrets.Delete(ctx, d, name); err != nil {
			return err
		}
	}
	return s.verifier.Forget(ctx, d)
}

// senders names the project's senders whose email address is on domain.
func (s *Service) senders(ctx context.Context, project, domain string) ([]string, error) {
	var list v1alpha1.SenderList
	if err := s.live.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list senders of %s: %w", project, err)
	}
	var out []string
	for _, snd := range list.Items {
		if snd.Spec.Email != nil && v1alpha1.EmailDomainOf(snd.Spec.Email.Address) == domain && snd.DeletionTimestamp.IsZero() {
			out = append(out, snd.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *Service) read(ctx context.Context, r client.Reader, project, id string) (*v1alpha1.EmailDomain, error) {
	return kubewrite.Read[v1alpha1.EmailDomain](ctx, r, project, id, "email domain")
}

// ID names the EmailDomain the API makes for domain: "dom-" and 16 characters of its hash, so
// two concurrent adds of one domain meet on one resource.
func ID(domain string) string {
	sum := sha256.Sum256([]byte(domain))
	return "dom-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:10]))
}

// Normalize checks that s is a domain name one can send mail from and returns it as stored:
// lowercase ASCII, an internationalised name in its xn-- form, no trailing dot. It refuses
// addresses, URLs, IP addresses, single labels and numeric top-level domains.
func Normalize(s string) (string, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if strings.ContainsAny(s, "@/:") {
		return "", errors.New("must be a domain name such as example.com, without an address, scheme or path")
	}
	ascii, err := idna.Lookup.ToASCII(s)
	if err != nil {
		return "", errors.New("must be a valid domain name such as example.com")
	}
	ascii = strings.ToLower(ascii)
	labels := strings.Split(ascii, ".")
	if len(ascii) > 253 || len(labels) < 2 {
		return "", errors.New("must be a fully qualified domain name such as example.com (at most 253 characters)")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return "", fmt.Errorf("must be a valid domain name: label %q is not", l)
		}
	}
	if tld := labels[len(labels)-1]; strings.Trim(tld, "0123456789") == "" || tld[0] < 'a' || tld[0] > 'z' {
		return "", errors.New("must end in a top-level domain such as .com (an IP address is not a domain)")
	}
	return ascii, nil
}

func deref(b *bool) bool { return b != nil && *b }
