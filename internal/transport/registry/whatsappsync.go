package registry

import (
	"context"
	"fmt"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// StartWhatsAppSync asks Meta to sync the WhatsApp Business app data of snd's coexistence
// number (syncType: meta.SyncContacts or meta.SyncHistory), through its WhatsApp Provider and
// with its account's token; it returns Meta's request id.
func (r *Registry) StartWhatsAppSync(ctx context.Context, snd *v1alpha1.Sender, syncType string) (string, error) {
	p, reason, err := r.provider(ctx, snd, v1alpha1.ChannelWhatsApp)
	if err != nil {
		return "", err
	}
	if p == nil {
		return "", &transport.Failure{Code: ErrProviderNotReady, Message: reason}
	}
	if f := unusable(p); f != nil {
		return "", f
	}
	if p.Spec.Type != v1alpha1.ProviderMeta {
		return "", &transport.Failure{Code: ErrProviderNotReady, Message: fmt.Sprintf("WhatsApp goes through Provider %s, not a meta one", p.Name)}
	}
	route, err := r.metaRoute(ctx, p, snd, v1alpha1.ChannelWhatsApp)
	if err != nil {
		return "", err
	}
	t, err := r.MetaOf(ctx, p)
	if err != nil {
		return "", err
	}
	return t.StartSync(ctx, route.AccountToken, route.AccountID, syncType)
}
