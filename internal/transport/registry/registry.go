// Package registry picks the transports of each message (message.Transports): the sandbox for
// every test key; for live keys, the sandbox when the sender simulates (spec.transport sandbox),
// else the transports of the Providers the sender's route for the channel and destination names,
// in the order they are tried (docs/transports.md, docs/providers.md#routes).
//
// A new transport plugs in here: one case in transportOf (how to build it from its Provider and
// credentials) and, when it has callbacks, a handler in internal/callback.
package registry

import (
	"context"
	"crypto"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/routing"
	"github.com/switchboard-io/switchboard/internal/transport"
	metatransport "github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/sandbox"
	"github.com/switchboard-io/switchboard/internal/transport/smtp"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// Errors a message fails with when nothing can carry it (docs/transports.md).
const (
	ErrSenderGone       = "SENDER_NOT_FOUND"
	ErrNoProvider       = "PROVIDER_NOT_CONFIGURED"
	ErrProviderNotReady = "PROVIDER_NOT_READY"
)

// Registry picks transports.
type Registry struct {
	Sandbox *sandbox.Sandbox
	// Reader reads Senders, Providers and their Secrets (the informer cache).
	Reader client.Reader
	// InstallationNamespace holds the Providers every project may use.
	InstallationNamespace string
	// PublicURL is where providers call back (--public-url); empty asks for no status callbacks.
	PublicURL string
	// TelegramAPI is the Bot API used by telegram channels whose Provider names no baseURL, and
	// by those with no telegram Provider at all: a bot needs no account besides its token.
	TelegramAPI string
	// AllowProjectEndpoints lets Providers in projects' namespaces replace their provider's
	// address (baseURL); otherwise only the installation's do (v1alpha1.Provider.EndpointAllowed).
	AllowProjectEndpoints bool
	// HTTP is the client of provider calls; nil is a client with a 30 s timeout.
	HTTP *http.Client
	// AttachmentHTTP fetches the attachments of email given by URL: URLs from API clients, so
	// a client under the webhook deliveries' address rules (delivery.ClientOptions.HTTPClient).
	AttachmentHTTP *http.Client

	// Circuits are the Providers' circuit breakers; nil orders routes without them.
	Circuits Circuits
	// Prices finds the PriceList whose providerCosts least-cost routes compare; nil keeps the
	// routes' order.
	Prices PriceLists

	twilio versioned[*twilio.Transport]        // by Provider UID, generation and Secret version
	relays versioned[*smtp.Transport]          // the same
	metas  versioned[*metatransport.Transport] // the same
	keys   versioned[crypto.Signer]            // DKIM keys, by Secret UID and version
}

// Routes implements message.Transports: the routes of m in the order they are tried.
func (r *Registry) Routes(ctx context.Context, m db.Message) ([]message.Route, error) {
	if m.TestMode {
		return []message.Route{{Transport: r.Sandbox}}, nil
	}
	var snd v1alpha1.Sender
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: m.Project, Name: m.Sender}, &snd)
	if apierrors.IsNotFound(err) {
		return nil, &transport.Failure{Code: ErrSenderGone,
			Message: fmt.Sprintf("Sender %s was deleted before the message was sent.", m.Sender)}
	}
	if err != nil {
		return nil, fmt.Errorf("read sender %s: %w", m.Sender, err)
	}
	if snd.Spec.Transport == v1alpha1.TransportSandbox {
		return []message.Route{{Transport: r.Sandbox}}, nil
	}
	ch := v1alpha1.Channel(m.Channel)
	if err := r.numberFailure(ctx, &snd, ch); err != nil {
		return nil, err
	}
	scope, err := r.scope(ctx, snd.Namespace)
	if err != nil {
		return nil, err
	}
	plan, reason := snd.RouteFor(ch, m.Recipient, scope)
	if len(plan.Providers) == 0 {
		if ch == v1alpha1.ChannelTelegram {
			route, err := r.transportOf(ctx, nil, &snd, ch, m.ID)
			return []message.Route{route}, err
		}
		return nil, &transport.Failure{Code: ErrNoProvider, Message: reason}
	}
	ps, err := r.order(ctx, snd.Namespace, m.Channel, m.Recipient, plan)
	if err != nil {
		return nil, err
	}
	routes, err := r.routesThrough(ctx, ps, &snd, ch, m.ID)
	for i := range routes {
		if routes[i].StatusCallback != "" {
			// The callback names the message, so a report that overtakes the commit of the
			// provider's id still finds it (the provider signs the whole URL).
			routes[i].StatusCallback += "?" + url.Values{transport.CallbackMessageParam: {m.ID}}.Encode()
		}
	}
	return routes, err
}

// transportOf builds the route of message messageID through p (nil only for telegram: the
// public Bot API).
func (r *Registry) transportOf(ctx context.Context, p *v1alpha1.Provider, snd *v1alpha1.Sender, ch v1alpha1.Channel, messageID string) (message.Route, error) {
	typ := v1alpha1.ProviderTelegram
	if p != nil {
		typ = p.Spec.Type
	}
	switch typ {
	case v1alpha1.ProviderTwilio:
		t, err := r.twilioOf(ctx, p)
		if err != nil {
			return message.Route{}, err
		}
		callback := ""
		if r.PublicURL != "" {
			kind := "status"
			if ch == v1alpha1.ChannelVoice {
				kind = "calls"
			}
			callback = CallbackURL(r.PublicURL, "twilio", p.Namespace, p.Name, kind)
		}
		return message.Route{Transport: t, StatusCallback: callback, External: true}, nil
	case v1alpha1.ProviderSMTP:
		return r.emailRoute(ctx, p, snd, messageID)
	case v1alpha1.ProviderMeta:
		return r.metaRoute(ctx, p, snd, ch)
	case v1alpha1.ProviderTelegram:
		token, err := r.accountToken(ctx, snd, ch)
		if err != nil {
			return message.Route{}, err
		}
		return message.Route{Transport: telegram.Transport{Client: r.botAPI(p)},
			AccountToken: token, External: true}, nil
	}
	return message.Route{}, &transport.Failure{Code: ErrNoProvider, Message: fmt.Sprintf(
		"Provider %s is of type %s, whose transport this installation does not run yet.", p.Name, p.Spec.Type)}
}

// provider resolves the Provider of the sender's channel: the one it names, else its project's
// default, else the installation's.
func (r *Registry) provider(ctx context.Context, snd *v1alpha1.Sender, ch v1alpha1.Channel) (*v1alpha1.Provider, string, error) {
	return r.providerIn(ctx, snd.Namespace, ch, snd.ProviderName(ch))
}

// providerIn is the Provider of channel ch for project: the one named, else the project's
// default, else the installation's.
func (r *Registry) providerIn(ctx context.Context, project string, ch v1alpha1.Channel, name string) (*v1alpha1.Provider, string, error) {
	own, installation, err := r.providers(ctx, project)
	if err != nil {
		return nil, "", err
	}
	p, reason := v1alpha1.ResolveProvider(ch, name, own, installation)
	return p, reason, nil
}

// providers are the Providers of project's namespace and of the installation's.
func (r *Registry) providers(ctx context.Context, project string) (own, installation []v1alpha1.Provider, err error) {
	var o, i v1alpha1.ProviderList
	if err := r.Reader.List(ctx, &o, client.InNamespace(project)); err != nil {
		return nil, nil, fmt.Errorf("list providers of %s: %w", project, err)
	}
	if r.InstallationNamespace != "" && r.InstallationNamespace != project {
		if err := r.Reader.List(ctx, &i, client.InNamespace(r.InstallationNamespace)); err != nil {
			return nil, nil, fmt.Errorf("list installation providers: %w", err)
		}
	}
	return o.Items, i.Items, nil
}

// firstProvider is the Provider a sender's channel uses first when the destination is not known
// (what a send may be refused for at accept, what paces a broadcast): its route for every
// destination, else its channel's Provider or the default, else the first Provider of any of
// its routes of the channel.
func (r *Registry) firstProvider(ctx context.Context, snd *v1alpha1.Sender, ch v1alpha1.Channel) (*v1alpha1.Provider, string, error) {
	scope, err := r.scope(ctx, snd.Namespace)
	if err != nil {
		return nil, "", err
	}
	plan, reason := snd.RouteFor(ch, "", scope)
	if len(plan.Providers) > 0 {
		return plan.Providers[0], "", nil
	}
	for _, routes := range [][]v1alpha1.ChannelRoute{snd.Spec.Routes, scope.ProjectRoutes, scope.InstallationRoutes} {
		for _, route := range routes {
			if route.Channel != ch || len(route.Prefixes) == 0 {
				continue
			}
			if plan, _ := snd.RouteFor(ch, route.Prefixes[0], scope); len(plan.Providers) > 0 {
				return plan.Providers[0], "", nil
			}
		}
	}
	return nil, reason, nil
}

// scope is what the senders of project may route through (routing.Scope).
func (r *Registry) scope(ctx context.Context, project string) (v1alpha1.RoutingScope, error) {
	return routing.Scope(ctx, r.Reader, project, r.InstallationNamespace)
}

// unusable fails a message whose Provider cannot work until someone fixes it: its Secret is
// missing or incomplete, or the provider refused its credentials. A provider that is merely
// unreachable is tried: the send's own retries cover an outage.
func unusable(p *v1alpha1.Provider) *transport.Failure {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status == "True" {
		return nil
	}
	switch c.Reason {
	case v1alpha1.ReasonSecretNotFound, v1alpha1.ReasonSecretIncomplete, v1alpha1.ReasonCredentialsRejected, v1alpha1.ReasonEndpointNotAllowed:
		return &transport.Failure{Code: ErrProviderNotReady, ProviderFault: true, Message: fmt.Sprintf("Provider %s is not ready: %s", p.Name, c.Message)}
	}
	return nil
}

// twilioOf is the transport of a twilio Provider, built once per version of it and its Secret.
func (r *Registry) twilioOf(ctx context.Context, p *v1alpha1.Provider) (*twilio.Transport, error) {
	secret, err := r.credentials(ctx, p)
	if err != nil {
		return nil, err
	}
	return r.twilio.get(fmt.Sprintf("%s/%d/%s", p.UID, p.Generation, secret.ResourceVersion), string(p.UID)+"/",
		func() (*twilio.Transport, error) {
			return twilio.New(twilio.Config{BaseURL: r.endpoint(p), AccountSID: string(secret.Data["accountSid"]),
				AuthToken: string(secret.Data["authToken"]), HTTP: r.HTTP}), nil
		})
}

// credentials reads a Provider's Secret; a missing one fails the message.
func (r *Registry) credentials(ctx context.Context, p *v1alpha1.Provider) (*corev1.Secret, error) {
	if p.Spec.SecretRef == nil {
		return nil, &transport.Failure{Code: ErrProviderNotReady, ProviderFault: true, Message: fmt.Sprintf("Provider %s has no secretRef.", p.Name)}
	}
	var s corev1.Secret
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.SecretRef.Name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, &transport.Failure{Code: ErrProviderNotReady, ProviderFault: true, Message: fmt.Sprintf(
			"Provider %s: Secret %s not found (it needs the label %s=true).", p.Name, p.Spec.SecretRef.Name, v1alpha1.SecretLabel)}
	}
	if err != nil {
		return nil, fmt.Errorf("read the credentials of provider %s: %w", p.Name, err)
	}
	if missing := p.Spec.Type.MissingCredentialKeys(s.Data); len(missing) > 0 {
		return nil, &transport.Failure{Code: ErrProviderNotReady, ProviderFault: true, Message: fmt.Sprintf(
			"Provider %s: Secret %s lacks %s.", p.Name, s.Name, strings.Join(missing, ", "))}
	}
	return &s, nil
}

// accountToken reads the sender's own credential on ch (a bot token).
func (r *Registry) accountToken(ctx context.Context, snd *v1alpha1.Sender, ch v1alpha1.Channel) (string, error) {
	ref := snd.Credentials(ch)
	if ref == nil {
		return "", &transport.Failure{Code: ErrProviderNotReady, Message: fmt.Sprintf("Sender %s has no %s credentials.", snd.Name, ch)}
	}
	var s corev1.Secret
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: snd.Namespace, Name: ref.Name}, &s)
	if apierrors.IsNotFound(err) || (err == nil && len(s.Data[ref.Key]) == 0) {
		return "", &transport.Failure{Code: ErrProviderNotReady, Message: fmt.Sprintf(
			"Sender %s: Secret %s with key %s not found.", snd.Name, ref.Name, ref.Key)}
	}
	if err != nil {
		return "", fmt.Errorf("read the %s credentials of sender %s: %w", ch, snd.Name, err)
	}
	return string(s.Data[ref.Key]), nil
}

// Available refuses, at accept, a live message that nothing could carry: no Provider serves
// the sender's channel. strict answers as v2 does (409 no_channel), else 400 invalid_request.
func (r *Registry) Available(ctx context.Context, testMode bool, snd *v1alpha1.Sender, channel string, strict bool) error {
	if testMode || snd.Spec.Transport == v1alpha1.TransportSandbox {
		return nil
	}
	ch := v1alpha1.Channel(channel)
	if err := r.numberRefused(ctx, snd, ch, strict); err != nil {
		return err
	}
	p, reason, err := r.firstProvider(ctx, snd, ch)
	if err != nil {
		return err
	}
	if p == nil && ch == v1alpha1.ChannelTelegram {
		return nil
	}
	if p != nil && (p.Spec.Type == v1alpha1.ProviderTwilio || p.Spec.Type == v1alpha1.ProviderTelegram || p.Spec.Type == v1alpha1.ProviderMeta) {
		return nil
	}
	if p != nil && p.Spec.Type == v1alpha1.ProviderSMTP {
		return r.emailAvailable(ctx, snd, strict)
	}
	if p != nil {
		reason = fmt.Sprintf("Provider %s is of type %s, whose transport this installation does not run yet", p.Name, p.Spec.Type)
	}
	msg := fmt.Sprintf("Sender %s cannot send live %s messages: %s.", snd.Name, channel, reason)
	if strict {
		e := apperror.New(apperror.Conflict, "no_channel", msg)
		e.Details = map[string]any{"connect": []map[string]any{{"type": channel,
			"description": "create a Provider that serves " + channel + " (docs/providers.md)"}}}
		return e
	}
	return apperror.InvalidFields(apperror.FieldError{Path: "channel", Message: msg})
}

// Carries says whether channel can carry messageType to the recipient (message.Carries):
// Telegram has no templates; Instagram and Messenger carry what Meta's Send API does; an MMS
// goes only where the destination takes one.
func Carries(channel, messageType, to string) bool {
	switch v1alpha1.Channel(channel) {
	case v1alpha1.ChannelTelegram:
		return telegram.Supports(messageType)
	case v1alpha1.ChannelInstagram:
		return metatransport.InstagramCarries(messageType)
	case v1alpha1.ChannelMessenger:
		return metatransport.MessengerCarries(messageType)
	case v1alpha1.ChannelWhatsApp:
		return metatransport.WhatsAppCarries(messageType)
	case v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway:
		if messageType != "text" && messageType != "template" {
			return twilio.MMSAllowed(to)
		}
	}
	return true
}

// CallbackURL is where provider kind calls back for the Provider namespace/name: under
// /callbacks/<kind>/ on the public URL.
func CallbackURL(publicURL, kind, namespace, name, what string) string {
	return strings.TrimRight(publicURL, "/") + "/callbacks/" + kind + "/" + url.PathEscape(namespace) + "/" +
		url.PathEscape(name) + "/" + what
}

// API is the Bot API of the sender's bots (sender.Bots): its telegram Provider's baseURL, else
// TelegramAPI.
func (r *Registry) API(ctx context.Context, snd *v1alpha1.Sender) telegram.Client {
	p, _, err := r.provider(ctx, snd, v1alpha1.ChannelTelegram)
	if err != nil {
		p = nil // the default address; the send path reports the trouble
	}
	return r.botAPI(p)
}

// botAPI is the Bot API of telegram Provider p (nil: none): its endpoint, else TelegramAPI.
func (r *Registry) botAPI(p *v1alpha1.Provider) telegram.Client {
	if p != nil {
		if api := r.endpoint(p); api != "" {
			return telegram.Client{API: api, HTTP: r.HTTP}
		}
	}
	return telegram.Client{API: r.TelegramAPI, HTTP: r.HTTP}
}

// endpoint is p's baseURL when p may set one, else "" (the provider's public address): a
// project's own endpoint could answer for the provider, e.g. claim another project's bot id.
func (r *Registry) endpoint(p *v1alpha1.Provider) string {
	if !p.EndpointAllowed(r.InstallationNamespace, r.AllowProjectEndpoints) {
		return ""
	}
	return p.Spec.BaseURL
}

// Webhook is where the sender's bot posts its updates (sender.Bots); "" without a public URL.
func (r *Registry) Webhook(snd *v1alpha1.Sender) string {
	if r.PublicURL == "" {
		return ""
	}
	return CallbackURL(r.PublicURL, "telegram", snd.Namespace, snd.Name, "updates")
}

// LookupLineType implements phonecheck.Lookup: the carrier and Twilio line type of number, from
// the Lookup API of the twilio Provider that carries the project's SMS (its own default, else the
// installation's). ok is false when no twilio Provider serves the project, or Twilio knows
// nothing of the number.
func (r *Registry) LookupLineType(ctx context.Context, project, number string) (carrier, lineType string, ok bool, err error) {
	p, _, err := r.providerIn(ctx, project, v1alpha1.ChannelSMS, "")
	if err != nil {
		return "", "", false, err
	}
	if p == nil || p.Spec.Type != v1alpha1.ProviderTwilio || unusable(p) != nil {
		return "", "", false, nil
	}
	t, err := r.twilioOf(ctx, p)
	if err != nil {
		return "", "", false, err
	}
	lt, ok, err := t.LookupLineType(ctx, number)
	return lt.Carrier, lt.Type, ok, err
}

// Pace is how fast a broadcast may send from the sender's address on channel: the key its
// sends share (Provider and address) and the Provider's messagesPerSecond; 0 when unpaced (test
// traffic, the sandbox, and a Provider that sets none).
func (r *Registry) Pace(ctx context.Context, testMode bool, snd *v1alpha1.Sender, channel string) (string, float64, error) {
	if testMode || snd.Spec.Transport == v1alpha1.TransportSandbox {
		return "", 0, nil
	}
	p, _, err := r.firstProvider(ctx, snd, v1alpha1.Channel(channel))
	if err != nil || p == nil || p.Spec.MessagesPerSecond == nil {
		return "", 0, err
	}
	return p.Namespace + "/" + p.Name + "/" + snd.Address(v1alpha1.Channel(channel)), float64(*p.Spec.MessagesPerSecond), nil
}
