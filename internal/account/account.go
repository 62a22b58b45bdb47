// Package account manages sub-accounts: projects (namespaces) whose Project names a parent, with
// their own API keys. A parent sees and changes only its own sub-accounts, as many as its cap
// allows, with credit limits its balance can pay; a test key changes nothing that live traffic
// or money depends on (docs/guarantees.md#tenant-isolation-and-money).
package account

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/optional"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// The API creates a namespace per sub-account.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;delete

// ParentLabel marks a sub-account's namespace with its parent's.
const ParentLabel = "messaging.switchboard.io/parent"

// SubAccount is a sub-account as the API shows it.
type SubAccount struct {
	ID          string
	Name        string
	CreatedAt   time.Time
	Active      bool
	CreditLimit *int64
	ExternalID  string
	Metadata    json.RawMessage
}

// CreateInput is a new sub-account.
type CreateInput struct {
	Name        string          `json:"name"`
	CreditLimit *int64          `json:"creditLimit"`
	ExternalID  string          `json:"externalId"`
	Metadata    json.RawMessage `json:"metadata"`
}

// UpdateInput changes the fields that are set.
type UpdateInput struct {
	Name        optional.Value[string]          `json:"name"`
	CreditLimit optional.Value[int64]           `json:"creditLimit"`
	ExternalID  optional.Value[string]          `json:"externalId"`
	Metadata    optional.Value[json.RawMessage] `json:"metadata"`
	Status      optional.Value[string]          `json:"status"`
}

// DefaultMaxSubAccounts is how many sub-accounts a project may have when neither the
// installation (--max-sub-accounts) nor its Project (spec.maxSubAccounts) says.
const DefaultMaxSubAccounts = 1000

// Funds tells what a parent's balance could pay now (billing.Service).
type Funds interface {
	Available(ctx context.Context, project string) (billing.Micros, error)
}

// Locker runs fn while no other replica creates a sub-account of the same parent (a Postgres
// advisory lock), so the cap holds under concurrent creates.
type Locker interface {
	WithLock(ctx context.Context, key string, fn func(context.Context) error) error
}

// Service manages sub-accounts.
type Service struct {
	client client.Client
	live   client.Reader // reads from the API server, for read-modify-write
	keys   *apikey.Service
	funds  Funds
	lock   Locker
	// max is the installation's cap of sub-accounts per project.
	max int
}

// NewService returns a Service; c reads from the informer cache (with index.ProjectParent) and writes
// to the API server. max is the installation's cap of sub-accounts per parent (0: the default).
func NewService(c client.Client, live client.Reader, keys *apikey.Service, funds Funds, lock Locker, max int) *Service {
	if max <= 0 {
		max = DefaultMaxSubAccounts
	}
	return &Service{client: c, live: live, keys: keys, funds: funds, lock: lock, max: max}
}

// Create makes a sub-account of parent with one full-access key of env, returned once. A test
// key (env test) may not give it a credit limit: that is money live traffic spends.
func (s *Service) Create(ctx context.Context, parent *v1alpha1.Project, env apikey.Environment, in CreateInput) (SubAccount, string, error) {
	var errs []apperror.FieldError
	errs = append(errs, validName(in.Name, true)...)
	errs = append(errs, validCreditLimit(in.CreditLimit)...)
	errs = append(errs, validExternalID(in.ExternalID)...)
	errs = append(errs, validMetadata(in.Metadata)...)
	if len(errs) > 0 {
		return SubAccount{}, "", apperror.InvalidFields(errs...)
	}
	if env == apikey.Test && in.CreditLimit != nil && *in.CreditLimit > 0 {
		return SubAccount{}, "", testKeyRefused("give a sub-account a credit limit")
	}
	if err := s.affordable(ctx, parent.Namespace, in.CreditLimit); err != nil {
		return SubAccount{}, "", err
	}
	var out SubAccount
	var secret string
	capped := func(ctx context.Context) error {
		if err := s.underCap(ctx, parent); err != nil {
			return err
		}
		var err error
		out, secret, err = s.create(ctx, parent, env, in)
		return err
	}
	var err error
	if s.lock == nil {
		err = capped(ctx)
	} else {
		err = s.lock.WithLock(ctx, "sub-accounts/"+parent.Namespace, capped)
	}
	return out, secret, err
}

// underCap refuses a new sub-account when parent has as many as it may (inactive ones count:
// each keeps its namespace). It counts from the API server, not the cache, under the lock.
func (s *Service) underCap(ctx context.Context, parent *v1alpha1.Project) error {
	limit := s.max
	if parent.Spec.MaxSubAccounts != nil {
		limit = int(*parent.Spec.MaxSubAccounts)
	}
	var namespaces corev1.NamespaceList
	if err := s.live.List(ctx, &namespaces, client.MatchingLabels{ParentLabel: parent.Namespace}); err != nil {
		return fmt.Errorf("count sub-accounts of %s: %w", parent.Namespace, err)
	}
	if len(namespaces.Items) < limit {
		return nil
	}
	e := apperror.New(apperror.Forbidden, "sub_account_limit_reached", fmt.Sprintf(
		"This project has %d sub-accounts, as many as it may have; ask the operator to raise spec.maxSubAccounts on its Project.", len(namespaces.Items)))
	e.Details = map[string]any{"limit": limit}
	return e
}

// affordable refuses a credit limit above what parent's balance could pay now: the parent pays
// what a sub-account spends past its own balance.
func (s *Service) affordable(ctx context.Context, parent string, creditLimit *int64) error {
	if creditLimit == nil || *creditLimit == 0 || s.funds == nil {
		return nil
	}
	avail, err := s.funds.Available(ctx, parent)
	if err != nil {
		return err
	}
	if billing.FromCents(*creditLimit) <= avail {
		return nil
	}
	cents := int64(avail.Cents())
	if cents < 0 {
		cents = 0
	}
	e := apperror.InvalidFields(apperror.FieldError{Path: "creditLimit", Message: fmt.Sprintf(
		"must be at most %d cents, what this project's balance can pay: the parent pays what a sub-account spends past its own balance", cents)})
	return e
}

func (s *Service) create(ctx context.Context, parent *v1alpha1.Project, env apikey.Environment, in CreateInput) (SubAccount, string, error) {
	id, err := newID()
	if err != nil {
		return SubAccount{}, "", err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{ParentLabel: parent.Namespace}}}
	if err := s.client.Create(ctx, ns, client.FieldOwner(kubewrite.FieldManager)); err != nil {
		return SubAccount{}, "", fmt.Errorf("create namespace of sub-account: %w", err)
	}
	settings := &v1alpha1.SubAccountSettings{ExternalID: in.ExternalID, CreditLimit: in.CreditLimit}
	if len(in.Metadata) > 0 && string(in.Metadata) != "null" {
		settings.Metadata = &apiextensionsv1.JSON{Raw: in.Metadata}
	}
	project := &v1alpha1.Project{
		ObjectMeta: metav1.ObjectMeta{Namespace: id, Name: "project"},
		Spec: v1alpha1.ProjectSpec{
			DisplayName: in.Name,
			Plan:        parent.Spec.Plan,
			Team:        parent.TeamKey(),
			Parent:      parent.Namespace,
			SubAccount:  settings,
		},
	}
	if err := s.client.Create(ctx, project, client.FieldOwner(kubewrite.FieldManager)); err != nil {
		_ = s.client.Delete(context.WithoutCancel(ctx), ns)
		return SubAccount{}, "", fmt.Errorf("create project of sub-account: %w", err)
	}
	secret, _, err := s.keys.Create(ctx, id, "default", env, nil)
	if err != nil {
		return SubAccount{}, "", err
	}
	return view(project), secret, nil
}

// List returns parent's sub-accounts, oldest first.
func (s *Service) List(ctx context.Context, parent string) ([]SubAccount, error) {
	var projects v1alpha1.ProjectList
	if err := s.client.List(ctx, &projects, client.MatchingFields{index.ProjectParent: parent}); err != nil {
		return nil, fmt.Errorf("list sub-accounts of %s: %w", parent, err)
	}
	out := make([]SubAccount, 0, len(projects.Items))
	for i := range projects.Items {
		p := &projects.Items[i]
		if p.DeletionTimestamp.IsZero() {
			out = append(out, view(p))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Get returns parent's sub-account id; another project's is not found.
func (s *Service) Get(ctx context.Context, parent, id string) (SubAccount, error) {
	p, err := s.project(ctx, parent, id)
	if err != nil {
		return SubAccount{}, err
	}
	return view(p), nil
}

// Update changes the fields set in in. A test key (env test) may not change the credit limit
// or the status: both decide what live traffic may spend and send.
func (s *Service) Update(ctx context.Context, parent, id string, env apikey.Environment, in UpdateInput) (SubAccount, error) {
	var errs []apperror.FieldError
	if in.Name.Set {
		errs = append(errs, validName(in.Name.Value, true)...)
		if in.Name.Null {
			errs = append(errs, apperror.FieldError{Path: "name", Message: "cannot be null"})
		}
	}
	if in.CreditLimit.Set && !in.CreditLimit.Null {
		errs = append(errs, validCreditLimit(&in.CreditLimit.Value)...)
	}
	if in.ExternalID.Set {
		errs = append(errs, validExternalID(in.ExternalID.Value)...)
	}
	if in.Metadata.Set && !in.Metadata.Null {
		errs = append(errs, validMetadata(in.Metadata.Value)...)
	}
	if in.Status.Set && in.Status.Value != "active" && in.Status.Value != "inactive" {
		errs = append(errs, apperror.FieldError{Path: "status", Message: "must be active or inactive"})
	}
	if len(errs) > 0 {
		return SubAccount{}, apperror.InvalidFields(errs...)
	}
	if env == apikey.Test && (in.CreditLimit.Set || in.Status.Set) {
		return SubAccount{}, testKeyRefused("change a sub-account's credit limit or status")
	}
	if _, err := s.project(ctx, parent, id); err != nil {
		return SubAccount{}, err
	}
	if in.CreditLimit.Set && !in.CreditLimit.Null {
		if err := s.affordable(ctx, parent, &in.CreditLimit.Value); err != nil {
			return SubAccount{}, err
		}
	}
	p, err := s.change(ctx, parent, id, func(p *v1alpha1.Project) {
		sa := p.Spec.SubAccount
		if in.Name.Set {
			p.Spec.DisplayName = in.Name.Value
		}
		if in.CreditLimit.Set {
			sa.CreditLimit = nil
			if !in.CreditLimit.Null {
				sa.CreditLimit = &in.CreditLimit.Value
			}
		}
		if in.ExternalID.Set {
			sa.ExternalID = in.ExternalID.Value
		}
		if in.Metadata.Set {
			sa.Metadata = nil
			if !in.Metadata.Null {
				sa.Metadata = &apiextensionsv1.JSON{Raw: in.Metadata.Value}
			}
		}
		if in.Status.Set {
			sa.Deactivated = in.Status.Value == "inactive"
		}
	})
	if err != nil {
		return SubAccount{}, err
	}
	return view(p), nil
}

// Deactivate stops the sub-account and revokes its keys; it returns how many it revoked. A
// test key may not: it would stop live traffic.
func (s *Service) Deactivate(ctx context.Context, parent, id string, env apikey.Environment) (int, error) {
	if env == apikey.Test {
		return 0, testKeyRefused("deactivate a sub-account")
	}
	if _, err := s.change(ctx, parent, id, func(p *v1alpha1.Project) { p.Spec.SubAccount.Deactivated = true }); err != nil {
		return 0, err
	}
	return s.keys.RevokeAll(ctx, id)
}

// CreateKey makes a key of env for parent's sub-account id, asked by a key of callerEnv: a test
// key makes test keys only.
func (s *Service) CreateKey(ctx context.Context, parent, id string, callerEnv apikey.Environment, name string, env apikey.Environment, permissions []string) (string, apikey.Key, error) {
	if _, err := s.project(ctx, parent, id); err != nil {
		return "", apikey.Key{}, err
	}
	var errs []apperror.FieldError
	if name == "" || len(name) > 100 {
		errs = append(errs, apperror.FieldError{Path: "name", Message: "is required, up to 100 characters"})
	}
	if !env.Valid() {
		errs = append(errs, apperror.FieldError{Path: "environment", Message: "must be live or test"})
	}
	if _, err := apikey.ParsePermissions(permissions); err != nil {
		errs = append(errs, apperror.FieldError{Path: "permissions", Message: err.Error()})
	}
	if len(errs) > 0 {
		return "", apikey.Key{}, apperror.InvalidFields(errs...)
	}
	if callerEnv == apikey.Test && env != apikey.Test {
		return "", apikey.Key{}, testKeyRefused("create a live key")
	}
	return s.keys.Create(ctx, id, name, env, permissions)
}

// ListKeys lists the keys of parent's sub-account id.
func (s *Service) ListKeys(ctx context.Context, parent, id string) ([]apikey.Key, error) {
	if _, err := s.project(ctx, parent, id); err != nil {
		return nil, err
	}
	return s.keys.List(ctx, id)
}

// RevokeKey revokes key keyID of parent's sub-account id, asked by a key of callerEnv: a test
// key revokes test keys only.
func (s *Service) RevokeKey(ctx context.Context, parent, id string, callerEnv apikey.Environment, keyID string) error {
	if _, err := s.project(ctx, parent, id); err != nil {
		return err
	}
	if callerEnv == apikey.Test {
		keys, err := s.keys.List(ctx, id)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.ID == keyID && k.Environment != apikey.Test {
				return testKeyRefused("revoke a live key")
			}
		}
	}
	_, err := s.keys.Revoke(ctx, id, keyID)
	return err
}

// testKeyRefused is the answer to a test key asking for what only a live key may do.
func testKeyRefused(what string) *apperror.Error {
	return apperror.New(apperror.Forbidden, "forbidden", fmt.Sprintf(
		"A test key cannot %s: test keys never change what live traffic sends or spends. Use a live key.", what))
}

// project returns the Project of sub-account id when parent owns it, from the cache.
func (s *Service) project(ctx context.Context, parent, id string) (*v1alpha1.Project, error) {
	return s.read(ctx, s.client, parent, id)
}

// read returns the Project of sub-account id through r when parent owns it.
func (s *Service) read(ctx context.Context, r client.Reader, parent, id string) (*v1alpha1.Project, error) {
	var projects v1alpha1.ProjectList
	if err := r.List(ctx, &projects, client.InNamespace(id)); err != nil {
		return nil, fmt.Errorf("read sub-account %s: %w", id, err)
	}
	p := v1alpha1.NamespaceProject(projects.Items)
	if p == nil || p.Spec.Parent != parent || p.Spec.SubAccount == nil {
		return nil, apperror.NotFoundf("No sub-account %s.", id)
	}
	return p, nil
}

// change applies mutate to the latest sub-account and writes it, retrying on conflicts.
func (s *Service) change(ctx context.Context, parent, id string, mutate func(*v1alpha1.Project)) (*v1alpha1.Project, error) {
	var out *v1alpha1.Project
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := s.read(ctx, s.live, parent, id)
		if err != nil {
			return err
		}
		p = p.DeepCopy()
		mutate(p)
		if err := kubewrite.Write(ctx, s.client, p); err != nil {
			return err
		}
		out = p
		return nil
	})
	if err != nil && apperror.As(err) == nil && !apierrors.IsConflict(err) {
		return nil, fmt.Errorf("update sub-account %s: %w", id, err)
	}
	return out, err
}

func view(p *v1alpha1.Project) SubAccount {
	sa := SubAccount{ID: p.Namespace, Name: p.Spec.DisplayName, CreatedAt: p.CreationTimestamp.UTC(), Active: !p.IsDeactivated()}
	if s := p.Spec.SubAccount; s != nil {
		sa.CreditLimit, sa.ExternalID = s.CreditLimit, s.ExternalID
		if s.Metadata != nil {
			sa.Metadata = s.Metadata.Raw
		}
	}
	return sa
}

func validName(name string, required bool) []apperror.FieldError {
	if (required && name == "") || len([]rune(name)) > 100 {
		return []apperror.FieldError{{Path: "name", Message: "is required, up to 100 characters"}}
	}
	return nil
}

func validCreditLimit(c *int64) []apperror.FieldError {
	if c != nil && *c < 0 {
		return []apperror.FieldError{{Path: "creditLimit", Message: "must be 0 or more (cents)"}}
	}
	return nil
}

func validExternalID(id string) []apperror.FieldError {
	if len(id) > 255 {
		return []apperror.FieldError{{Path: "externalId", Message: "must be up to 255 characters"}}
	}
	return nil
}

func validMetadata(m json.RawMessage) []apperror.FieldError {
	if len(m) > 0 && string(m) != "null" && m[0] != '{' {
		return []apperror.FieldError{{Path: "metadata", Message: "must be an object"}}
	}
	if len(m) > 16<<10 {
		return []apperror.FieldError{{Path: "metadata", Message: "must be up to 16 KiB"}}
	}
	return nil
}

// newID names a sub-account's namespace: "sa-" and 12 random lowercase letters and digits.
func newID() (string, error) { return randid.Name("sa-", 12) }
