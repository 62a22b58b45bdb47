package domainverify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Who may use a domain. Every project of an installation shares its inbound MX, so the MX proves
// nothing of who owns a domain: each project gets an ownership record of its own, a TXT record
// whose value only that project is asked for, and a domain verifies and receives for one project
// at a time, the first whose record is found (the holder, a row in Postgres).
//
// Sending is proved already by the DKIM record: its key is the project's own (generated in the
// project, or named in its spec.dkim), so a DKIM record published for one project never verifies
// another's. That stays the gate of a send; the ownership record and holding the domain gate new
// sender addresses (which need a verified domain) and receiving.

// OwnershipLabel is the label under the domain of its ownership record:
// _switchboard.<domain> TXT "switchboard-verification=<token>".
const OwnershipLabel = "_switchboard"

// ownershipPrefix starts an ownership record's value.
const ownershipPrefix = "switchboard-verification="

// OwnershipGrace is how long a domain verified before ownership records were asked for keeps
// verifying and receiving without one, its DKIM record standing for it meanwhile: long enough to
// publish a record after an upgrade, short enough that the proof of a project's own follows.
const OwnershipGrace = 30 * 24 * time.Hour

// ownershipKeyName names the installation secret ownership tokens are derived from.
const ownershipKeyName = "email_domain_ownership_key"

// Condition reasons of OwnershipVerified beyond the records' own.
const (
	// ReasonHeldElsewhere: the record is published here, and another project held the domain first.
	ReasonHeldElsewhere = "HeldByAnotherProject"
	// ReasonOwnershipGrace: a domain verified before ownership records, within its grace period.
	ReasonOwnershipGrace = "GracePeriod"
)

// OwnershipValue is the value of project's ownership record for domain: a token derived from
// the installation's key, the project and the domain, so it differs for every project (and
// installation), needs nothing stored per domain, and stays the same when the EmailDomain is
// deleted and made again. Anyone may know it: publishing it takes control of the domain's DNS.
func OwnershipValue(key []byte, project, domain string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(project + "\x00" + domain))
	return ownershipPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(mac.Sum(nil)[:20]))
}

// Hold is where a project stands on its domain against the installation's other projects.
type Hold int

const (
	// Unproven: neither the ownership record is published nor a grace period runs.
	Unproven Hold = iota
	// Held: the project holds the domain.
	Held
	// HeldElsewhere: the project proved the domain too, and another project held it first.
	HeldElsewhere
)

// HoldOf tells where the domain of st stands at now, from its last check.
func HoldOf(st *v1alpha1.EmailDomainStatus, now time.Time) Hold {
	switch {
	case st.Held:
		return Held
	case proven(st, now):
		return HeldElsewhere
	default:
		return Unproven
	}
}

// proven tells whether the last check proved that the project controls the domain: its
// ownership record is published, or, within the grace period of a domain verified before
// ownership records, its DKIM record (the proof it was verified with).
func proven(st *v1alpha1.EmailDomainStatus, now time.Time) bool {
	return recordState(st.Records, v1alpha1.PurposeOwnership) == v1alpha1.RecordVerified ||
		(inGrace(st, now) && recordState(st.Records, v1alpha1.PurposeDKIM) == v1alpha1.RecordVerified)
}

// inGrace tells whether the grace period of a domain verified before ownership records runs.
func inGrace(st *v1alpha1.EmailDomainStatus, now time.Time) bool {
	return st.OwnershipGraceUntil != nil && now.Before(st.OwnershipGraceUntil.Time)
}

func recordState(records []v1alpha1.DNSRecord, purpose v1alpha1.RecordPurpose) v1alpha1.RecordState {
	for _, rec := range records {
		if rec.Purpose == purpose && rec.Required {
			return rec.State
		}
	}
	return ""
}

func hasPurpose(records []v1alpha1.DNSRecord, purpose v1alpha1.RecordPurpose) bool {
	for _, rec := range records {
		if rec.Purpose == purpose {
			return true
		}
	}
	return false
}

// OwnershipUnchecked tells whether st lists records made before ownership records were asked
// for: the domain is due a check, which starts its grace period and takes its hold.
func OwnershipUnchecked(st *v1alpha1.EmailDomainStatus) bool {
	return len(st.Records) > 0 && !hasPurpose(st.Records, v1alpha1.PurposeOwnership)
}

// startGrace gives a domain that was verified before ownership records were asked for (its
// previous records have none) its grace period, so an upgrade does not stop it at once.
func startGrace(previous *v1alpha1.EmailDomainStatus, st *v1alpha1.EmailDomainStatus, now time.Time) {
	if previous.State == v1alpha1.DomainVerified && len(previous.Records) > 0 &&
		!hasPurpose(previous.Records, v1alpha1.PurposeOwnership) && st.OwnershipGraceUntil == nil {
		st.OwnershipGraceUntil = ptr(metav1.NewTime(now.Add(OwnershipGrace)))
	}
}

// ownershipKey returns the installation's key of ownership tokens, read once.
func (v *Verifier) ownershipKey(ctx context.Context) ([]byte, error) {
	v.keyMu.Lock()
	defer v.keyMu.Unlock()
	if v.key != nil {
		return v.key, nil
	}
	if v.Pool == nil {
		return nil, errors.New("read the ownership key: no database")
	}
	key, err := postgres.SharedSecret(ctx, v.Pool, ownershipKeyName, 32)
	if err != nil {
		return nil, err
	}
	v.key = key
	return key, nil
}

// hold settles who holds d's domain after a check DNS answered: a project that proved it takes
// it unless another project holds it, and one that no longer proves it lets go. It sets
// st.Held, and ends the grace period once the ownership record is published.
func (v *Verifier) hold(ctx context.Context, d *v1alpha1.EmailDomain, now time.Time) error {
	st := &d.Status
	if recordState(st.Records, v1alpha1.PurposeOwnership) == v1alpha1.RecordVerified {
		st.OwnershipGraceUntil = nil
	}
	if !proven(st, now) {
		st.Held = false
		return v.release(ctx, d)
	}
	held, err := v.claim(ctx, d, now)
	if err != nil {
		return err
	}
	st.Held = held
	return nil
}

// claim takes d's domain for d unless another project's EmailDomain holds it. A holder whose
// EmailDomain is gone (deleted with kubectl, or with its namespace) is taken over.
func (v *Verifier) claim(ctx context.Context, d *v1alpha1.EmailDomain, now time.Time) (bool, error) {
	if v.Pool == nil || d.UID == "" {
		return false, errors.New("hold email domain: no database, or a domain not written yet")
	}
	q := db.Planned(v.Pool)
	// Twice at most: a stale holder taken over by a third project meanwhile is looked at again.
	for range 2 {
		h, err := q.HoldEmailDomain(ctx, db.HoldEmailDomainParams{Domain: d.Spec.Domain, Project: d.Namespace,
			DomainName: d.Name, DomainUid: string(d.UID), HeldSince: now.UTC()})
		if err != nil {
			return false, fmt.Errorf("hold email domain %s: %w", d.Spec.Domain, err)
		}
		if h.DomainUid == string(d.UID) {
			return true, nil
		}
		gone, err := v.holderGone(ctx, h.Project, h.DomainName, h.DomainUid)
		if err != nil || !gone {
			return false, err
		}
		n, err := q.TakeOverEmailDomain(ctx, db.TakeOverEmailDomainParams{Domain: d.Spec.Domain, Project: d.Namespace,
			DomainName: d.Name, DomainUid: string(d.UID), HeldSince: now.UTC(), StaleUid: h.DomainUid})
		if err != nil {
			return false, fmt.Errorf("take over email domain %s: %w", d.Spec.Domain, err)
		}
		if n == 1 {
			return true, nil
		}
	}
	return false, nil
}

// holderGone tells whether the EmailDomain a holder row names no longer exists. Whether it
// still proves the domain is its own checks' business: it lets go when they find its record gone.
func (v *Verifier) holderGone(ctx context.Context, project, name, uid string) (bool, error) {
	var h v1alpha1.EmailDomain
	err := v.Live.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, &h)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the holder of an email domain: %w", err)
	}
	return string(h.UID) != uid || !h.DeletionTimestamp.IsZero(), nil
}

// release lets go of d's domain when d holds it.
func (v *Verifier) release(ctx context.Context, d *v1alpha1.EmailDomain) error {
	if v.Pool == nil || d.UID == "" {
		return nil
	}
	if err := db.Planned(v.Pool).ReleaseEmailDomain(ctx, db.ReleaseEmailDomainParams{Domain: d.Spec.Domain, DomainUid: string(d.UID)}); err != nil {
		return fmt.Errorf("release email domain %s: %w", d.Spec.Domain, err)
	}
	return nil
}
