package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/call"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// Calls go through the Provider of the sender's voice channel: a twilio one, whose
// ConversationRelay reaches the installation at its public URL.

var _ call.Carriers = (*Registry)(nil)

// VoiceCarrier implements call.Carriers.
func (r *Registry) VoiceCarrier(ctx context.Context, snd *v1alpha1.Sender) (call.Carrier, string, error) {
	refuse := func(msg string) error {
		return apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: msg})
	}
	if r.PublicURL == "" {
		return nil, "", refuse("this installation has no public URL (--public-url), so no provider can reach a call's relay")
	}
	if err := r.numberFailure(ctx, snd, v1alpha1.ChannelVoice); err != nil {
		var f *transport.Failure
		if errors.As(err, &f) {
			return nil, "", refuse(f.Message)
		}
		return nil, "", err
	}
	if v, err := phonenumber.Check(ctx, r.Reader, snd.Namespace, snd.Spec.PhoneNumber); err != nil {
		return nil, "", err
	} else if !v.TakesCalls() {
		return nil, "", refuse(fmt.Sprintf("%s cannot take calls: its PhoneNumber's capabilities leave voice out", snd.Spec.PhoneNumber))
	}
	p, reason, err := r.provider(ctx, snd, v1alpha1.ChannelVoice)
	if err != nil {
		return nil, "", err
	}
	if p == nil {
		return nil, "", refuse(reason)
	}
	if f := unusable(p); f != nil {
		return nil, "", refuse(f.Message)
	}
	if p.Spec.Type != v1alpha1.ProviderTwilio {
		return nil, "", refuse(fmt.Sprintf("calls go through a twilio Provider; %s is %s", p.Name, p.Spec.Type))
	}
	c, err := r.twilioCarrier(ctx, p)
	return c, p.Namespace + "/" + p.Name, err
}

// CarrierOf implements call.Carriers.
func (r *Registry) CarrierOf(ctx context.Context, provider string) (call.Carrier, error) {
	ns, name, _ := strings.Cut(provider, "/")
	var p v1alpha1.Provider
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		return nil, fmt.Errorf("read provider %s: %w", provider, err)
	}
	if p.Spec.Type != v1alpha1.ProviderTwilio {
		return nil, fmt.Errorf("provider %s is not a twilio provider", provider)
	}
	return r.twilioCarrier(ctx, &p)
}

func (r *Registry) twilioCarrier(ctx context.Context, p *v1alpha1.Provider) (call.Carrier, error) {
	t, err := r.twilioOf(ctx, p)
	if err != nil {
		return nil, err
	}
	return &twilioCarrier{t: t, publicURL: r.PublicURL, namespace: p.Namespace, name: p.Name}, nil
}

// twilioCarrier places calls through one Twilio account, handing each to ConversationRelay.
type twilioCarrier struct {
	t                          *twilio.Transport
	publicURL, namespace, name string
}

func (c *twilioCarrier) Place(ctx context.Context, p call.Placement) (string, error) {
	e := call.EndpointsOf(c.publicURL, "twilio", c.namespace, c.name, p.CallID)
	return c.t.PlaceCall(ctx, twilio.CallRequest{To: p.To, From: p.From,
		Twiml:          twilio.ConversationRelayTwiML(call.RelayOptions(e, p.Speech, true)),
		StatusCallback: e.Status, TimeLimit: int(p.TimeLimit.Seconds()), MachineDetection: p.MachineDetection, AMDCallback: e.AMD})
}

func (c *twilioCarrier) Hangup(ctx context.Context, sid string, answered bool) error {
	return notFound(c.t.EndCall(ctx, sid, !answered))
}

func (c *twilioCarrier) Say(ctx context.Context, sid, text, language string) error {
	return notFound(c.t.RedirectCall(ctx, sid, twilio.HangupTwiML(text, language)))
}

func (c *twilioCarrier) Status(ctx context.Context, sid string) (call.Progress, error) {
	info, err := c.t.FetchCall(ctx, sid)
	if err != nil {
		return call.Progress{}, notFound(err)
	}
	p := call.Progress{Status: call.Normalize(info.Status), AnsweredBy: info.AnsweredBy}
	if !call.Active(p.Status) {
		d := int32(info.Duration)
		p.Duration = &d
	}
	return p, nil
}

// notFound reads Twilio's "no such call" as the call package's.
func notFound(err error) error {
	if errors.Is(err, twilio.ErrCallNotFound) {
		return fmt.Errorf("%w: %w", call.ErrUnknownCall, err)
	}
	return err
}
