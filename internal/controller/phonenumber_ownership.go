package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
)

// numberClaim is one PhoneNumber of a number, as the choice of its holder sees it.
type numberClaim struct {
	key     string // namespace/name
	created time.Time
	// proved: an assignment, or a claim its project's own account lists.
	proved bool
	// holding: it held the number when it was last looked at.
	holding bool
}

// numberHolder picks the claim that holds a number, one owner at a time: of the proved claims, one
// that holds it already keeps it (so a claim proved later, however old, takes nothing away),
// else the oldest (then first by namespace and name). It returns -1 when no claim is proved.
func numberHolder(claims []numberClaim) int {
	best := -1
	for i, c := range claims {
		if !c.proved {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := claims[best]
		switch {
		case c.holding != b.holding:
			if c.holding {
				best = i
			}
		case c.created.Before(b.created), c.created.Equal(b.created) && c.key < b.key:
			best = i
		}
	}
	return best
}

// holder is the PhoneNumber that holds pn's number, pn itself included, given pn's proof; nil
// when no claim is proved. The other PhoneNumbers count as their last status says, even while a
// change of theirs waits for its reconcile: a holder edited a moment ago keeps the number rather
// than lose it to another claim for that moment.
func (r *PhoneNumberReconciler) holder(ctx context.Context, pn *v1alpha1.PhoneNumber, proof numberProof) (*v1alpha1.PhoneNumber, error) {
	if proof.ownership == v1alpha1.OwnershipSandbox {
		return pn, nil // a test number has no single owner: each project's claim holds it for that project
	}
	others, err := phonenumber.Claims(ctx, r.Client, pn.Spec.Number)
	if err != nil {
		return nil, err
	}
	items := []v1alpha1.PhoneNumber{*pn}
	claims := []numberClaim{{key: pn.Namespace + "/" + pn.Name, created: pn.CreationTimestamp.Time,
		proved:  proof.ownership != "" && proof.project != "",
		holding: meta.IsStatusConditionTrue(pn.Status.Conditions, v1alpha1.ConditionReady)}}
	for _, o := range others {
		if o.UID == pn.UID || !o.DeletionTimestamp.IsZero() {
			continue
		}
		items = append(items, o)
		claims = append(claims, numberClaim{key: o.Namespace + "/" + o.Name, created: o.CreationTimestamp.Time,
			proved:  o.Status.Ownership != "" && o.Status.Project != "",
			holding: meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady)})
	}
	i := numberHolder(claims)
	if i < 0 {
		return nil, nil
	}
	return &items[i], nil
}

// phoneNumberReadiness is the chain of checks of a PhoneNumber: it names a project it may claim
// the number for, something proves the claim, and it holds the number. A message never names
// another project: the PhoneNumber's namespace may be a tenant's.
func phoneNumberReadiness(pn *v1alpha1.PhoneNumber, proof numberProof, holder *v1alpha1.PhoneNumber) readiness {
	switch {
	case proof.invalid != "":
		return notReady(v1alpha1.ReasonNumberInvalidProject, proof.invalid)
	case proof.unreachable != "":
		return notReady(v1alpha1.ReasonProviderUnreachable, fmt.Sprintf("could not ask the project's twilio account for %s: %s", pn.Spec.Number, proof.unreachable))
	case proof.ownership == "":
		return notReady(v1alpha1.ReasonNumberNotOwned, proof.notOwned)
	case holder == nil || holder.UID != pn.UID:
		msg := fmt.Sprintf("another project holds %s: a number has one owner at a time, the claim that holds it (else the oldest)", pn.Spec.Number)
		if holder != nil && phonenumber.ClaimFor(holder) == proof.project {
			msg = fmt.Sprintf("PhoneNumber %s/%s holds %s for this project already", holder.Namespace, holder.Name, pn.Spec.Number)
		}
		return notReady(v1alpha1.ReasonNumberConflict, msg)
	}
	if paid := meta.FindStatusCondition(pn.Status.Conditions, v1alpha1.ConditionNumberPaid); paid != nil && paid.Status == metav1.ConditionFalse {
		return notReady(v1alpha1.ReasonNumberSuspended, fmt.Sprintf("%s is suspended: %s", pn.Spec.Number, paid.Message))
	}
	msg := fmt.Sprintf("holds %s for project %s: assigned by an operator", pn.Spec.Number, proof.project)
	if proof.ownership == v1alpha1.OwnershipSandbox {
		msg = fmt.Sprintf("holds %s for project %s: a sandbox test number, which reaches nobody", pn.Spec.Number, proof.project)
	}
	if a := proof.account; proof.ownership == v1alpha1.OwnershipProviderAccount && a != nil {
		msg = fmt.Sprintf("holds %s for project %s: the account of twilio Provider %s lists it (%s)", pn.Spec.Number, proof.project, a.Provider, a.NumberSID)
		if proof.recheckFailed != "" {
			msg += fmt.Sprintf("; asking again since %s failed: %s", a.CheckedAt.Format(time.RFC3339), proof.recheckFailed)
		}
	}
	return readyOK(msg)
}
