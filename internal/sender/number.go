package sender

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// WithNumberLookup makes s prove a new number through the project's own twilio accounts
// (the transport registry) when no PhoneNumber holds it, and returns s. Without it only numbers
// a Ready PhoneNumber holds for the project, and the sandbox's test numbers, are taken.
func (s *Service) WithNumberLookup(l phonenumber.Lookup) *Service {
	s.numbers = l
	return s
}

// checkNumber applies the ownership rule to a new phone number (docs/senders.md#phone-numbers):
// a sender may hold a number its project owns, one its project's own twilio account lists, or a
// test number of the sandbox; another project's, or nobody's, is 400 on phoneNumber and changes
// nothing. A number the sender had already is not checked again (the send path refuses it when
// the project no longer owns it). For a number of the project's own account, it makes the
// PhoneNumber that keeps that proof, so the number is in use once the controller confirms it.
func (s *Service) checkNumber(ctx context.Context, project, sender, before string, spec *v1alpha1.SenderSpec, in Input) error {
	number := spec.PhoneNumber
	if in.PhoneNumber == nil || number == "" || number == before || spec.Transport == v1alpha1.TransportSandbox || !addr.IsE164(number) {
		return nil
	}
	v, err := phonenumber.Prove(ctx, s.client, s.numbers, project, number)
	if err != nil {
		if apperror.As(err) != nil {
			return err
		}
		// A Provider that cannot work until someone fixes it says why; an outage is retried.
		if f := transport.AsFailure(err); f != nil {
			return apperror.New(apperror.Unavailable, "provider_not_ready", fmt.Sprintf(
				"Could not ask the project's Twilio account whether it holds %s: %s", number, f.Message))
		}
		return apperror.New(apperror.Unavailable, "provider_unavailable", fmt.Sprintf(
			"Could not ask the project's Twilio account whether it holds %s; try again.", number))
	}
	if !v.Takeable() {
		return apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: v.Why()})
	}
	if v.State != phonenumber.InOwnAccount {
		return nil
	}
	pn := &v1alpha1.PhoneNumber{
		ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: v1alpha1.PhoneNumberName(number),
			Annotations: map[string]string{v1alpha1.PhoneNumberForSenderAnnotation: project + "/" + sender}},
		Spec: v1alpha1.PhoneNumberSpec{Number: number},
	}
	err = s.client.Create(ctx, pn, client.FieldOwner(kubewrite.FieldManager))
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create phone number %s/%s: %w", project, pn.Name, err)
		}
		return nil
	}
	// The claim exists, and may say its account did not list the number when last asked: it is
	// asked again now rather than at its next check.
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`,
		v1alpha1.PhoneNumberCheckAnnotation, time.Now().UTC().Format(time.RFC3339Nano)))
	if err := s.client.Patch(ctx, pn, patch, client.FieldOwner(kubewrite.FieldManager)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("ask phone number %s/%s to be checked: %w", project, pn.Name, err)
	}
	return nil
}

// checkVoice refuses voice on a number whose PhoneNumber says it cannot take calls (spec:
// enableVoice needs a number provisioned for calls).
func (s *Service) checkVoice(ctx context.Context, project string, spec *v1alpha1.SenderSpec) error {
	if spec.Voice == nil || !spec.Voice.Enabled || spec.PhoneNumber == "" {
		return nil
	}
	v, err := phonenumber.Check(ctx, s.client, project, spec.PhoneNumber)
	if err != nil || v.TakesCalls() {
		return err
	}
	return apperror.InvalidFields(apperror.FieldError{Path: "enableVoice",
		Message: fmt.Sprintf("%s cannot take calls (its capabilities are %v)", spec.PhoneNumber, v.Holder.Status.Capabilities)})
}

// channelsOf are the channels the sender can send on now, as the controller lists them: the
// configured and activated ones its transport carries, less those from a number its project does
// not own (a claim still being checked counts as owned for a moment).
func (s *Service) channelsOf(ctx context.Context, snd *v1alpha1.Sender) ([]v1alpha1.Channel, error) {
	channels := snd.SendableChannels()
	number := snd.Spec.PhoneNumber
	if number == "" || snd.Spec.Transport == v1alpha1.TransportSandbox {
		return channels, nil
	}
	v, err := phonenumber.Check(ctx, s.client, snd.Namespace, number)
	if err != nil {
		return nil, err
	}
	if v.State == phonenumber.Unowned && v.Pending == nil {
		// The claim checkNumber made a moment ago may not be in the cache yet.
		var pn v1alpha1.PhoneNumber
		err := s.live.Get(ctx, client.ObjectKey{Namespace: snd.Namespace, Name: v1alpha1.PhoneNumberName(number)}, &pn)
		switch {
		case err == nil && pn.Spec.Number == number && pn.DeletionTimestamp.IsZero():
			v.Pending = &pn
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("read phone number %s of %s: %w", number, snd.Namespace, err)
		}
	}
	if v.Usable() || v.Deciding() {
		return channels, nil
	}
	return snd.ChannelsWithoutNumber(channels), nil
}

// SetNumber gives the sender number, as an update of its phoneNumber does (the ownership rule
// included); "" takes its number away, which a sender that takes calls on it refuses (400 on
// senderId: turn voice off first). It implements numbers.Senders.
func (s *Service) SetNumber(ctx context.Context, project, id, number string) error {
	if number != "" {
		_, err := s.Update(ctx, project, id, Input{PhoneNumber: &number})
		if e := apperror.As(err); e != nil && e.Kind == apperror.NotFound {
			return apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: "no sender " + id + " in this project"})
		}
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		snd, err := s.getLive(ctx, project, id)
		if err != nil {
			return err
		}
		if snd.Spec.PhoneNumber == "" {
			return nil
		}
		if snd.Spec.Voice != nil && snd.Spec.Voice.Enabled {
			return apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: fmt.Sprintf(
				"sender %s takes calls on %s: turn its voice off first (PATCH /v1/senders/%s with enableVoice: false)", id, snd.Spec.PhoneNumber, id)})
		}
		snd.Spec.PhoneNumber = ""
		return s.write(ctx, snd)
	})
}
