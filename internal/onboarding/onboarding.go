// Package onboarding connects a client's accounts through Meta for an invitation's connection
// page: WhatsApp Business accounts through Embedded Signup, Facebook Pages through Facebook
// Login. What a connection grants becomes a Sender of the inviting project, its token a Secret
// the Sender references (docs/invitations.md).
package onboarding

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"

	"github.com/nyaruka/phonenumbers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/connectpage"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/invitation"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	metatransport "github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/registry"
)

// Apps resolves the Meta app of a project's channel (registry.Registry).
type Apps interface {
	MetaApp(ctx context.Context, project string, ch v1alpha1.Channel) (registry.MetaApp, error)
}

// Connector implements connectpage.Connector through Meta.
type Connector struct {
	Apps Apps
	// Client writes Secrets and Senders and reads them from the informer cache; Live reads
	// before a write.
	Client client.Client
	Live   client.Reader
	// Events records on a Sender that its Page moved to another project.
	Events record.EventRecorder
}

var _ connectpage.Connector = (*Connector)(nil)

// Facebook Login permissions a Messenger connection needs: list the Pages, message through
// them, and subscribe the app to their webhooks.
var messengerScopes = []string{"pages_show_list", "pages_messaging", "pages_manage_metadata"}

// WhatsApp permissions Embedded Signup grants on the client's WABA.
const wabaManagement = "whatsapp_business_management"

// WhatsAppSignup implements connectpage.Connector.
func (c *Connector) WhatsAppSignup(ctx context.Context, inv *v1alpha1.Invitation) (connectpage.Signup, error) {
	app, err := c.Apps.MetaApp(ctx, inv.Namespace, v1alpha1.ChannelWhatsApp)
	if err != nil {
		return connectpage.Signup{}, err
	}
	setup := map[string]any{}
	if id := inv.Spec.PhoneNumberID; id != "" {
		// A number of the service's, verified beforehand: the client picks it instead of one of theirs.
		setup["preVerifiedPhone"] = map[string]any{"ids": []string{id}}
	}
	return connectpage.Signup{AppID: app.AppID, ConfigID: app.ConfigID, Version: app.Version, SDKURL: app.SDKURL,
		Origin: origin(app.DialogURL), Extras: map[string]any{"setup": setup, "featureType": "", "sessionInfoVersion": "3"}}, nil
}

// origin is the scheme and host of a URL: where the Embedded Signup's messages come from.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}

// LoginURL implements connectpage.Connector: Facebook Login's dialog with the Page permissions.
func (c *Connector) LoginURL(ctx context.Context, inv *v1alpha1.Invitation, redirectURI, state string) (string, error) {
	app, err := c.Apps.MetaApp(ctx, inv.Namespace, v1alpha1.ChannelMessenger)
	if err != nil {
		return "", err
	}
	q := url.Values{"client_id": {app.AppID}, "redirect_uri": {redirectURI}, "state": {state}, "response_type": {"code"},
		"scope": {strings.Join(messengerScopes, ",")}}
	return app.DialogURL + "/" + app.Version + "/dialog/oauth?" + q.Encode(), nil
}

// internal is a failure of ours or the provider's: the client may try again.
func internal(err error) error {
	return &connectpage.Failure{Reason: v1alpha1.FailureInternalError, Err: err}
}

// ConnectWhatsApp implements connectpage.Connector: the code becomes the client's token; the
// WABA must be one the token was granted; the number (the pre-assigned one, else the one the
// client chose) is registered for the Cloud API with a new two-step PIN, the app subscribes to
// the WABA's webhooks, and the Sender is made.
func (c *Connector) ConnectWhatsApp(ctx context.Context, inv *v1alpha1.Invitation, code string, session connectpage.WhatsAppSession) (invitation.Connected, error) {
	app, err := c.Apps.MetaApp(ctx, inv.Namespace, v1alpha1.ChannelWhatsApp)
	if err != nil {
		return invitation.Connected{}, internal(err)
	}
	token, err := app.Graph.ExchangeCode(ctx, app.AppID, app.AppSecret, code, "")
	if err != nil {
		return invitation.Connected{}, internal(fmt.Errorf("exchange the Embedded Signup's code: %w", err))
	}
	scopes, err := app.Graph.GrantedScopes(ctx, app.AppID, app.AppSecret, token)
	if err != nil {
		return invitation.Connected{}, internal(fmt.Errorf("read what the signup granted: %w", err))
	}
	wabas := scopes[wabaManagement]
	waba := session.WABAID
	if waba == "" && len(wabas) == 1 {
		waba = wabas[0]
	}
	if waba == "" || !slices.Contains(wabas, waba) {
		return invitation.Connected{}, &connectpage.Failure{Reason: v1alpha1.FailureSocialNotAuthorized,
			Err: fmt.Errorf("the signup granted no access to WhatsApp Business account %q (granted: %v)", waba, wabas)}
	}
	phones, err := app.Graph.WABAPhoneNumbers(ctx, token, waba)
	if err != nil {
		return invitation.Connected{}, internal(fmt.Errorf("read the numbers of WABA %s: %w", waba, err))
	}
	var phone metatransport.BusinessPhone
	if pre := inv.Spec.PhoneNumberID; pre != "" {
		// The number the invitation provides, whatever else the client has: it joined their
		// WABA under an id of its own, found by its number.
		number, err := app.Graph.PreVerifiedNumber(ctx, pre)
		if err != nil {
			return invitation.Connected{}, internal(fmt.Errorf("read pre-verified number %s: %w", pre, err))
		}
		phone, err = phoneByNumber(phones, number)
		if err != nil {
			return invitation.Connected{}, internal(err)
		}
	} else if phone, err = chosenPhone(phones, session.PhoneNumberID); err != nil {
		return invitation.Connected{}, internal(err)
	}
	if !allowedCountry(phone.DisplayPhoneNumber, inv.Spec.AllowedPhoneCountries) {
		return invitation.Connected{}, &connectpage.Failure{Reason: "phone_country_not_allowed",
			Err: fmt.Errorf("number %s is not from %v", phone.DisplayPhoneNumber, inv.Spec.AllowedPhoneCountries)}
	}
	// The PIN is kept before the number is registered with it: a connection tried again (after
	// a failure, or a resend) registers the same number with the same PIN, as Meta requires of
	// a number that has one.
	secret := inv.Name + "-whatsapp"
	pin, err := c.pinOf(ctx, inv, secret, phone.ID)
	if err != nil {
		return invitation.Connected{}, internal(err)
	}
	if err := c.writeSecret(ctx, inv, secret, map[string]string{v1alpha1.ProviderKeyAccessToken: token, "pin": pin, "phoneNumberId": phone.ID}); err != nil {
		return invitation.Connected{}, internal(err)
	}
	if err := app.Graph.RegisterPhone(ctx, token, phone.ID, pin); err != nil {
		return invitation.Connected{}, internal(fmt.Errorf("register number %s: %w", phone.ID, err))
	}
	if err := app.Graph.SubscribeWABA(ctx, token, waba); err != nil {
		return invitation.Connected{}, internal(fmt.Errorf("subscribe the app to WABA %s: %w", waba, err))
	}
	name := displayName(inv, phone.VerifiedName)
	account := &v1alpha1.ConnectedAccount{AccountID: phone.ID, DisplayName: phone.VerifiedName, DisplayPhoneNumber: phone.DisplayPhoneNumber,
		BusinessAccountID: waba, CredentialsRef: &v1alpha1.SecretKeyRef{Name: secret, Key: v1alpha1.ProviderKeyAccessToken}, Active: true,
		Provider: providerRef(inv, app)}
	if err := c.writeSender(ctx, inv, name, func(s *v1alpha1.SenderSpec) { s.WhatsApp = account }); err != nil {
		return invitation.Connected{}, internal(err)
	}
	return invitation.Connected{Sender: inv.Name, WABAAccountID: waba,
		Account: v1alpha1.InvitationAccount{Channel: string(v1alpha1.ChannelWhatsApp), ID: phone.ID, Name: phone.VerifiedName}}, nil
}

// chosenPhone is the number the signup reported, else the WABA's only one.
func chosenPhone(phones []metatransport.BusinessPhone, id string) (metatransport.BusinessPhone, error) {
	for _, p := range phones {
		if p.ID == id || (id == "" && len(phones) == 1) {
			return p, nil
		}
	}
	return metatransport.BusinessPhone{}, fmt.Errorf("phone number %q is not one of the WhatsApp Business account's %d", id, len(phones))
}

// phoneByNumber is the WABA's phone whose number is number (compared digit by digit).
func phoneByNumber(phones []metatransport.BusinessPhone, number string) (metatransport.BusinessPhone, error) {
	want := strings.Map(keepDigits, number)
	for _, p := range phones {
		if strings.Map(keepDigits, p.DisplayPhoneNumber) == want {
			return p, nil
		}
	}
	return metatransport.BusinessPhone{}, fmt.Errorf("the provided number %s is not in the client's WhatsApp Business account", number)
}

// allowedCountry says whether the number is from one of the countries (all when none).
func allowedCountry(display string, countries []string) bool {
	if len(countries) == 0 {
		return true
	}
	n, err := phonenumbers.Parse("+"+strings.TrimLeft(strings.Map(keepDigits, display), "+"), "")
	if err != nil {
		return false
	}
	return slices.Contains(countries, phonenumbers.GetRegionCodeForNumber(n))
}

func keepDigits(r rune) rune {
	if r >= '0' && r <= '9' {
		return r
	}
	return -1
}

// pinOf is the PIN the invitation's Secret keeps for the number, else a new one.
func (c *Connector) pinOf(ctx context.Context, inv *v1alpha1.Invitation, secret, phoneID string) (string, error) {
	var s corev1.Secret
	err := c.Live.Get(ctx, client.ObjectKey{Namespace: inv.Namespace, Name: secret}, &s)
	switch {
	case err == nil && string(s.Data["phoneNumberId"]) == phoneID && len(s.Data["pin"]) == 6:
		return string(s.Data["pin"]), nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", fmt.Errorf("read secret %s: %w", secret, err)
	}
	return newPIN()
}

// newPIN is a number's two-step verification PIN: six random digits.
func newPIN() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

// MessengerPages implements connectpage.Connector: the code becomes the client's token; a
// permission they declined fails the connection with social_not_authorized.
func (c *Connector) MessengerPages(ctx context.Context, inv *v1alpha1.Invitation, code, redirectURI string) ([]connectpage.Page, error) {
	app, err := c.Apps.MetaApp(ctx, inv.Namespace, v1alpha1.ChannelMessenger)
	if err != nil {
		return nil, internal(err)
	}
	token, err := app.Graph.ExchangeCode(ctx, app.AppID, app.AppSecret, code, redirectURI)
	if err != nil {
		return nil, internal(fmt.Errorf("exchange the Facebook Login code: %w", err))
	}
	perms, err := app.Graph.Permissions(ctx, token)
	if err != nil {
		return nil, internal(fmt.Errorf("read the permissions granted: %w", err))
	}
	for _, p := range messengerScopes {
		if perms[p] != "granted" {
			return nil, &connectpage.Failure{Reason: v1alpha1.FailureSocialNotAuthorized, Err: fmt.Errorf("permission %s is %q", p, perms[p])}
		}
	}
	pages, err := app.Graph.Pages(ctx, token)
	if err != nil {
		return nil, internal(fmt.Errorf("list the client's Pages: %w", err))
	}
	out := make([]connectpage.Page, 0, len(pages))
	for _, p := range pages {
		if p.AccessToken != "" {
			out = append(out, connectpage.Page{ID: p.ID, Name: p.Name, AccessToken: p.AccessToken})
		}
	}
	return out, nil
}

// ConnectMessenger implements connectpage.Connector: the app subscribes to the Page's webhooks,
// its token goes into a Secret, and the Sender is made. A Page another project's sender had
// moves here: that sender loses its Messenger channel, with a Kubernetes event saying where it
// went.
func (c *Connector) ConnectMessenger(ctx context.Context, inv *v1alpha1.Invitation, page connectpage.Page) (invitation.Connected, error) {
	app, err := c.Apps.MetaApp(ctx, inv.Namespace, v1alpha1.ChannelMessenger)
	if err != nil {
		return invitation.Connected{}, internal(err)
	}
	if err := app.Graph.SubscribePage(ctx, page.AccessToken, page.ID); err != nil {
		return invitation.Connected{}, internal(fmt.Errorf("subscribe the app to Page %s: %w", page.ID, err))
	}
	secret := inv.Name + "-messenger"
	if err := c.writeSecret(ctx, inv, secret, map[string]string{v1alpha1.ProviderKeyAccessToken: page.AccessToken}); err != nil {
		return invitation.Connected{}, internal(err)
	}
	account := &v1alpha1.ConnectedAccount{AccountID: page.ID, DisplayName: page.Name,
		CredentialsRef: &v1alpha1.SecretKeyRef{Name: secret, Key: v1alpha1.ProviderKeyAccessToken}, Active: true, Provider: providerRef(inv, app)}
	if err := c.writeSender(ctx, inv, displayName(inv, page.Name), func(s *v1alpha1.SenderSpec) { s.Messenger = account }); err != nil {
		return invitation.Connected{}, internal(err)
	}
	if err := c.takePage(ctx, inv, page); err != nil {
		return invitation.Connected{}, internal(err)
	}
	return invitation.Connected{Sender: inv.Name,
		Account: v1alpha1.InvitationAccount{Channel: string(v1alpha1.ChannelMessenger), ID: page.ID, Name: page.Name}}, nil
}

// takePage removes the Page from the senders of other projects that had it.
func (c *Connector) takePage(ctx context.Context, inv *v1alpha1.Invitation, page connectpage.Page) error {
	var list v1alpha1.SenderList
	if err := c.Client.List(ctx, &list, client.MatchingFields{index.SenderMessengerPage: page.ID}); err != nil {
		return fmt.Errorf("find the senders of Page %s: %w", page.ID, err)
	}
	for i := range list.Items {
		old := &list.Items[i]
		if old.Namespace == inv.Namespace {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var s v1alpha1.Sender
			if err := c.Live.Get(ctx, client.ObjectKeyFromObject(old), &s); err != nil {
				return err
			}
			if s.Spec.Messenger == nil || s.Spec.Messenger.AccountID != page.ID {
				return nil
			}
			s.Spec.Messenger = nil
			return c.Client.Update(ctx, &s, client.FieldOwner(kubewrite.FieldManager))
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("disconnect Page %s from sender %s/%s: %w", page.ID, old.Namespace, old.Name, err)
		}
		if c.Events != nil {
			c.Events.Eventf(old, corev1.EventTypeWarning, "MessengerPageMoved",
				"Page %s (%s) was connected to project %s by invitation %s; this sender no longer has Messenger", page.Name, page.ID,
				inv.Namespace, inv.Name)
		}
	}
	return nil
}

// invitationLabel marks the Sender and Secrets a connection made with its invitation's name.
const invitationLabel = "messaging.switchboard.io/invitation"

// providerRef names the app's Provider on the sender when it is the project's own (an
// installation's default is found again without a name).
func providerRef(inv *v1alpha1.Invitation, app registry.MetaApp) string {
	if app.Provider.Namespace == inv.Namespace {
		return app.Provider.Name
	}
	return ""
}

// displayName is the sender's name: the client's, else the account's.
func displayName(inv *v1alpha1.Invitation, account string) string {
	name := inv.Spec.ClientName
	if name == "" {
		name = account
	}
	if name == "" {
		name = inv.Name
	}
	if r := []rune(name); len(r) > 100 {
		name = string(r[:100])
	}
	return name
}

// writeSecret creates or replaces the connection's Secret, owned by the invitation's namespace
// (labelled so Switchboard's cache holds it).
func (c *Connector) writeSecret(ctx context.Context, inv *v1alpha1.Invitation, name string, data map[string]string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		err := c.Live.Get(ctx, client.ObjectKey{Namespace: inv.Namespace, Name: name}, &s)
		if apierrors.IsNotFound(err) {
			s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: inv.Namespace, Name: name,
				Labels: map[string]string{v1alpha1.SecretLabel: "true", invitationLabel: inv.Name}},
				Type: corev1.SecretTypeOpaque, StringData: data}
			return c.Client.Create(ctx, &s, client.FieldOwner(kubewrite.FieldManager))
		}
		if err != nil {
			return fmt.Errorf("read secret %s: %w", name, err)
		}
		s.Data, s.StringData = nil, data
		return c.Client.Update(ctx, &s, client.FieldOwner(kubewrite.FieldManager))
	})
}

// writeSender creates the invitation's Sender (named after it) or sets the channel on it.
func (c *Connector) writeSender(ctx context.Context, inv *v1alpha1.Invitation, displayName string, set func(*v1alpha1.SenderSpec)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s v1alpha1.Sender
		err := c.Live.Get(ctx, client.ObjectKey{Namespace: inv.Namespace, Name: inv.Name}, &s)
		switch {
		case apierrors.IsNotFound(err):
			s = v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: inv.Namespace, Name: inv.Name,
				Labels: map[string]string{invitationLabel: inv.Name}},
				Spec: v1alpha1.SenderSpec{DisplayName: displayName}}
		case err != nil:
			return err
		}
		set(&s.Spec)
		return kubewrite.Write(ctx, c.Client, &s)
	})
	if err != nil {
		return fmt.Errorf("write sender %s/%s: %w", inv.Namespace, inv.Name, err)
	}
	return nil
}
