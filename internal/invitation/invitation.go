// Package invitation keeps Invitations: the REST API's create, read and cancel, the token of each
// link, and the state machine the connection page, the controller and operators move them
// through, with one invitation.status_changed per stored change (docs/invitations.md).
package invitation

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Service keeps the projects' invitations.
type Service struct {
	client     client.Client // the informer cache for reads; writes go to the API server
	live       client.Reader // the API server, read before each change
	pool       *pgxpool.Pool
	deliveries *delivery.Service
	key        []byte
	pageURL    string
	// fieldManager names this process's status writes.
	fieldManager string
	now          func() time.Time
}

// NewService returns a Service. key derives the links' tokens (every replica needs the same
// one); pageURL is where the connection page is served (--dashboard-url).
func NewService(c client.Client, live client.Reader, pool *pgxpool.Pool, deliveries *delivery.Service, key []byte, pageURL string) *Service {
	return &Service{client: c, live: live, pool: pool, deliveries: deliveries, key: key,
		pageURL: strings.TrimSuffix(pageURL, "/"), fieldManager: kubewrite.FieldManager, now: time.Now}
}

// WithFieldManager names the status writes of s (the manager's controller writes as itself).
func (s *Service) WithFieldManager(name string) *Service {
	s.fieldManager = name
	return s
}

// KeyName and KeySize name the shared secret the tokens derive from (postgres.SharedSecret).
const (
	KeyName = "invitation_token_key"
	KeySize = 32
)

// PagePath is where the connection page of a token is served, under the page URL.
const PagePath = "/invitations/"

// Token is the secret of the invitation's link: an HMAC of its identity, so that it is never
// stored (the status keeps its hash) and the API can still show the link it gave.
func (s *Service) Token(inv *v1alpha1.Invitation) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "invitation\x00%s\x00%s\x00%s", inv.Namespace, inv.Name, inv.UID)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// URL is the link to share with the client.
func (s *Service) URL(inv *v1alpha1.Invitation) string {
	return s.pageURL + PagePath + s.Token(inv)
}

// Hash is what an invitation's status keeps of its token.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ByToken returns the invitation of a link's token; a token no invitation has is 404.
func (s *Service) ByToken(ctx context.Context, token string) (*v1alpha1.Invitation, error) {
	if token == "" || len(token) > 128 {
		return nil, notFound()
	}
	var list v1alpha1.InvitationList
	if err := s.client.List(ctx, &list, client.MatchingFields{index.InvitationToken: Hash(token)}); err != nil {
		return nil, fmt.Errorf("find the invitation of a link: %w", err)
	}
	for i := range list.Items {
		inv := &list.Items[i]
		if hmac.Equal([]byte(s.Token(inv)), []byte(token)) {
			return inv, nil
		}
	}
	return nil, notFound()
}

func notFound() error {
	return apperror.New(apperror.NotFound, "not_found", "There is no invitation at this link.")
}

// Create makes an invitation, pending, with its link.
func (s *Service) Create(ctx context.Context, project string, in Input) (*v1alpha1.Invitation, error) {
	spec, errs := specOf(in)
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(errs...)
	}
	suffix, err := randid.String(randid.Lower, 20)
	if err != nil {
		return nil, err
	}
	inv := &v1alpha1.Invitation{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "inv-" + suffix}, Spec: spec}
	if err := kubewrite.Write(ctx, s.client, inv); err != nil {
		return nil, err
	}
	return s.Initialize(ctx, inv)
}

// Initialize gives a new invitation (the API's, or one applied with kubectl) its stored state:
// pending, the hash of its token and its expiry. An invitation that has them is returned as is.
func (s *Service) Initialize(ctx context.Context, inv *v1alpha1.Invitation) (*v1alpha1.Invitation, error) {
	if inv.Status.TokenHash != "" {
		return inv, nil
	}
	return s.change(ctx, inv.Namespace, inv.Name, func(inv *v1alpha1.Invitation, now time.Time) error {
		if inv.Status.TokenHash != "" {
			return errUnchanged
		}
		inv.Status.State = v1alpha1.InvitationPending
		inv.Status.TokenHash = Hash(s.Token(inv))
		inv.Status.ExpiresAt = expiry(inv.CreationTimestamp.Time, inv.Spec.ExpiresInDays)
		return nil
	})
}

// expiry is from plus days (7 when the resource has none: an old object, or defaulting off).
func expiry(from time.Time, days int32) *metav1.Time {
	if days < 1 {
		days = 7
	}
	t := metav1.NewTime(from.Add(time.Duration(days) * 24 * time.Hour).UTC().Truncate(time.Second))
	return &t
}

// Get returns invitation id of project, from the informer cache.
func (s *Service) Get(ctx context.Context, project, id string) (*v1alpha1.Invitation, error) {
	return read(ctx, s.client, project, id)
}

// Fresh reads the invitation from the API server: the connection page shows, and acts on, the
// state its own last step wrote, which the informer cache may not hold yet.
func (s *Service) Fresh(ctx context.Context, project, id string) (*v1alpha1.Invitation, error) {
	return read(ctx, s.live, project, id)
}

func read(ctx context.Context, r client.Reader, project, id string) (*v1alpha1.Invitation, error) {
	var inv v1alpha1.Invitation
	err := r.Get(ctx, client.ObjectKey{Namespace: project, Name: id}, &inv)
	if apierrors.IsNotFound(err) {
		return nil, apperror.NotFoundf("Invitation %s does not exist.", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read invitation %s: %w", id, err)
	}
	return &inv, nil
}

// List returns the project's invitations in the state asked for (all when empty; expired is
// the state they read as), oldest first, then by id.
func (s *Service) List(ctx context.Context, project, state string) ([]v1alpha1.Invitation, error) {
	if state != "" && !slices.Contains(States, v1alpha1.InvitationState(state)) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "status",
			Message: "must be one of pending, in_progress, completed, expired, cancelled, failed"})
	}
	var list v1alpha1.InvitationList
	if err := s.client.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list invitations of %s: %w", project, err)
	}
	now := s.now()
	out := make([]v1alpha1.Invitation, 0, len(list.Items))
	for _, inv := range kubewrite.Live(list.Items) {
		if state == "" || string(inv.StateAt(now)) == state {
			out = append(out, inv)
		}
	}
	return out, nil
}

// States are the states an invitation reads as.
var States = []v1alpha1.InvitationState{v1alpha1.InvitationPending, v1alpha1.InvitationInProgress, v1alpha1.InvitationCompleted,
	v1alpha1.InvitationExpired, v1alpha1.InvitationCancelled, v1alpha1.InvitationFailed}

// Cancel cancels an active invitation (pending, in progress or failed, not expired): its link
// stops working. Any other is 400 invalid_request naming its state.
func (s *Service) Cancel(ctx context.Context, project, id string) (*v1alpha1.Invitation, error) {
	if _, err := s.Get(ctx, project, id); err != nil {
		return nil, err
	}
	return s.change(ctx, project, id, func(inv *v1alpha1.Invitation, now time.Time) error {
		if !inv.ActiveAt(now) {
			e := apperror.New(apperror.Invalid, "invalid_request",
				fmt.Sprintf("Invitation %s is %s: only a pending, in-progress or failed invitation can be cancelled.", id, inv.StateAt(now)))
			e.Details = map[string]any{"status": string(inv.StateAt(now))}
			return e
		}
		setState(inv, v1alpha1.InvitationCancelled, now)
		inv.Status.CancelledAt = stamp(now)
		return nil
	})
}
