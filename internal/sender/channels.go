package sender

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
)

// Address is one v2 channel entry: a sender's channel of one type, at the address contacts see.
type Address struct {
	Address string
	Type    v1alpha1.Channel
	Active  bool
	Sender  *v1alpha1.Sender
}

// addresses lists the channel entries of one sender: every configured channel, on or off.
func addresses(snd *v1alpha1.Sender, on []v1alpha1.Channel) []Address {
	var out []Address
	for _, c := range v1alpha1.AllChannels {
		if a := snd.Address(c); a != "" {
			out = append(out, Address{Address: a, Type: c, Active: slices.Contains(on, c), Sender: snd})
		}
	}
	return out
}

// Addresses lists the project's channel entries, sender by sender (oldest first).
func (s *Service) Addresses(ctx context.Context, project string) ([]Address, error) {
	views, err := s.List(ctx, project)
	if err != nil {
		return nil, err
	}
	var out []Address
	for _, v := range views {
		out = append(out, addresses(v.Sender, v.Channels)...)
	}
	return out, nil
}

// AddressEntries returns the entries at one address; none is 404.
func (s *Service) AddressEntries(ctx context.Context, project, address string) ([]Address, error) {
	all, err := s.Addresses(ctx, project)
	if err != nil {
		return nil, err
	}
	var out []Address
	for _, a := range all {
		if a.Address == address {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, apperror.NotFoundf("No channel at %s.", address)
	}
	return out, nil
}

// SetActive switches the channel of type at address on or off.
func (s *Service) SetActive(ctx context.Context, project, address string, typ v1alpha1.Channel, active bool) (Address, error) {
	entry, err := s.entry(ctx, project, address, typ)
	if err != nil {
		return Address{}, err
	}
	return s.changeEntry(ctx, entry, func(spec *v1alpha1.SenderSpec) error {
		switch typ {
		case v1alpha1.ChannelSMS:
			spec.SMS = &v1alpha1.Activation{Active: active}
		case v1alpha1.ChannelSMSOneway:
			spec.SMSOneway = &v1alpha1.Enablement{Enabled: active}
		case v1alpha1.ChannelVoice:
			spec.Voice = &v1alpha1.Enablement{Enabled: active}
		case v1alpha1.ChannelEmail:
			if !active {
				return apperror.InvalidFields(apperror.FieldError{Path: "type", Message: "email is on while the sender has an address; DELETE is not offered for email, change the sender instead"})
			}
		default:
			account(spec, typ).Active = active
		}
		return nil
	})
}

// Remove takes a channel off its sender: a Telegram bot is detached, one-way SMS and voice are
// disabled. Other types are removed where they were connected (invitations, the sender).
func (s *Service) Remove(ctx context.Context, project, address string, typ v1alpha1.Channel) error {
	entry, err := s.entry(ctx, project, address, typ)
	if err != nil {
		return err
	}
	_, err = s.changeEntry(ctx, entry, func(spec *v1alpha1.SenderSpec) error {
		switch typ {
		case v1alpha1.ChannelTelegram:
			spec.Telegram = nil
		case v1alpha1.ChannelSMSOneway:
			spec.SMSOneway = nil
		case v1alpha1.ChannelVoice:
			spec.Voice = nil
		default:
			return apperror.InvalidFields(apperror.FieldError{Path: "type",
				Message: "only telegram, sms_oneway and voice are removed here; deactivate the others"})
		}
		return nil
	})
	return err
}

// CreateInput is POST /v2/channels: a new address, or a Telegram bot to attach.
type CreateInput struct {
	Type     *string `json:"type"`
	Address  *string `json:"address"`
	Name     *string `json:"name"`
	BotToken *string `json:"botToken"`
}

// creatable are the types POST /v2/channels makes; whatsapp, instagram and messenger are
// connected through invitations.
var creatable = []v1alpha1.Channel{v1alpha1.ChannelEmail, v1alpha1.ChannelSMSOneway, v1alpha1.ChannelSMS, v1alpha1.ChannelVoice, v1alpha1.ChannelTelegram}

// CreateAddress makes a sender for a new address with the channel on.
func (s *Service) CreateAddress(ctx context.Context, project string, in CreateInput) (Address, error) {
	var errs []apperror.FieldError
	typ := v1alpha1.Channel("")
	if in.Type == nil {
		errs = append(errs, apperror.FieldError{Path: "type", Message: "is required"})
	} else if typ = v1alpha1.Channel(*in.Type); !slices.Contains(creatable, typ) {
		errs = append(errs, apperror.FieldError{Path: "type", Message: fmt.Sprintf(
			"must be one of %v; whatsapp, instagram and messenger connect through invitations", creatable)})
	}
	address := ""
	if in.Address != nil {
		address = *in.Address
	}
	switch {
	case typ == v1alpha1.ChannelEmail && !addr.IsEmail(address):
		errs = append(errs, apperror.FieldError{Path: "address", Message: "must be an email address for email"})
	case (typ == v1alpha1.ChannelSMS || typ == v1alpha1.ChannelVoice) && !addr.IsE164(address):
		errs = append(errs, apperror.FieldError{Path: "address", Message: "must be an E.164 number for " + string(typ)})
	case typ == v1alpha1.ChannelSMSOneway && address != "" && !addr.IsE164(address):
		errs = append(errs, apperror.FieldError{Path: "address", Message: "must be an E.164 number, or left out for one-way SMS"})
	case typ == v1alpha1.ChannelTelegram && (in.BotToken == nil || *in.BotToken == ""):
		errs = append(errs, apperror.FieldError{Path: "botToken", Message: "is required to attach a Telegram bot"})
	}
	if len(errs) > 0 {
		return Address{}, apperror.InvalidFields(errs...)
	}
	if typ == v1alpha1.ChannelTelegram {
		return s.createTelegram(ctx, project, in)
	}
	name := address
	if in.Name != nil {
		name = *in.Name
	}
	if name == "" {
		name = "One-way SMS"
	}
	t := true
	input := Input{Name: &name}
	switch typ {
	case v1alpha1.ChannelEmail:
		input.EmailAddress = &address
	case v1alpha1.ChannelSMSOneway:
		input.EnableSmsOneway = &t
		if address != "" {
			input.PhoneNumber = &address
		}
	case v1alpha1.ChannelSMS, v1alpha1.ChannelVoice:
		input.PhoneNumber = &address
		if typ == v1alpha1.ChannelVoice {
			input.EnableVoice = &t
		}
	}
	view, err := s.Create(ctx, project, input)
	if err != nil {
		return Address{}, renamePath(renamePath(err, "emailAddress", "address"), "phoneNumber", "address")
	}
	if typ == v1alpha1.ChannelSMS {
		if view, err = s.Activate(ctx, project, view.Sender.Name, v1alpha1.ChannelSMS); err != nil {
			return Address{}, err
		}
	}
	for _, a := range addresses(view.Sender, view.Channels) {
		if a.Type == typ {
			return a, nil
		}
	}
	return Address{}, fmt.Errorf("created sender %s has no %s channel", view.Sender.Name, typ)
}

func (s *Service) entry(ctx context.Context, project, address string, typ v1alpha1.Channel) (Address, error) {
	entries, err := s.AddressEntries(ctx, project, address)
	if err != nil {
		return Address{}, err
	}
	for _, e := range entries {
		if e.Type == typ {
			return e, nil
		}
	}
	return Address{}, apperror.NotFoundf("No %s channel at %s.", typ, address)
}

// changeEntry changes the entry's sender and returns the entry as it is after.
func (s *Service) changeEntry(ctx context.Context, entry Address, mutate func(*v1alpha1.SenderSpec) error) (Address, error) {
	var snd *v1alpha1.Sender
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.getLive(ctx, entry.Sender.Namespace, entry.Sender.Name)
		if err != nil {
			return err
		}
		snd = current.DeepCopy()
		if err := mutate(&snd.Spec); err != nil {
			return err
		}
		return s.write(ctx, snd)
	})
	if err != nil {
		return Address{}, err
	}
	channels, err := s.channelsOf(ctx, snd)
	if err != nil {
		return Address{}, err
	}
	for _, a := range addresses(snd, channels) {
		if a.Type == entry.Type {
			return a, nil
		}
	}
	return Address{Address: entry.Address, Type: entry.Type, Sender: snd}, nil
}

// createTelegram makes a sender for a Telegram bot: the token is checked with Telegram first, so
// a rejected token creates nothing.
func (s *Service) createTelegram(ctx context.Context, project string, in CreateInput) (Address, error) {
	bot, err := s.bots.API(ctx, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: project}}).GetMe(ctx, *in.BotToken)
	if errors.Is(err, telegram.ErrInvalidToken) {
		return Address{}, invalidBotToken()
	}
	if err != nil {
		return Address{}, err
	}
	name := "@" + bot.Username
	if in.Name != nil && *in.Name != "" {
		name = *in.Name
	}
	view, err := s.Create(ctx, project, Input{Name: &name})
	if err != nil {
		return Address{}, err
	}
	if view, _, err = s.AttachTelegram(ctx, project, view.Sender.Name, *in.BotToken); err != nil {
		return Address{}, err
	}
	for _, a := range addresses(view.Sender, view.Channels) {
		if a.Type == v1alpha1.ChannelTelegram {
			return a, nil
		}
	}
	return Address{}, fmt.Errorf("sender %s has no telegram channel after attaching the bot", view.Sender.Name)
}

// SendersAt returns the senders with a channel at address (the v2 send's from).
func (s *Service) SendersAt(ctx context.Context, project, address string) ([]*v1alpha1.Sender, error) {
	all, err := s.Addresses(ctx, project)
	if err != nil {
		return nil, err
	}
	var out []*v1alpha1.Sender
	for _, a := range all {
		if a.Address == address && !slices.Contains(out, a.Sender) {
			out = append(out, a.Sender)
		}
	}
	return out, nil
}

// SenderAt names the sender whose channel typ is at address (v2's from for one channel): 404
// when there is none.
func (s *Service) SenderAt(ctx context.Context, project, address string, typ v1alpha1.Channel) (string, error) {
	e, err := s.entry(ctx, project, address, typ)
	if err != nil {
		return "", err
	}
	return e.Sender.Name, nil
}

// renamePath names a field of a v1 sender request by its v2 name in a 400's field errors.
func renamePath(err error, from, to string) error {
	e := apperror.As(err)
	if e == nil || e.Code != "invalid_request" {
		return err
	}
	fields, ok := e.Details["errors"].([]apperror.FieldError)
	if !ok {
		return err
	}
	renamed := make([]apperror.FieldError, len(fields))
	for i, f := range fields {
		if f.Path == from {
			f.Path = to
		}
		renamed[i] = f
	}
	return apperror.InvalidFields(renamed...)
}
