// Package callback serves what providers post back to the installation's public URL, under
// /callbacks/<provider>/: delivery receipts, which move messages through the message
// lifecycle's ApplyStatus, and inbound messages, which arrive through its Receive exactly as the
// sandbox's do. Every request is verified with the provider's own signature before anything in
// it is read; a forged or unsigned one changes nothing.
package callback

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/templatereview"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
)

// maxBody bounds a callback's body: a status or an SMS is a few kilobytes, a Telegram update
// tens of them, a batch of Meta's at most meta.WebhookMaxBody.
const maxBody = 4 << 20

// Handler serves /callbacks/.
type Handler struct {
	Messages *message.Service
	// Reader reads Providers, Senders and their Secrets (the informer cache).
	Reader client.Reader
	// Live reads the API server itself, for what the cache may not have seen yet (a bot
	// attached a moment ago, whose first update can arrive before the cache hears of it).
	Live client.Reader
	// PublicURL is the address providers were given; Twilio signs the URL it called.
	PublicURL string
	// InstallationNamespace holds the Providers every project may use.
	InstallationNamespace string
	// TelegramKey derives each bot's webhook secret token (telegram.WebhookSecret).
	TelegramKey []byte
	// Bots reaches the Bot API as a sender's bot (to answer a button press); nil answers none.
	Bots Bots
	// Templates applies providers' template verdicts; nil ignores them.
	Templates *templatereview.Reviewer
	// Media fetches the files contacts send (WhatsApp's media ids, Messenger's and Instagram's CDN
	// URLs); nil keeps only the ids and URLs.
	Media Media
	Log   logr.Logger

	mux *http.ServeMux
	// unknownAccounts are the provider accounts already logged as having no sender.
	unknownAccounts sync.Map
}

// Media reads a file a contact sent to a sender's account (the transport registry).
type Media interface {
	FetchMedia(ctx context.Context, snd *v1alpha1.Sender, mediaID string) ([]byte, string, error)
	// FetchAttachment reads a Messenger or Instagram attachment from the CDN URL of the webhook.
	FetchAttachment(ctx context.Context, snd *v1alpha1.Sender, ch v1alpha1.Channel, rawURL string) ([]byte, string, error)
}

// Bots is the Bot API a sender's bot uses (the transport registry).
type Bots interface {
	API(ctx context.Context, snd *v1alpha1.Sender) telegram.Client
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.mux == nil {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /callbacks/twilio/{namespace}/{provider}/status", h.twilioStatus(false))
		mux.HandleFunc("POST /callbacks/twilio/{namespace}/{provider}/calls", h.twilioStatus(true))
		mux.HandleFunc("POST /callbacks/twilio/{namespace}/{provider}/inbound", h.twilioInbound)
		mux.HandleFunc("POST /callbacks/telegram/{namespace}/{sender}/updates", h.telegramUpdate)
		mux.HandleFunc("GET /callbacks/meta/{namespace}/{provider}", h.metaHandshake)
		mux.HandleFunc("POST /callbacks/meta/{namespace}/{provider}", h.metaWebhook)
		h.mux = mux
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	h.mux.ServeHTTP(w, r)
}

// refuse answers a request that could not be verified; nothing in it was read.
func refuse(w http.ResponseWriter, status int, why string) {
	http.Error(w, why, status)
}

// provider reads the Provider namespace/name of type typ, with its Secret's data.
func (h *Handler) provider(ctx context.Context, namespace, name string, typ v1alpha1.ProviderType) (*v1alpha1.Provider, map[string][]byte, error) {
	var p v1alpha1.Provider
	if err := h.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
		return nil, nil, err
	}
	if p.Spec.Type != typ {
		return nil, nil, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("providers").GroupResource(), name)
	}
	if p.Spec.SecretRef == nil {
		return &p, nil, nil
	}
	var s corev1.Secret
	if err := h.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Spec.SecretRef.Name}, &s); err != nil {
		return nil, nil, fmt.Errorf("read the credentials of provider %s: %w", name, err)
	}
	return &p, s.Data, nil
}

// scope lists what a Provider serves: its project, or every project for an installation Provider.
func (h *Handler) scope(p *v1alpha1.Provider) []client.ListOption {
	if p.Namespace == h.InstallationNamespace {
		return nil
	}
	return []client.ListOption{client.InNamespace(p.Namespace)}
}

// senderWhere finds the live (not sandboxed) sender for which match holds among those p
// serves; the oldest wins when several do.
func (h *Handler) senderWhere(ctx context.Context, p *v1alpha1.Provider, match func(*v1alpha1.Sender) bool) (*v1alpha1.Sender, error) {
	var list v1alpha1.SenderList
	if err := h.Reader.List(ctx, &list, h.scope(p)...); err != nil {
		return nil, err
	}
	var found *v1alpha1.Sender
	for i := range list.Items {
		s := &list.Items[i]
		if !s.DeletionTimestamp.IsZero() || s.Spec.Transport == v1alpha1.TransportSandbox || !match(s) {
			continue
		}
		if found == nil || s.CreationTimestamp.Before(&found.CreationTimestamp) {
			found = s
		}
	}
	return found, nil
}

// publicURL is the address the provider called: the public URL's origin and the request's
// path and query.
func (h *Handler) publicURL(r *http.Request) string {
	return strings.TrimRight(h.PublicURL, "/") + r.URL.RequestURI()
}

// applyStatus moves the message a provider reports on. The callback URL names the message
// (transport.CallbackMessageParam, signed with the rest of the URL), so a report that overtakes
// the dispatcher's commit of the provider's id still applies. An id Switchboard does not know is
// acknowledged, and logged once, so the provider does not retry it.
func (h *Handler) applyStatus(ctx context.Context, r *http.Request, u transport.StatusUpdate, provider string) error {
	if u.Status == "" || u.ProviderMessageID == "" {
		return nil
	}
	known, err := h.Messages.KnowsProviderID(ctx, u.ProviderMessageID)
	if err != nil {
		return err
	}
	ch := message.StatusChange{ProviderMessageID: u.ProviderMessageID, Status: u.Status, Failure: u.Failure}
	if !known {
		ch.MessageID = r.URL.Query().Get(transport.CallbackMessageParam)
		if ch.MessageID == "" {
			h.Log.Info("status callback for a message Switchboard did not send", "provider", provider,
				"providerMessageId", u.ProviderMessageID, "status", u.Status)
			return nil
		}
	}
	_, err = h.Messages.ApplyProviderStatus(ctx, ch)
	return err
}

// refusedInbound turns the refusal of a contact's message past the project's monthly allowance
// into success (logged): the provider must not post it again, and it is not kept for later.
func (h *Handler) refusedInbound(err error, project, channel string) error {
	if errors.Is(err, message.ErrInboundRefused) {
		h.Log.Info("inbound message refused: the project's monthly allowance is used up", "project", project, "channel", channel)
		return nil
	}
	return err
}

// internalError answers 500, so the provider tries again later, and logs why.
func (h *Handler) internalError(w http.ResponseWriter, err error, what string) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	h.Log.Error(err, "callback failed", "callback", what)
	http.Error(w, "internal error", http.StatusInternalServerError)
}
