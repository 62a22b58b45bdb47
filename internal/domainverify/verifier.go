package domainverify

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Keys of a DKIM Secret Switchboard generates.
const (
	SecretKeyPrivateKey = "dkim.key"
	SecretKeySelector   = "selector"
)

// SecretName names the DKIM Secret generated for a domain.
func SecretName(d *v1alpha1.EmailDomain) string { return d.Name + "-dkim" }

// Ed25519SecretName names the Secret of the Ed25519 key generated for a domain that asks for
// one (spec.dkimEd25519); it has the same keys as the RSA key's.
func Ed25519SecretName(d *v1alpha1.EmailDomain) string { return d.Name + "-dkim-ed25519" }

// generatedKey is a kind of key Switchboard generates for a domain: its Secret's name, how it
// is made, and the prefix of its selectors.
type generatedKey struct {
	secret   func(*v1alpha1.EmailDomain) string
	generate func() ([]byte, error)
	prefix   string
}

var (
	rsaKey     = generatedKey{secret: SecretName, generate: GenerateKey, prefix: "sb"}
	ed25519Key = generatedKey{secret: Ed25519SecretName, generate: GenerateEd25519Key, prefix: "ed"}
)

// VerifyRequestedAnnotation asks the controller to open a new verification window and check
// at once (kubectl annotate emaildomain <name> messaging.switchboard.io/verify-requested-at=<now>).
const VerifyRequestedAnnotation = "messaging.switchboard.io/verify-requested-at"

// Verifier refreshes an EmailDomain's status: its key, its records, what DNS holds, its state,
// and the announcement of a new state. The controller and the API share it.
type Verifier struct {
	// Client writes Secrets and status; Live reads what another writer may have made a moment ago.
	Client client.Client
	Live   client.Reader
	// FieldManager names the writer.
	FieldManager string
	Resolver     Resolver
	Config       Config
	Pool         *pgxpool.Pool
	Deliveries   *delivery.Service
	Now          func() time.Time

	keyMu sync.Mutex
	key   []byte // the installation's key of ownership tokens, once read
}

// Options say what a refresh does besides bringing the records up to date.
type Options struct {
	// Check asks DNS.
	Check bool
	// Restart opens a new verification window (a verify request).
	Restart bool
	// RequestedAt is the verify annotation taken in, copied to status.
	RequestedAt string
}

// Refresh brings d's status up to date and writes it (conditional on d's resource version: a
// conflict is returned for the caller to read again and retry), then announces its state. It
// returns ErrUnavailable (wrapped) when DNS could not answer; the status is written all the
// same, the records DNS did not answer for keeping their last state.
func (v *Verifier) Refresh(ctx context.Context, d *v1alpha1.EmailDomain, o Options) error {
	before := d.DeepCopy()
	now := v.now()
	st := &d.Status
	st.ObservedGeneration = d.Generation
	if o.RequestedAt != "" {
		st.VerifyRequestedAt = o.RequestedAt
	}
	if o.Restart || st.VerificationStartedAt == nil {
		start := metav1.NewTime(now)
		if !o.Restart && !d.CreationTimestamp.IsZero() {
			start = d.CreationTimestamp
		}
		st.VerificationStartedAt = &start
	}

	var checkErr error
	records, setupErr := v.records(ctx, d)
	if setupErr != nil {
		var se *SetupError
		if !errors.As(setupErr, &se) {
			return setupErr
		}
		st.Verifiable, st.SetupError, st.Records = ptr(false), se.Reason, nil
		st.State, st.Verified, st.NextCheckAt = v1alpha1.DomainFailed, false, nil
		// A domain that cannot be checked proves nothing: whatever it held goes.
		st.Held = false
		if err := v.release(ctx, d); err != nil {
			return err
		}
	} else {
		st.Verifiable, st.SetupError = ptr(true), ""
		st.Records = carryStates(records, st.Records)
		startGrace(&before.Status, st, now)
		if o.Check {
			within := WithinWindow(st, now)
			// Once verified, a missing record is a failure at once, window or not.
			st.Records, checkErr = Check(ctx, v.Resolver, st.Records, within && !st.EverVerified)
			if checkErr != nil && !errors.Is(checkErr, ErrUnavailable) {
				return checkErr
			}
			st.LastCheckedAt = ptr(metav1.NewTime(now))
			// What DNS did not answer for is no evidence that a record went: without an answer a
			// domain keeps its hold (and takes it on what earlier checks found).
			if checkErr == nil || proven(st, now) {
				if err := v.hold(ctx, d, now); err != nil {
					return err
				}
			}
			previous := st.State
			st.State = State(st.Records, HoldOf(st, now), within, st.EverVerified)
			if checkErr != nil && previous != "" {
				// What DNS did not answer for is not evidence of anything: keep the state.
				st.State = previous
			}
			st.Verified = st.State == v1alpha1.DomainVerified
			if st.Verified {
				st.EverVerified = true
				if previous != v1alpha1.DomainVerified || st.VerifiedAt == nil {
					st.VerifiedAt = ptr(metav1.NewTime(now))
				}
			}
			st.NextCheckAt = ptr(metav1.NewTime(NextCheck(st, now, checkErr != nil)))
		} else if st.State == "" {
			st.State = v1alpha1.DomainPending
		}
	}
	Conditions(st, d.Spec.Domain, d.Generation, now)
	if !equality.Semantic.DeepEqual(before.Status, d.Status) {
		if err := v.Client.Status().Patch(ctx, d, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
			client.FieldOwner(v.fieldManager())); err != nil {
			return err
		}
	}
	if err := v.Announce(ctx, d); err != nil {
		return err
	}
	return checkErr
}

// carryStates keeps what the last check found of records that did not change.
func carryStates(records, previous []v1alpha1.DNSRecord) []v1alpha1.DNSRecord {
	for i := range records {
		for _, p := range previous {
			if p.Purpose == records[i].Purpose && p.Name == records[i].Name && p.Type == records[i].Type && p.Value == records[i].Value {
				records[i].State, records[i].Found = p.State, p.Found
				break
			}
		}
	}
	return records
}

// records makes the domain's records from its key; a *SetupError when they cannot be made.
func (v *Verifier) records(ctx context.Context, d *v1alpha1.EmailDomain) ([]v1alpha1.DNSRecord, error) {
	if other, err := v.Duplicate(ctx, d); err != nil {
		return nil, err
	} else if other != nil {
		return nil, &SetupError{Reason: fmt.Sprintf("EmailDomain %s of this project already has %s", other.Name, d.Spec.Domain)}
	}
	key, selector, err := v.Key(ctx, d)
	if err != nil {
		return nil, err
	}
	d.Status.DKIMSelector = selector
	if d.Spec.DKIM != nil {
		d.Status.DKIMSecret = &d.Spec.DKIM.SecretRef
	} else {
		d.Status.DKIMSecret = &v1alpha1.SecretKeyRef{Name: SecretName(d), Key: SecretKeyPrivateKey}
	}
	ownershipKey, err := v.ownershipKey(ctx)
	if err != nil {
		return nil, err
	}
	records, err := Records(d.Spec, selector, key, OwnershipValue(ownershipKey, d.Namespace, d.Spec.Domain), v.Config)
	if err != nil || !d.Spec.DKIMEd25519 {
		d.Status.DKIMEd25519Selector, d.Status.DKIMEd25519Secret = "", nil
		return records, err
	}
	s, err := v.ensureSecret(ctx, d, ed25519Key)
	if err != nil {
		return nil, err
	}
	edKey, err := ParseKey(s.Data[SecretKeyPrivateKey])
	if err != nil {
		return nil, err
	}
	edSelector := string(s.Data[SecretKeySelector])
	rec, err := Ed25519Record(d.Spec.Domain, edSelector, edKey)
	if err != nil {
		return nil, err
	}
	d.Status.DKIMEd25519Selector = edSelector
	d.Status.DKIMEd25519Secret = &v1alpha1.SecretKeyRef{Name: s.Name, Key: SecretKeyPrivateKey}
	// Beside the RSA key's record, so the two DKIM records read together.
	return slices.Insert(records, 1, rec), nil
}

// Duplicate returns the project's EmailDomain for the same domain that came first (the oldest,
// then first by name), when it is not d: a project has one EmailDomain per domain.
func (v *Verifier) Duplicate(ctx context.Context, d *v1alpha1.EmailDomain) (*v1alpha1.EmailDomain, error) {
	var list v1alpha1.EmailDomainList
	if err := v.Client.List(ctx, &list, client.InNamespace(d.Namespace)); err != nil {
		return nil, fmt.Errorf("list email domains of %s: %w", d.Namespace, err)
	}
	first := v1alpha1.FirstDomainNamed(list.Items, d.Spec.Domain)
	if first == nil || first.UID == d.UID || first.Name == d.Name {
		return nil, nil
	}
	if !d.CreationTimestamp.IsZero() && d.CreationTimestamp.Before(&first.CreationTimestamp) {
		return nil, nil
	}
	return first, nil
}

// Key returns the domain's signing key and selector: the key the spec names, else the one
// Switchboard generated, generating it when there is none yet (the first writer wins; a
// concurrent one reads it). A key that cannot be used is a *SetupError.
func (v *Verifier) Key(ctx context.Context, d *v1alpha1.EmailDomain) (crypto.Signer, string, error) {
	if d.Spec.DKIM != nil {
		ref := d.Spec.DKIM.SecretRef
		var s corev1.Secret
		err := v.Live.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: ref.Name}, &s)
		if apierrors.IsNotFound(err) || (err == nil && len(s.Data[ref.Key]) == 0) {
			return nil, "", &SetupError{Reason: fmt.Sprintf("spec.dkim.secretRef: Secret %s has no key %s", ref.Name, ref.Key)}
		}
		if err != nil {
			return nil, "", fmt.Errorf("read the DKIM Secret of %s: %w", d.Name, err)
		}
		key, err := ParseKey(s.Data[ref.Key])
		return key, d.Spec.DKIM.Selector, err
	}
	s, err := v.ensureSecret(ctx, d, rsaKey)
	if err != nil {
		return nil, "", err
	}
	key, err := ParseKey(s.Data[SecretKeyPrivateKey])
	return key, string(s.Data[SecretKeySelector]), err
}

// ensureSecret reads the generated DKIM Secret, creating it when absent. A Secret by that name
// that the domain does not own is a setup error: Switchboard does not sign with a key it did
// not make unless the spec names it.
func (v *Verifier) ensureSecret(ctx context.Context, d *v1alpha1.EmailDomain, kind generatedKey) (*corev1.Secret, error) {
	return v.ensureSecretTries(ctx, d, kind, 3)
}

func (v *Verifier) ensureSecretTries(ctx context.Context, d *v1alpha1.EmailDomain, kind generatedKey, tries int) (*corev1.Secret, error) {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: d.Namespace, Name: kind.secret(d)}
	err := v.Live.Get(ctx, key, &s)
	if apierrors.IsNotFound(err) {
		pemKey, genErr := kind.generate()
		if genErr != nil {
			return nil, &SetupError{Reason: "the DKIM key could not be generated: " + genErr.Error()}
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: key.Name,
				Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{SecretKeyPrivateKey: pemKey, SecretKeySelector: []byte(newSelector(kind.prefix, v.now()))},
		}
		if err := controllerutil.SetControllerReference(d, &s, v.Client.Scheme()); err != nil {
			return nil, err
		}
		err = v.Client.Create(ctx, &s, client.FieldOwner(v.fieldManager()))
		if apierrors.IsAlreadyExists(err) {
			err = v.Live.Get(ctx, key, &s)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the DKIM Secret of %s: %w", d.Name, err)
	}
	if stale := metav1.GetControllerOf(&s); tries > 1 && stale != nil && stale.Kind == "EmailDomain" && stale.Name == d.Name && stale.UID != d.UID {
		// The key of a deleted EmailDomain of the same name (names are unique, so it is gone),
		// which garbage collection has not removed yet, or a check of the deleted one made
		// again: it is no key of this domain's. It goes, and this domain gets its own.
		uid := s.UID
		if err := v.Client.Delete(ctx, &s, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("delete the stale DKIM Secret of %s: %w", d.Name, err)
		}
		return v.ensureSecretTries(ctx, d, kind, tries-1)
	}
	if !metav1.IsControlledBy(&s, d) {
		return nil, &SetupError{Reason: fmt.Sprintf("Secret %s exists and belongs to something else; delete it or name a key in spec.dkim", s.Name)}
	}
	if len(s.Data[SecretKeySelector]) == 0 {
		return nil, &SetupError{Reason: fmt.Sprintf("Secret %s has no selector", s.Name)}
	}
	return &s, nil
}

// newSelector names a generated key by its kind and the day it was made (sb20261124 for RSA,
// ed20261124 for Ed25519), so a rotated key gets a selector of its own and both can be
// published while mail signed with the old one is in flight.
func newSelector(prefix string, now time.Time) string { return prefix + now.UTC().Format("20060102") }

// Announce writes the domain.verified or domain.failed event of d's state when that state was
// not the last one announced: a pending domain announces nothing, partially verified counts as
// failed, and the record in Postgres makes each transition announced once whoever checks.
func (v *Verifier) Announce(ctx context.Context, d *v1alpha1.EmailDomain) error {
	if v.Pool == nil {
		return nil
	}
	var state string
	var event v1alpha1.WebhookEvent
	switch d.Status.State {
	case v1alpha1.DomainVerified:
		state, event = "verified", v1alpha1.EventDomainVerified
	case v1alpha1.DomainFailed, v1alpha1.DomainPartiallyVerified:
		state, event = "failed", v1alpha1.EventDomainFailed
	default:
		return nil
	}
	return pgx.BeginFunc(ctx, v.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		previous, err := q.AnnouncedDomainState(ctx, db.AnnouncedDomainStateParams{Project: d.Namespace, DomainUid: string(d.UID)})
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read announced state of %s: %w", d.Name, err)
		}
		changed, err := q.AnnounceDomainState(ctx, db.AnnounceDomainStateParams{Project: d.Namespace, DomainUid: string(d.UID),
			State: state, ChangedAt: v.now().UTC()})
		if err != nil {
			return fmt.Errorf("record announced state of %s: %w", d.Name, err)
		}
		if !changed {
			return nil
		}
		data := EventData(d, previous)
		_, err = v.Deliveries.Enqueue(ctx, tx, delivery.Event{Project: d.Namespace, Name: string(event), Data: data,
			AllSenders: true})
		return err
	})
}

// Forget drops the announced state of a deleted domain, and lets go of the domain when it held
// it, so that another project proving the domain can take it at its next check.
func (v *Verifier) Forget(ctx context.Context, d *v1alpha1.EmailDomain) error {
	if v.Pool == nil {
		return nil
	}
	if err := v.release(ctx, d); err != nil {
		return err
	}
	return db.Planned(v.Pool).ForgetDomainAnnouncement(ctx, db.ForgetDomainAnnouncementParams{Project: d.Namespace, DomainUid: string(d.UID)})
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) fieldManager() string {
	if v.FieldManager != "" {
		return v.FieldManager
	}
	return "switchboard-manager"
}

func setStatusCondition(conditions *[]metav1.Condition, c metav1.Condition) {
	meta.SetStatusCondition(conditions, c)
}

func ptr[T any](v T) *T { return &v }
