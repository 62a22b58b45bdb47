package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
)

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=phonenumbers,verbs=get;list;watch;create

// reconcileNumber decides the sender's NumberOwned condition: whether its project owns its
// phone number, so live sms, sms_oneway and voice may go out from it. It is nil when nothing
// needs owning (no number, or the sandbox transport, which never reaches a provider).
//
// When no PhoneNumber can prove the number for the project yet, it makes one: an assignment in
// the installation's namespace for a number the sender held before ownership was checked (the
// first project to hold it keeps it: docs/senders.md#existing-senders), else a claim in the
// project's namespace, which the project's own twilio account proves or not. The number's
// PhoneNumbers decide; the sender only reads them.
func (r *SenderReconciler) reconcileNumber(ctx context.Context, snd *v1alpha1.Sender) (*metav1.Condition, error) {
	number := snd.Spec.PhoneNumber
	if number == "" || snd.Spec.Transport == v1alpha1.TransportSandbox {
		return nil, nil
	}
	cond := func(ok bool, reason, format string, args ...any) (*metav1.Condition, error) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		return &metav1.Condition{Type: v1alpha1.ConditionNumberOwned, Status: status, Reason: reason,
			Message: fmt.Sprintf(format, args...), ObservedGeneration: snd.Generation}, nil
	}
	const refused = "; live sms, sms_oneway and voice from it are refused (test keys still send, through the sandbox)"
	v, err := phonenumber.Check(ctx, r.Client, snd.Namespace, number)
	if err != nil {
		return nil, err
	}
	switch v.State {
	case phonenumber.Sandbox:
		return cond(true, v1alpha1.ReasonSandboxNumber, "%s is a test number of the sandbox, which every project may use: nobody is reached at it", number)
	case phonenumber.Owned:
		return cond(true, v1alpha1.ReasonNumberOwned, "the project owns %s", number)
	case phonenumber.HeldElsewhere:
		return cond(false, v1alpha1.ReasonNumberConflict, "another project owns %s%s", number, refused)
	}
	if p := v.Pending; p != nil {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || p.Status.ObservedGeneration != p.Generation {
			return cond(false, v1alpha1.ReasonOwnershipPending, "PhoneNumber %s/%s is being checked%s", p.Namespace, p.Name, refused)
		}
		return cond(false, v1alpha1.ReasonNumberNotOwned, "PhoneNumber %s/%s does not hold %s: %s%s", p.Namespace, p.Name, number, c.Message, refused)
	}

	// Nothing claims the number for the project yet. Another project's proved claim waiting for
	// its turn (an operator's new assignment, made to take over an adopted number) is not
	// fought with an adoption.
	claims, err := phonenumber.Claims(ctx, r.Client, number)
	if err != nil {
		return nil, err
	}
	for i := range claims {
		if c := &claims[i]; c.DeletionTimestamp.IsZero() && c.Status.Ownership != "" && phonenumber.ClaimFor(c) != snd.Namespace {
			return cond(false, v1alpha1.ReasonNumberConflict, "another project claims %s%s", number, refused)
		}
	}
	if adopt, first, err := r.adoptable(ctx, snd); err != nil {
		return nil, err
	} else if adopt {
		if err := r.makeClaim(ctx, snd, r.InstallationNamespace, map[string]string{v1alpha1.PhoneNumberAdoptedLabel: "true"}); err != nil {
			return nil, err
		}
		log.FromContext(ctx).Info("adopted a number a sender held before ownership was checked", "number", number,
			"project", snd.Namespace, "sender", snd.Name)
		return cond(false, v1alpha1.ReasonOwnershipPending, "%s is being assigned to this project, which held it before numbers were checked", number)
	} else if first != "" {
		return cond(false, v1alpha1.ReasonNumberConflict, "another project held %s first, before numbers were checked%s", number, refused)
	}
	own, err := phonenumber.OwnAccounts(ctx, r.Client, snd.Namespace, "")
	if err != nil {
		return nil, err
	}
	// The installation's namespace is the operator's: a PhoneNumber there assigns the number.
	if len(own) == 0 && snd.Namespace != r.InstallationNamespace {
		return cond(false, v1alpha1.ReasonNumberNotOwned, "no PhoneNumber assigns %s to this project, and it has no twilio Provider of its own whose account "+
			"could list it: ask the operator to assign it, or add the Twilio account that holds it as a Provider (docs/senders.md#phone-numbers)%s", number, refused)
	}
	if err := r.makeClaim(ctx, snd, snd.Namespace, nil); err != nil {
		return nil, err
	}
	return cond(false, v1alpha1.ReasonOwnershipPending, "PhoneNumber %s/%s is made for %s and being checked%s",
		snd.Namespace, v1alpha1.PhoneNumberName(number), number, refused)
}

// adoptable tells whether snd's number is to be assigned to its project because the project
// held it before this installation checked who owns numbers: snd is a live sender created before
// the cutoff, and its project's is the oldest such sender of the number. first is the project of
// that oldest sender ("" when the number is not adopted at all).
func (r *SenderReconciler) adoptable(ctx context.Context, snd *v1alpha1.Sender) (adopt bool, first string, err error) {
	cutoff := r.AdoptNumbersBefore
	if cutoff.IsZero() || r.InstallationNamespace == "" || !snd.CreationTimestamp.Time.Before(cutoff) {
		return false, "", nil
	}
	var list v1alpha1.SenderList
	if err := r.List(ctx, &list, client.MatchingFields{index.SenderPhoneNumber: snd.Spec.PhoneNumber}); err != nil {
		return false, "", fmt.Errorf("list senders of %s: %w", snd.Spec.PhoneNumber, err)
	}
	var oldest *v1alpha1.Sender
	for i := range list.Items {
		s := &list.Items[i]
		if !s.DeletionTimestamp.IsZero() || s.Spec.Transport == v1alpha1.TransportSandbox || !s.CreationTimestamp.Time.Before(cutoff) {
			continue
		}
		if oldest == nil || s.CreationTimestamp.Before(&oldest.CreationTimestamp) ||
			(s.CreationTimestamp.Equal(&oldest.CreationTimestamp) && s.Namespace+"/"+s.Name < oldest.Namespace+"/"+oldest.Name) {
			oldest = s
		}
	}
	if oldest == nil {
		return false, "", nil
	}
	return oldest.Namespace == snd.Namespace, oldest.Namespace, nil
}

// makeClaim creates the PhoneNumber of snd's number for its project in namespace (the
// installation's, for an adoption; the project's, for its own account to prove). One made
// meanwhile by another reconcile is the same claim.
func (r *SenderReconciler) makeClaim(ctx context.Context, snd *v1alpha1.Sender, namespace string, labels map[string]string) error {
	pn := &v1alpha1.PhoneNumber{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: v1alpha1.PhoneNumberName(snd.Spec.PhoneNumber), Labels: labels,
			Annotations: map[string]string{v1alpha1.PhoneNumberForSenderAnnotation: snd.Namespace + "/" + snd.Name}},
		Spec: v1alpha1.PhoneNumberSpec{Number: snd.Spec.PhoneNumber},
	}
	if namespace != snd.Namespace {
		pn.Spec.Project = snd.Namespace
		pn.Name += "-" + snd.Namespace
	}
	if err := r.Create(ctx, pn); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create phone number %s/%s: %w", namespace, pn.Name, err)
	}
	return nil
}

// numberChannels leaves out of channels those that go out from the sender's number while cond
// says its project does not own it. A claim still being checked leaves them in for that moment,
// as the API shows them (the send path refuses live sends from the number until it is owned).
func numberChannels(snd *v1alpha1.Sender, channels []v1alpha1.Channel, cond *metav1.Condition) []v1alpha1.Channel {
	if cond == nil || cond.Status == metav1.ConditionTrue || cond.Reason == v1alpha1.ReasonOwnershipPending {
		return channels
	}
	return snd.ChannelsWithoutNumber(channels)
}
