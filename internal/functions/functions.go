// Package functions is the project's own code run by the platform (docs/functions.md): Function
// resources with their drafts, immutable deployments, triggers, secrets, logs and Git links,
// the builder that turns a deployment's source into a bundle, and the runs that invoke it on
// events, schedules and HTTP requests through a runtime.
package functions

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Annotations of a Function the API writes.
const (
	// CreatedAtAnnotation keeps the creation time with microseconds (metadata's has seconds).
	CreatedAtAnnotation = "messaging.switchboard.io/created-at"
	// UpdatedAtAnnotation is when the API last changed the function or its draft.
	UpdatedAtAnnotation = "messaging.switchboard.io/updated-at"
	// LatestDeploymentAnnotation names the function's newest deployment made through the API.
	LatestDeploymentAnnotation = "messaging.switchboard.io/latest-deployment"
	// URLTokenAnnotation is the unguessable part of the function's public URL.
	URLTokenAnnotation = v1alpha1.FunctionURLTokenAnnotation
)

// The environment variables the platform sets in every run; a secret may not take them.
const (
	EnvAPIKey        = "ZAVU_API_KEY"
	EnvSDKAPIKey     = "ZAVUDEV_API_KEY"
	EnvBaseURL       = "ZAVUDEV_BASE_URL"
	EnvFunctionID    = "SWITCHBOARD_FUNCTION_ID"
	EnvDeploymentID  = "SWITCHBOARD_DEPLOYMENT_ID"
	EnvProject       = "SWITCHBOARD_PROJECT"
	EnvMode          = "SWITCHBOARD_MODE"
	secretNameSuffix = "-env"
)

// Service is the functions of the REST API: it writes Function resources (as kubectl would),
// their Secrets, and their rows in Postgres.
type Service struct {
	client client.Client // reads from the informer cache; writes
	live   client.Reader // reads from the API server
	pool   *pgxpool.Pool
	keys   *apikey.Service
	// PublicURL is the installation's public address; functions answer HTTP under
	// PublicURL/fn/<token>. Empty: the API's own address is not known, and publicUrl is null.
	PublicURL string
	now       func() time.Time
}

// NewService returns the functions of the REST API.
func NewService(c client.Client, live client.Reader, pool *pgxpool.Pool, keys *apikey.Service, publicURL string) *Service {
	return &Service{client: c, live: live, pool: pool, keys: keys, PublicURL: strings.TrimRight(publicURL, "/"), now: time.Now}
}

// Get returns the function id of project; 404 when there is none.
func (s *Service) Get(ctx context.Context, project, id string) (*v1alpha1.Function, error) {
	return kubewrite.Read[v1alpha1.Function](ctx, s.client, project, id, "function")
}

// List returns the project's functions, newest first.
func (s *Service) List(ctx context.Context, project string) ([]v1alpha1.Function, error) {
	var list v1alpha1.FunctionList
	if err := s.client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list functions of %s: %w", project, err)
	}
	items := kubewrite.Live[v1alpha1.Function](list.Items)
	sort.SliceStable(items, func(i, j int) bool {
		ti, tj := CreatedAt(&items[i]), CreatedAt(&items[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return items[i].Name > items[j].Name
	})
	return items, nil
}

// Settings are a function's configuration as the API sets it; nil fields stay as they are.
type Settings struct {
	Name         *string
	Description  *string
	Runtime      *string
	MemoryMB     *int32
	TimeoutSec   *int32
	HTTPEnabled  *bool
	Paused       *bool
	Architecture *string
}

// Validate checks the settings the API server's schema would refuse with less helpful paths.
func (in Settings) Validate() []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	if in.Name != nil && (strings.TrimSpace(*in.Name) == "" || len(*in.Name) > 100) {
		bad("name", "must be 1 to 100 characters")
	}
	if in.Description != nil && len(*in.Description) > 500 {
		bad("description", "must be at most 500 characters")
	}
	if in.Runtime != nil && *in.Runtime != string(v1alpha1.RuntimeNodeJS24) {
		bad("runtime", "must be nodejs24")
	}
	if in.MemoryMB != nil {
		switch *in.MemoryMB {
		case 128, 256, 512, 1024:
		default:
			bad("memoryMb", "must be 128, 256, 512 or 1024")
		}
	}
	if in.TimeoutSec != nil && (*in.TimeoutSec < 1 || *in.TimeoutSec > 900) {
		bad("timeoutSec", "must be 1 to 900 seconds")
	}
	if in.Architecture != nil && *in.Architecture != "" && *in.Architecture != "amd64" && *in.Architecture != "arm64" {
		bad("architecture", "must be amd64 or arm64")
	}
	return errs
}

func (in Settings) apply(f *v1alpha1.Function) {
	if in.Name != nil {
		f.Spec.DisplayName = strings.TrimSpace(*in.Name)
	}
	if in.Description != nil {
		f.Spec.Description = *in.Description
	}
	if in.Runtime != nil {
		f.Spec.Runtime = v1alpha1.FunctionRuntime(*in.Runtime)
	}
	if in.MemoryMB != nil {
		f.Spec.MemoryMB = *in.MemoryMB
	}
	if in.TimeoutSec != nil {
		f.Spec.TimeoutSeconds = *in.TimeoutSec
	}
	if in.HTTPEnabled != nil {
		f.Spec.HTTPEnabled = *in.HTTPEnabled
	}
	if in.Paused != nil {
		f.Spec.Paused = *in.Paused
	}
	if in.Architecture != nil {
		f.Spec.Architecture = *in.Architecture
	}
}

// Create makes a function in draft: its resource, its draft, the API key it calls the API with
// (of the caller's mode: a test key never makes a function that holds a live key) and the
// Secret that key is kept in.
func (s *Service) Create(ctx context.Context, project, slug string, mode v1alpha1.FunctionMode, in Settings, draft Draft) (*v1alpha1.Function, error) {
	var errs []apperror.FieldError
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		errs = append(errs, apperror.FieldError{Path: "name", Message: "is required"})
	}
	if msg := checkSlug(slug); msg != "" {
		errs = append(errs, apperror.FieldError{Path: "slug", Message: msg})
	}
	errs = append(errs, in.Validate()...)
	errs = append(errs, draft.Validate("")...)
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(sortFields(errs)...)
	}
	if _, err := s.Get(ctx, project, slug); err == nil {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "slug", Message: fmt.Sprintf("%s is taken: a slug is unique in the project", slug)})
	}
	token, err := randid.String(tokenAlphabet, 24)
	if err != nil {
		return nil, err
	}
	// The key is made first and named on the resource from its creation, so the controller,
	// which provisions a key for functions applied without one, never makes a second.
	secret, key, err := s.keys.Create(ctx, project, "function "+slug, keyEnvironment(mode), []string{string(apikey.PermissionAll)})
	if err != nil {
		return nil, fmt.Errorf("provision the key of function %s: %w", slug, err)
	}
	now := s.now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	f := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: slug,
		Annotations: map[string]string{CreatedAtAnnotation: now, UpdatedAtAnnotation: now, URLTokenAnnotation: token,
			v1alpha1.FunctionKeyIDAnnotation: key.ID}},
		Spec: v1alpha1.FunctionSpec{Runtime: v1alpha1.RuntimeNodeJS24, MemoryMB: 256, TimeoutSeconds: 10, Mode: mode}}
	in.apply(f)
	if err := kubewrite.Write(ctx, s.client, f); err != nil {
		_, _ = s.keys.Revoke(context.WithoutCancel(ctx), project, key.ID)
		if apierrors.IsAlreadyExists(err) || strings.Contains(err.Error(), "already exists") {
			return nil, apperror.InvalidFields(apperror.FieldError{Path: "slug", Message: fmt.Sprintf("%s is taken: a slug is unique in the project", slug)})
		}
		return nil, err
	}
	if err := s.keepKey(ctx, f, secret, key.ID); err != nil {
		return nil, err
	}
	if err := s.saveDraft(ctx, f, draft); err != nil {
		return nil, err
	}
	return f, nil
}

func keyEnvironment(mode v1alpha1.FunctionMode) apikey.Environment {
	if mode == v1alpha1.FunctionTest {
		return apikey.Test
	}
	return apikey.Live
}

// tokenAlphabet spells public URL tokens.
const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// checkSlug says what is wrong with a slug ("" when nothing): it is the resource's name.
func checkSlug(slug string) string {
	switch {
	case slug == "":
		return "is required"
	case len(slug) > 60:
		return "must be at most 60 characters"
	case !slugPattern.MatchString(slug):
		return "must be lowercase letters, digits and single hyphens, starting and ending with a letter or digit"
	case slug == "event-types" || slug == "deployments" || slug == "triggers" || slug == "bundles":
		return slug + " is a path of the functions API, not a slug"
	}
	return ""
}

// provisionKey makes the function's own API key, unless it has one, and keeps it in the
// function's Secret: every run holds it as ZAVU_API_KEY. A key already kept in the Secret (a
// provisioning cut short before it named the key on the resource) is the one it keeps.
func (s *Service) provisionKey(ctx context.Context, f *v1alpha1.Function) (*v1alpha1.Function, error) {
	if f.Annotations[v1alpha1.FunctionKeyIDAnnotation] != "" {
		return f, nil
	}
	var existing corev1.Secret
	err := s.live.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: SecretName(f)}, &existing)
	keyID := existing.Annotations[v1alpha1.FunctionKeyIDAnnotation]
	if err != nil || keyID == "" || len(existing.Data[EnvAPIKey]) == 0 {
		secret, key, err := s.keys.Create(ctx, f.Namespace, "function "+f.Name, keyEnvironment(f.Spec.Mode), []string{string(apikey.PermissionAll)})
		if err != nil {
			return nil, fmt.Errorf("provision the key of function %s: %w", f.Name, err)
		}
		if err := s.keepKey(ctx, f, secret, key.ID); err != nil {
			_, _ = s.keys.Revoke(context.WithoutCancel(ctx), f.Namespace, key.ID)
			return nil, err
		}
		keyID = key.ID
	}
	return s.change(ctx, f, func(f *v1alpha1.Function) error {
		if f.Annotations[v1alpha1.FunctionKeyIDAnnotation] == "" {
			f.Annotations[v1alpha1.FunctionKeyIDAnnotation] = keyID
		}
		return nil
	})
}

// keepKey writes the function's key into its Secret, named by an annotation.
func (s *Service) keepKey(ctx context.Context, f *v1alpha1.Function, secret, keyID string) error {
	return s.writeSecretWith(ctx, f, func(obj *corev1.Secret, times map[string]secretTimes) error {
		obj.Data[EnvAPIKey] = []byte(secret)
		obj.Annotations[v1alpha1.FunctionKeyIDAnnotation] = keyID
		now := s.now().UnixMilli()
		times[EnvAPIKey] = secretTimes{Created: now, Updated: now}
		return nil
	})
}

// Update changes settings and the draft; the draft goes live only on deploy.
func (s *Service) Update(ctx context.Context, f *v1alpha1.Function, in Settings, edit DraftEdit) (*v1alpha1.Function, error) {
	errs := in.Validate()
	if edit.Changes() && f.Spec.Source != nil {
		errs = append(errs, apperror.FieldError{Path: edit.firstPath(), Message: "this function's code is declared in its Function resource (spec.source): change it there"})
	}
	var draft Draft
	if edit.Changes() && len(errs) == 0 {
		cur, err := s.Draft(ctx, f)
		if err != nil {
			return nil, err
		}
		draft = edit.On(cur)
		errs = append(errs, draft.Validate(edit.firstPath())...)
	}
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(sortFields(errs)...)
	}
	if edit.Changes() {
		if err := s.saveDraft(ctx, f, draft); err != nil {
			return nil, err
		}
	}
	return s.change(ctx, f, func(f *v1alpha1.Function) error {
		in.apply(f)
		f.Annotations[UpdatedAtAnnotation] = s.now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
		return nil
	})
}

// change runs mutate on the function and writes it, again on a conflict with another writer.
func (s *Service) change(ctx context.Context, f *v1alpha1.Function, mutate func(*v1alpha1.Function) error) (*v1alpha1.Function, error) {
	f = f.DeepCopy()
	err := kubewrite.Retry(ctx, s.live, f, func(f *v1alpha1.Function) error {
		if f.Annotations == nil {
			f.Annotations = map[string]string{}
		}
		if err := mutate(f); err != nil {
			return err
		}
		return kubewrite.Write(ctx, s.client, f)
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Delete deletes the function and everything it has: its key is revoked and its rows deleted
// before the resource goes, so nothing runs with them afterwards; its Secrets go with it.
func (s *Service) Delete(ctx context.Context, f *v1alpha1.Function) error {
	if err := s.Cleanup(ctx, f); err != nil {
		return err
	}
	if err := s.client.Delete(ctx, f); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete function %s: %w", f.Name, err)
	}
	for _, name := range []string{SecretName(f), gitSecretName(f)} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: name}}
		if err := s.client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete the secret of function %s: %w", f.Name, err)
		}
	}
	kubewrite.WaitGone(ctx, s.client, f)
	return nil
}

// Cleanup revokes the function's key and deletes its rows: what deleting it through the API
// does at once, and what the controller's finalizer does for a kubectl delete.
func (s *Service) Cleanup(ctx context.Context, f *v1alpha1.Function) error {
	if id := f.Annotations[v1alpha1.FunctionKeyIDAnnotation]; id != "" {
		if _, err := s.keys.Revoke(ctx, f.Namespace, id); err != nil && !isNotFound(err) {
			return fmt.Errorf("revoke the key of function %s: %w", f.Name, err)
		}
	}
	if err := db.Planned(s.pool).DeleteFunctionRows(ctx, string(f.UID)); err != nil {
		return fmt.Errorf("delete the rows of function %s: %w", f.Name, err)
	}
	// The agent it declared goes with it (its owner reference would too, when garbage
	// collection gets to it).
	var a v1alpha1.Agent
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: ManagedAgentName(f)}, &a); err == nil && metav1.IsControlledBy(&a, f) {
		if err := s.client.Delete(ctx, &a); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete the agent of function %s: %w", f.Name, err)
		}
	}
	return nil
}

// CreatedAt is when the function was made (the API's annotation, else the resource's time).
func CreatedAt(f *v1alpha1.Function) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, f.Annotations[CreatedAtAnnotation]); err == nil {
		return t
	}
	return f.CreationTimestamp.UTC()
}

// UpdatedAt is when the API last changed the function (else when it was made).
func UpdatedAt(f *v1alpha1.Function) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, f.Annotations[UpdatedAtAnnotation]); err == nil {
		return t
	}
	return CreatedAt(f)
}

// PublicURLOf is where the function answers HTTP: "" while HTTP is off or no public address is
// configured.
func (s *Service) PublicURLOf(f *v1alpha1.Function) string {
	token := f.Annotations[URLTokenAnnotation]
	if !f.Spec.HTTPEnabled || token == "" || s.PublicURL == "" {
		return ""
	}
	return s.PublicURL + "/fn/" + token
}

// inTx runs fn in a transaction.
func (s *Service) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

func isNotFound(err error) bool {
	e := apperror.As(err)
	return e != nil && e.Kind == apperror.NotFound
}

func sortFields(errs []apperror.FieldError) []apperror.FieldError {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
	return errs
}
