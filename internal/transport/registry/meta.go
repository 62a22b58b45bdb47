package registry

import (
	"context"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
	metatransport "github.com/switchboard-io/switchboard/internal/transport/meta"
)

// metaRoute is the route of a WhatsApp, Instagram or Messenger message through the meta
// Provider p: its Graph API, the sender's connected account (its phone number id, page id) as
// the sending account, and the account's own token when the Sender names one (else the
// Provider's system-user token).
func (r *Registry) metaRoute(ctx context.Context, p *v1alpha1.Provider, snd *v1alpha1.Sender, ch v1alpha1.Channel) (message.Route, error) {
	t, err := r.MetaOf(ctx, p)
	if err != nil {
		return message.Route{}, err
	}
	account := snd.AccountID(ch)
	if account == "" {
		return message.Route{}, &transport.Failure{Code: ErrProviderNotReady, Message: fmt.Sprintf("Sender %s has no connected %s account.", snd.Name, ch)}
	}
	route := message.Route{Transport: t, External: true, AccountID: account}
	if snd.Credentials(ch) != nil {
		if route.AccountToken, err = r.accountToken(ctx, snd, ch); err != nil {
			return message.Route{}, err
		}
	}
	return route, nil
}

// MetaOf is the Graph API client of a meta Provider, built once per version of it and its Secret.
func (r *Registry) MetaOf(ctx context.Context, p *v1alpha1.Provider) (*metatransport.Transport, error) {
	secret, err := r.credentials(ctx, p)
	if err != nil {
		return nil, err
	}
	return r.metas.get(fmt.Sprintf("%s/%d/%s", p.UID, p.Generation, secret.ResourceVersion), string(p.UID)+"/",
		func() (*metatransport.Transport, error) {
			cfg := MetaConfig(p, secret.Data, r.HTTP)
			cfg.BaseURL = r.endpoint(p)
			return metatransport.New(cfg), nil
		})
}

// MetaConfig is the Graph API configuration of a meta Provider and its credentials.
func MetaConfig(p *v1alpha1.Provider, creds map[string][]byte, hc *http.Client) metatransport.Config {
	cfg := metatransport.Config{BaseURL: p.Spec.BaseURL, AccessToken: string(creds[v1alpha1.ProviderKeyAccessToken]), HTTP: hc}
	if p.Spec.Meta != nil {
		cfg.Version, cfg.AppID = p.Spec.Meta.GraphAPIVersion, p.Spec.Meta.AppID
	}
	return cfg
}

// Typing implements message.Receipts: a live WhatsApp message received through a meta
// Provider is marked read at the Cloud API, with the typing indicator; test traffic and
// sandbox senders tell nobody.
func (r *Registry) Typing(ctx context.Context, m db.Message) error {
	if m.TestMode || m.ProviderMessageID == nil {
		return nil
	}
	var snd v1alpha1.Sender
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: m.Project, Name: m.Sender}, &snd); err != nil {
		return client.IgnoreNotFound(err)
	}
	t, token, err := r.whatsAppAccount(ctx, &snd)
	if t == nil || err != nil {
		return err
	}
	return t.MarkRead(ctx, token, snd.AccountID(v1alpha1.ChannelWhatsApp), *m.ProviderMessageID, true)
}

// whatsAppAccount is the Graph API client and token of the sender's WhatsApp, when it goes
// through a meta Provider; nil for the sandbox and for senders with no Provider for it.
func (r *Registry) whatsAppAccount(ctx context.Context, snd *v1alpha1.Sender) (*metatransport.Transport, string, error) {
	if snd.Spec.Transport == v1alpha1.TransportSandbox || snd.AccountID(v1alpha1.ChannelWhatsApp) == "" {
		return nil, "", nil
	}
	p, _, err := r.provider(ctx, snd, v1alpha1.ChannelWhatsApp)
	if err != nil || p == nil || p.Spec.Type != v1alpha1.ProviderMeta {
		return nil, "", err
	}
	t, err := r.MetaOf(ctx, p)
	if err != nil {
		return nil, "", err
	}
	token := ""
	if snd.Credentials(v1alpha1.ChannelWhatsApp) != nil {
		if token, err = r.accountToken(ctx, snd, v1alpha1.ChannelWhatsApp); err != nil {
			return nil, "", err
		}
	}
	return t, token, nil
}

// ReadProfile implements sender.Profiles: the business profile as the Graph API has it.
func (r *Registry) ReadProfile(ctx context.Context, snd *v1alpha1.Sender) (v1alpha1.BusinessProfile, bool, error) {
	t, token, err := r.whatsAppAccount(ctx, snd)
	if t == nil || err != nil {
		return v1alpha1.BusinessProfile{}, false, err
	}
	p, err := t.GetProfile(ctx, token, snd.AccountID(v1alpha1.ChannelWhatsApp))
	if err != nil {
		return v1alpha1.BusinessProfile{}, false, err
	}
	return v1alpha1.BusinessProfile{About: p.About, Address: p.Address, Description: p.Description, Email: p.Email,
		Websites: p.Websites, Vertical: p.Vertical, ProfilePictureURL: p.ProfilePictureURL}, true, nil
}

// WriteProfile implements sender.Profiles: the profile written through the Graph API.
func (r *Registry) WriteProfile(ctx context.Context, snd *v1alpha1.Sender, p v1alpha1.BusinessProfile) (bool, error) {
	t, token, err := r.whatsAppAccount(ctx, snd)
	if t == nil || err != nil {
		return false, err
	}
	return true, t.UpdateProfile(ctx, token, snd.AccountID(v1alpha1.ChannelWhatsApp), metatransport.Profile{About: p.About,
		Address: p.Address, Description: p.Description, Email: p.Email, Websites: p.Websites, Vertical: p.Vertical})
}

// WriteProfilePicture implements sender.Pictures: the image is uploaded through the Resumable
// Upload API of the Provider's app and set as the number's profile picture.
func (r *Registry) WriteProfilePicture(ctx context.Context, snd *v1alpha1.Sender, image []byte, mimeType string) (bool, error) {
	t, token, err := r.whatsAppAccount(ctx, snd)
	if t == nil || err != nil {
		return false, err
	}
	name := "profile.jpg"
	if mimeType == "image/png" {
		name = "profile.png"
	}
	handle, err := t.UploadFile(ctx, token, name, mimeType, image)
	if err != nil {
		return true, err
	}
	return true, t.SetProfilePicture(ctx, token, snd.AccountID(v1alpha1.ChannelWhatsApp), handle)
}

// WhatsAppStatus implements controller.WhatsAppReader: what the Graph API says of the sender's
// number (GET /{phone-number-id}) and of its business account's payment (GET /{waba-id}); nil
// when the sender's WhatsApp does not go through a meta Provider.
func (r *Registry) WhatsAppStatus(ctx context.Context, snd *v1alpha1.Sender) (*v1alpha1.WhatsAppStatus, error) {
	t, token, err := r.whatsAppAccount(ctx, snd)
	if t == nil || err != nil {
		return nil, err
	}
	phone, err := t.PhoneNumber(ctx, token, snd.AccountID(v1alpha1.ChannelWhatsApp))
	if err != nil {
		return nil, err
	}
	st := &v1alpha1.WhatsAppStatus{PhoneNumberID: snd.AccountID(v1alpha1.ChannelWhatsApp), DisplayPhoneNumber: phone.DisplayPhoneNumber,
		VerifiedName: phone.VerifiedName, QualityRating: phone.QualityRating, SetupStatus: phone.SetupStatus()}
	if waba := snd.Spec.WhatsApp.BusinessAccountID; waba != "" {
		pay, err := t.PaymentStatus(ctx, token, waba)
		if err != nil {
			return nil, err
		}
		st.CanSendTemplates = pay.CanSendTemplates()
		st.PaymentMethodStatus = "missing"
		if pay.MethodSet() {
			st.PaymentMethodStatus = "active"
		}
	}
	return st, nil
}

// FetchMedia reads a file a contact sent to the sender's WhatsApp, through the Graph API
// (callback.Media), before Meta's link to it expires.
func (r *Registry) FetchMedia(ctx context.Context, snd *v1alpha1.Sender, mediaID string) ([]byte, string, error) {
	t, token, err := r.whatsAppAccount(ctx, snd)
	if err != nil {
		return nil, "", err
	}
	if t == nil {
		return nil, "", fmt.Errorf("sender %s has no WhatsApp through a meta Provider", snd.Name)
	}
	return t.DownloadMedia(ctx, token, mediaID)
}

// FetchAttachment reads a file a contact sent on Messenger or Instagram from Meta's CDN
// (callback.Media), through the meta Provider of the sender's channel, before the link expires.
func (r *Registry) FetchAttachment(ctx context.Context, snd *v1alpha1.Sender, ch v1alpha1.Channel, rawURL string) ([]byte, string, error) {
	p, _, err := r.provider(ctx, snd, ch)
	if err != nil {
		return nil, "", err
	}
	if p == nil || p.Spec.Type != v1alpha1.ProviderMeta {
		return nil, "", fmt.Errorf("sender %s has no %s through a meta Provider", snd.Name, ch)
	}
	t, err := r.MetaOf(ctx, p)
	if err != nil {
		return nil, "", err
	}
	return t.DownloadAttachment(ctx, rawURL)
}
