package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// StatusChannels implements message.StatusReader: SMS, which Twilio keeps a Message resource of.
func (r *Registry) StatusChannels() []string {
	return []string{string(v1alpha1.ChannelSMS), string(v1alpha1.ChannelSMSOneway)}
}

// MessageStatus implements message.StatusReader: it asks the Provider a live message went
// through for its status now. ok is false when the Provider has no such read (Meta's Cloud API,
// Telegram and SMTP keep no resource of a sent message to ask), is gone, or does not know the
// message.
func (r *Registry) MessageStatus(ctx context.Context, m db.Message) (transport.StatusUpdate, bool, error) {
	if m.Provider == nil || m.ProviderMessageID == nil || !slices.Contains(r.StatusChannels(), m.Channel) {
		return transport.StatusUpdate{}, false, nil
	}
	namespace, name, ok := strings.Cut(*m.Provider, "/")
	if !ok {
		return transport.StatusUpdate{}, false, nil
	}
	var p v1alpha1.Provider
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p)
	if apierrors.IsNotFound(err) {
		return transport.StatusUpdate{}, false, nil
	}
	if err != nil {
		return transport.StatusUpdate{}, false, fmt.Errorf("read provider %s: %w", *m.Provider, err)
	}
	if p.Spec.Type != v1alpha1.ProviderTwilio || unusable(&p) != nil {
		return transport.StatusUpdate{}, false, nil
	}
	t, err := r.twilioOf(ctx, &p)
	if f := transport.AsFailure(err); f != nil {
		return transport.StatusUpdate{}, false, nil
	}
	if err != nil {
		return transport.StatusUpdate{}, false, err
	}
	u, err := t.MessageStatus(ctx, *m.ProviderMessageID)
	if errors.Is(err, twilio.ErrMessageNotFound) {
		return transport.StatusUpdate{}, false, nil
	}
	if err != nil {
		return transport.StatusUpdate{}, false, err
	}
	return u, true, nil
}
