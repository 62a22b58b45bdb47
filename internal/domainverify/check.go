package domainverify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
)

// Resolver reads DNS (dnsresolve.Resolver, pointed at --dns-server). A name without records of
// the type answers an error dnsresolve.IsNotFound tells; one DNS could not answer, an error
// dnsresolve.IsUnavailable tells.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
}

// ErrUnavailable: DNS could not be asked about some record (a timeout, SERVFAIL); the records
// it could not check keep their last state.
var ErrUnavailable = errors.New("the DNS check could not run")

// Window is how long a new domain, or one whose verification was asked for again, has for its
// records to appear before missing ones count as failures.
const Window = 72 * time.Hour

// maxFound bounds the values kept of what DNS holds instead of a record.
const maxFound = 4

// Check looks every record up and sets its State (and Found when DNS holds something else).
// Within the window a missing record is pending, after it failed. It returns ErrUnavailable
// (wrapped) when DNS could not answer for some record; those keep their previous State, marked
// temporary_failure when they had none.
func Check(ctx context.Context, r Resolver, records []v1alpha1.DNSRecord, withinWindow bool) ([]v1alpha1.DNSRecord, error) {
	out := make([]v1alpha1.DNSRecord, len(records))
	var unavailable []string
	for i, rec := range records {
		rec.Found = nil
		ok, found, err := lookup(ctx, r, rec)
		switch {
		case err != nil:
			unavailable = append(unavailable, rec.Name)
			if rec.State == "" || rec.State == v1alpha1.RecordPending {
				rec.State = v1alpha1.RecordTemporaryFailure
			}
		case ok:
			rec.State = v1alpha1.RecordVerified
		case withinWindow:
			rec.State, rec.Found = v1alpha1.RecordPending, found
		default:
			rec.State, rec.Found = v1alpha1.RecordFailed, found
		}
		out[i] = rec
	}
	if len(unavailable) > 0 {
		return out, fmt.Errorf("%w: no answer for %s", ErrUnavailable, strings.Join(unavailable, ", "))
	}
	return out, nil
}

// lookup tells whether rec is published; found is what the name holds of its type otherwise.
func lookup(ctx context.Context, r Resolver, rec v1alpha1.DNSRecord) (ok bool, found []string, err error) {
	switch rec.Type {
	case "TXT":
		values, err := r.LookupTXT(ctx, rec.Name)
		if dnsresolve.IsNotFound(err) {
			return false, nil, nil
		}
		if err != nil {
			return false, nil, err
		}
		for _, v := range values {
			if txtMatches(rec, v) {
				return true, nil, nil
			}
		}
		return false, firstFew(values), nil
	case "MX":
		mxs, err := r.LookupMX(ctx, rec.Name)
		if dnsresolve.IsNotFound(err) {
			return false, nil, nil
		}
		if err != nil {
			return false, nil, err
		}
		var hosts []string
		for _, mx := range mxs {
			if normalizeHost(mx.Host) == normalizeHost(rec.Value) {
				return true, nil, nil
			}
			hosts = append(hosts, fmt.Sprintf("%d %s", mx.Pref, normalizeHost(mx.Host)))
		}
		return false, firstFew(hosts), nil
	default:
		return false, nil, fmt.Errorf("record type %s is not checked", rec.Type)
	}
}

// txtMatches tells whether a published TXT value does what rec asks: the same DKIM public key
// (whatever the spacing and tag order); an SPF record with the mechanisms asked for among
// others (a domain keeps the senders it already authorises); any DMARC record (its policy is
// the owner's choice).
func txtMatches(rec v1alpha1.DNSRecord, published string) bool {
	switch rec.Purpose {
	case v1alpha1.PurposeDKIM, v1alpha1.PurposeDKIMEd25519:
		want, got := tags(rec.Value), tags(published)
		return got["p"] != "" && got["p"] == want["p"] && (got["v"] == "" || got["v"] == "DKIM1")
	case v1alpha1.PurposeSPF:
		terms := strings.Fields(strings.ToLower(published))
		if len(terms) == 0 || terms[0] != "v=spf1" {
			return false
		}
		for _, need := range strings.Fields(strings.ToLower(rec.Value))[1:] {
			if strings.HasSuffix(need, "all") {
				continue // the owner decides how strict the record ends
			}
			if !slices.Contains(terms, need) && !slices.Contains(terms, "+"+need) {
				return false
			}
		}
		return true
	case v1alpha1.PurposeDMARC:
		return strings.HasPrefix(strings.ReplaceAll(strings.ToLower(published), " ", ""), "v=dmarc1;") ||
			strings.EqualFold(strings.TrimSpace(published), "v=DMARC1")
	default:
		return strings.TrimSpace(published) == rec.Value
	}
}

// tags reads a DKIM tag list (RFC 6376 §3.2): tag=value pairs split by semicolons, with
// whitespace anywhere in values ignored.
func tags(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		out[strings.TrimSpace(k)] = strings.Join(strings.Fields(v), "")
	}
	return out
}

func firstFew(values []string) []string {
	if len(values) > maxFound {
		values = values[:maxFound]
	}
	out := make([]string, len(values))
	for i, v := range values {
		if len(v) > 512 {
			v = v[:512] + "…"
		}
		out[i] = v
	}
	return out
}

// countsForState tells whether a record decides the domain's state: the required ones, except
// the inbound MX, which decides only whether senders may receive (spec: domain.verified is
// DKIM, and SPF, DMARC and MAIL FROM with enhanced records).
func countsForState(rec v1alpha1.DNSRecord) bool {
	return rec.Required && rec.Purpose != v1alpha1.PurposeInbound
}

// State is where a domain stands given its checked records and its hold: verified when every
// record that counts is and the project holds the domain (the ownership record counts as
// published only then: within its grace period a domain holds without it); otherwise pending
// within the window of a domain never verified, and after it (or once verified, or when another
// project holds the domain, which waiting does not change) partially verified when some are,
// failed when none is.
func State(records []v1alpha1.DNSRecord, hold Hold, withinWindow, everVerified bool) v1alpha1.EmailDomainState {
	var total, verified int
	for _, rec := range records {
		if !countsForState(rec) {
			continue
		}
		total++
		ok := rec.State == v1alpha1.RecordVerified
		if rec.Purpose == v1alpha1.PurposeOwnership {
			ok = hold == Held
		}
		if ok {
			verified++
		}
	}
	switch {
	case total > 0 && verified == total:
		return v1alpha1.DomainVerified
	case withinWindow && !everVerified && hold != HeldElsewhere:
		return v1alpha1.DomainPending
	case verified > 0:
		return v1alpha1.DomainPartiallyVerified
	default:
		return v1alpha1.DomainFailed
	}
}

// WithinWindow tells whether the domain's verification window is still open at now.
func WithinWindow(st *v1alpha1.EmailDomainStatus, now time.Time) bool {
	return st.VerificationStartedAt == nil || now.Before(st.VerificationStartedAt.Add(Window))
}

// NextCheck is when to look again: a domain that is not verified within its window is looked
// at with a backoff (each wait a quarter of the time since the window opened, between a minute
// and an hour, so checks come quickly while a user is publishing records); a verified domain,
// or one past its window, every six hours, so a removed record is noticed and a fixed one
// found; a check DNS could not answer, after a minute.
func NextCheck(st *v1alpha1.EmailDomainStatus, now time.Time, unavailable bool) time.Time {
	const (
		minWait     = time.Minute
		maxWait     = time.Hour
		settledWait = 6 * time.Hour
	)
	if unavailable {
		return now.Add(minWait)
	}
	if st.State == v1alpha1.DomainVerified || !WithinWindow(st, now) {
		next := now.Add(settledWait)
		if inGrace(st, now) && st.OwnershipGraceUntil.Time.Before(next) {
			next = st.OwnershipGraceUntil.Time // the end of the grace period is checked when it comes
		}
		return next
	}
	elapsed := time.Duration(0)
	if st.VerificationStartedAt != nil {
		elapsed = now.Sub(st.VerificationStartedAt.Time)
	}
	return now.Add(min(max(elapsed/4, minWait), maxWait))
}

// conditionTypes names the condition of each purpose.
var conditionTypes = map[v1alpha1.RecordPurpose]string{
	v1alpha1.PurposeDKIM:        "DKIMVerified",
	v1alpha1.PurposeDKIMEd25519: ConditionDKIMEd25519,
	v1alpha1.PurposeOwnership:   ConditionOwnership,
	v1alpha1.PurposeSPF:         "SPFVerified",
	v1alpha1.PurposeDMARC:       "DMARCVerified",
	v1alpha1.PurposeMailFrom:    "MailFromVerified",
	v1alpha1.PurposeInbound:     "InboundVerified",
}

// ConditionOwnership is the condition of the ownership record and of the domain's hold.
const ConditionOwnership = "OwnershipVerified"

// ConditionDKIMEd25519 is the condition of the Ed25519 key's record, on a domain that asks for
// one (spec.dkimEd25519) and only there.
const ConditionDKIMEd25519 = "DKIMEd25519Verified"

// Conditions renders the records as one condition per purpose, and Ready for the domain, as
// they stand at now (the ownership condition tells a domain another project holds, and the
// grace period of one verified before ownership records).
func Conditions(st *v1alpha1.EmailDomainStatus, domain string, generation int64, now time.Time) {
	for _, purpose := range []v1alpha1.RecordPurpose{v1alpha1.PurposeDKIM, v1alpha1.PurposeDKIMEd25519, v1alpha1.PurposeOwnership,
		v1alpha1.PurposeSPF, v1alpha1.PurposeDMARC, v1alpha1.PurposeMailFrom, v1alpha1.PurposeInbound} {
		var rec *v1alpha1.DNSRecord
		for i := range st.Records {
			if st.Records[i].Purpose == purpose && (rec == nil || st.Records[i].Required) {
				rec = &st.Records[i]
			}
		}
		if rec == nil && purpose == v1alpha1.PurposeDKIMEd25519 {
			meta.RemoveStatusCondition(&st.Conditions, ConditionDKIMEd25519)
			continue
		}
		if rec == nil {
			setCondition(st, conditionTypes[purpose], metav1.ConditionFalse, "NotApplicable",
				"this installation asks for no such record", generation)
			continue
		}
		status, reason := metav1.ConditionFalse, "RecordNotFound"
		msg := fmt.Sprintf("publish %s %s %q", rec.Name, rec.Type, shorten(rec.Value))
		switch rec.State {
		case v1alpha1.RecordVerified:
			status, reason, msg = metav1.ConditionTrue, "RecordPublished", fmt.Sprintf("%s %s is published", rec.Name, rec.Type)
		case v1alpha1.RecordTemporaryFailure:
			status, reason, msg = metav1.ConditionUnknown, "DNSUnavailable", fmt.Sprintf("DNS did not answer for %s", rec.Name)
		case v1alpha1.RecordPending:
			reason = "RecordPending"
		}
		if len(rec.Found) > 0 && rec.State != v1alpha1.RecordVerified {
			reason = "RecordMismatch"
			msg += fmt.Sprintf("; DNS holds %q", shorten(rec.Found[0]))
		}
		if purpose == v1alpha1.PurposeOwnership {
			status, reason, msg = ownershipCondition(st, domain, now, status, reason, msg)
		}
		setCondition(st, conditionTypes[purpose], status, reason, msg, generation)
	}
	switch {
	case st.Verifiable != nil && !*st.Verifiable:
		setCondition(st, v1alpha1.ConditionReady, metav1.ConditionFalse, "NotVerifiable", st.SetupError, generation)
	case st.State == v1alpha1.DomainVerified && st.OwnershipGraceUntil != nil &&
		recordState(st.Records, v1alpha1.PurposeOwnership) != v1alpha1.RecordVerified:
		setCondition(st, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady,
			"verified within its grace period: publish the ownership record before "+st.OwnershipGraceUntil.UTC().Format(time.RFC3339), generation)
	case st.State == v1alpha1.DomainVerified:
		setCondition(st, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady, "every required record is published", generation)
	case HoldOf(st, now) == HeldElsewhere:
		reason := map[v1alpha1.EmailDomainState]string{v1alpha1.DomainPartiallyVerified: "PartiallyVerified"}[st.State]
		if reason == "" {
			reason = "VerificationFailed"
		}
		setCondition(st, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, heldElsewhereMessage(domain), generation)
	default:
		reason := map[v1alpha1.EmailDomainState]string{v1alpha1.DomainPending: "VerificationPending",
			v1alpha1.DomainPartiallyVerified: "PartiallyVerified", v1alpha1.DomainFailed: "VerificationFailed"}[st.State]
		if reason == "" {
			reason = "VerificationPending"
		}
		var missing []string
		for _, rec := range st.Records {
			if countsForState(rec) && rec.State != v1alpha1.RecordVerified {
				missing = append(missing, string(rec.Purpose))
			}
		}
		setCondition(st, v1alpha1.ConditionReady, metav1.ConditionFalse, reason,
			"not published yet: "+strings.Join(missing, ", "), generation)
	}
}

// ownershipCondition is the ownership condition given where the domain holds: held elsewhere
// whatever the record, within the grace period while the record is not published yet.
func ownershipCondition(st *v1alpha1.EmailDomainStatus, domain string, now time.Time, status metav1.ConditionStatus, reason, msg string) (metav1.ConditionStatus, string, string) {
	switch HoldOf(st, now) {
	case HeldElsewhere:
		return metav1.ConditionFalse, ReasonHeldElsewhere, heldElsewhereMessage(domain)
	case Held:
		if status != metav1.ConditionTrue && inGrace(st, now) {
			return metav1.ConditionFalse, ReasonOwnershipGrace, fmt.Sprintf(
				"%s; required from %s: %s was verified before ownership records were asked for, and verifies and receives without one until then",
				msg, st.OwnershipGraceUntil.UTC().Format(time.RFC3339), domain)
		}
	}
	return status, reason, msg
}

// heldElsewhereMessage says why a domain another project holds does not verify, naming no project.
func heldElsewhereMessage(domain string) string {
	return fmt.Sprintf("another project of this installation holds %s: a domain verifies and receives mail for one project "+
		"at a time; it can become this project's once the other project deletes it or its ownership record is removed, "+
		"at this domain's next check", domain)
}

func setCondition(st *v1alpha1.EmailDomainStatus, typ string, status metav1.ConditionStatus, reason, msg string, generation int64) {
	setStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: generation})
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
