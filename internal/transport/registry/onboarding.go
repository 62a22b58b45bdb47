package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	metatransport "github.com/switchboard-io/switchboard/internal/transport/meta"
)

// Where Meta's browser side is, unless a Provider says otherwise.
const (
	DefaultDialogURL = "https://www.facebook.com"
	DefaultSDKURL    = "https://connect.facebook.net/en_US/sdk.js"
)

// MetaApp is the Meta app a project connects its clients' accounts through (invitations): the
// meta Provider that serves the channel for the project (its default, else the installation's),
// its Graph API client, and the app's credentials and browser-side settings.
type MetaApp struct {
	Provider                    *v1alpha1.Provider
	Graph                       *metatransport.Transport
	AppID, AppSecret, Version   string
	ConfigID, DialogURL, SDKURL string
}

// MetaApp resolves the Meta app of channel ch for project. An app that cannot run an onboarding
// (no meta Provider, no app id or secret) is an error that says what is missing.
func (r *Registry) MetaApp(ctx context.Context, project string, ch v1alpha1.Channel) (MetaApp, error) {
	p, reason, err := r.providerIn(ctx, project, ch, "")
	if err != nil {
		return MetaApp{}, err
	}
	if p == nil {
		return MetaApp{}, fmt.Errorf("no Provider serves %s for project %s: %s", ch, project, reason)
	}
	if p.Spec.Type != v1alpha1.ProviderMeta {
		return MetaApp{}, fmt.Errorf("Provider %s/%s serves %s but is of type %s, not meta", p.Namespace, p.Name, ch, p.Spec.Type)
	}
	secret, err := r.credentials(ctx, p)
	if err != nil {
		return MetaApp{}, err
	}
	graph, err := r.MetaOf(ctx, p)
	if err != nil {
		return MetaApp{}, err
	}
	app := MetaApp{Provider: p, Graph: graph, AppSecret: string(secret.Data[v1alpha1.ProviderKeyAppSecret]),
		Version: metatransport.DefaultVersion, DialogURL: DefaultDialogURL, SDKURL: DefaultSDKURL}
	if m := p.Spec.Meta; m != nil {
		app.AppID, app.ConfigID = m.AppID, m.EmbeddedSignupConfigID
		if m.GraphAPIVersion != "" {
			app.Version = m.GraphAPIVersion
		}
		if m.DialogURL != "" {
			app.DialogURL = strings.TrimSuffix(m.DialogURL, "/")
		}
		if m.SDKURL != "" {
			app.SDKURL = m.SDKURL
		}
	}
	switch {
	case app.AppID == "":
		return MetaApp{}, fmt.Errorf("Provider %s/%s has no spec.meta.appId: clients sign in to a Meta app", p.Namespace, p.Name)
	case app.AppSecret == "":
		return MetaApp{}, fmt.Errorf("Provider %s/%s: its Secret has no %s, which exchanges the clients' sign-ins", p.Namespace, p.Name,
			v1alpha1.ProviderKeyAppSecret)
	case ch == v1alpha1.ChannelWhatsApp && app.ConfigID == "":
		return MetaApp{}, fmt.Errorf("Provider %s/%s has no spec.meta.embeddedSignupConfigId: WhatsApp invitations run Embedded Signup",
			p.Namespace, p.Name)
	}
	return app, nil
}
