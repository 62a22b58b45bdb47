package registry

import (
	"context"
	"fmt"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// ErrNumberNotOwned is the errorCode of a live message from a number its project does not own
// (docs/senders.md#phone-numbers): ownership was lost between its accept and its dispatch.
const ErrNumberNotOwned = "NUMBER_NOT_OWNED"

// IncomingNumber implements phonenumber.Lookup: whether the account of twilio Provider p holds
// number (its IncomingPhoneNumbers), through the Provider's endpoint and credentials.
func (r *Registry) IncomingNumber(ctx context.Context, p *v1alpha1.Provider, number string) (phonenumber.Found, bool, error) {
	if p.Spec.Type != v1alpha1.ProviderTwilio {
		return phonenumber.Found{}, false, nil
	}
	if f := unusable(p); f != nil {
		return phonenumber.Found{}, false, f
	}
	t, err := r.twilioOf(ctx, p)
	if err != nil {
		return phonenumber.Found{}, false, err
	}
	n, ok, err := t.FindIncomingNumber(ctx, number)
	if err != nil || !ok {
		return phonenumber.Found{}, false, err
	}
	found := phonenumber.Found{SID: n.SID}
	for c, on := range map[v1alpha1.PhoneCapability]bool{v1alpha1.CapabilitySMS: n.SMS, v1alpha1.CapabilityMMS: n.MMS, v1alpha1.CapabilityVoice: n.Voice} {
		if on {
			found.Capabilities = append(found.Capabilities, c)
		}
	}
	v1alpha1.SortCapabilities(found.Capabilities)
	return found, true, nil
}

// numberRefused refuses, at accept, a live message on channel from a number snd's project does
// not own: nothing is stored or charged. strict answers as v2 does (409 no_channel).
func (r *Registry) numberRefused(ctx context.Context, snd *v1alpha1.Sender, channel v1alpha1.Channel, strict bool) error {
	if !snd.SendsFromNumber(channel) {
		return nil
	}
	v, err := phonenumber.Check(ctx, r.Reader, snd.Namespace, snd.Spec.PhoneNumber)
	if err != nil || v.Usable() {
		return err
	}
	msg := fmt.Sprintf("Sender %s cannot send live %s messages: %s.", snd.Name, channel, v.Why())
	if strict {
		e := apperror.New(apperror.Conflict, "no_channel", msg)
		e.Details = map[string]any{"connect": []map[string]any{{"type": string(channel),
			"description": "send from a number this project owns: one an operator assigned to it, or one of its own twilio account (docs/senders.md#phone-numbers)"}}}
		return e
	}
	return apperror.InvalidFields(apperror.FieldError{Path: "channel", Message: msg})
}

// numberFailure fails, at dispatch, a live message from a number its project does not own (any
// more): a message can wait after its accept (a risk hold, retries, a fallback from WhatsApp).
func (r *Registry) numberFailure(ctx context.Context, snd *v1alpha1.Sender, channel v1alpha1.Channel) error {
	if !snd.SendsFromNumber(channel) {
		return nil
	}
	v, err := phonenumber.Check(ctx, r.Reader, snd.Namespace, snd.Spec.PhoneNumber)
	if err != nil || v.Usable() {
		return err
	}
	return &transport.Failure{Code: ErrNumberNotOwned, Message: v.Why() + "."}
}

var _ phonenumber.Releaser = (*Registry)(nil)

// ReleaseNumber implements phonenumber.Releaser: the account of twilio Provider p releases the
// number sid.
func (r *Registry) ReleaseNumber(ctx context.Context, p *v1alpha1.Provider, sid string) error {
	if p.Spec.Type != v1alpha1.ProviderTwilio {
		return fmt.Errorf("provider %s/%s is %s: only twilio accounts hold bought numbers", p.Namespace, p.Name, p.Spec.Type)
	}
	t, err := r.twilioOf(ctx, p)
	if err != nil {
		return err
	}
	return t.ReleaseNumber(ctx, sid)
}
