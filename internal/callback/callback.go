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
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/call"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/templatereview"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
	"github.com/switchboard-io/switchboard/internal/whatsappsync"
)

// maxBody bounds a callback's body: a status or an SMS is a few kilobytes, a Telegram update
// tens of them, a batch of Meta's at most meta.WebhookMaxBody.
const maxBody = 4 << 20

// Handler serves /callbacks/.
type Handler struct {
	Messages *message.Service
	// Calls holds voice calls; nil serves none of their callbacks.
	Calls *call.Service
	// WhatsAppSync takes what coexistence numbers' WhatsApp Business apps sync; nil ignores it.
	WhatsAppSync *whatsappsync.Service
	// Reader reads Providers, Senders and their Secrets (the informer cache). Nothing a request
	// names before it is verified is read anywhere else: an unauthenticated caller cannot make
	// Switchboard read the API server.
	Reader client.Reader
	// Live reads the API server itself: only to apply a verified template verdict again after
	// a conflict.
	Live client.Reader
	// PublicURL is the address providers were given; Twilio signs the URL it called.
	PublicURL string
	// InstallationNamespace holds the Providers every project may use.
	InstallationNamespace string
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
	// botWaits counts the Telegram updates waiting for the cache (telegramBot).
	botWaits atomic.Int32
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
		if h.Calls != nil {
			mux.HandleFunc("POST /callbacks/twilio/{namespace}/{provider}/call-status", h.twilioCallStatus)
			mux.HandleFunc("POST /callbacks/twilio/{namespace}/{provider}/call-amd", h.twilioCallAMD)
			mux.HandleFunc("POST /callbacks/twilio/{namespace}/{provider}/relay-ended", h.twilioRelayEnded)
			mux.HandleFunc("POST /callbacks/twilio/{namespace}/{provider}/voice", h.twilioVoice)
			mux.HandleFunc("GET /callbacks/twilio/{namespace}/{provider}/relay", h.twilioRelay)
		}
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

// senderWhere finds the live (not sandboxed) sender for which match holds among those whose
// channel ch goes through p; the oldest wins when several do.
func (h *Handler) senderWhere(ctx context.Context, p *v1alpha1.Provider, ch v1alpha1.Channel, match func(*v1alpha1.Sender) bool) (*v1alpha1.Sender, error) {
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
		if found != nil && !s.CreationTimestamp.Before(&found.CreationTimestamp) {
			continue
		}
		through, err := h.through(ctx, p, s, ch)
		if err != nil {
			return nil, err
		}
		if through {
			found = s
		}
	}
	return found, nil
}

// through says whether the sender's channel ch goes through p (v1alpha1.ResolveProvider): an
// account that two projects' senders both claim reaches only the one whose Provider it came by.
func (h *Handler) through(ctx context.Context, p *v1alpha1.Provider, snd *v1alpha1.Sender, ch v1alpha1.Channel) (bool, error) {
	var own, installation v1alpha1.ProviderList
	if err := h.Reader.List(ctx, &own, client.InNamespace(snd.Namespace)); err != nil {
		return false, fmt.Errorf("list providers of %s: %w", snd.Namespace, err)
	}
	if h.InstallationNamespace != "" && h.InstallationNamespace != snd.Namespace {
		if err := h.Reader.List(ctx, &installation, client.InNamespace(h.InstallationNamespace)); err != nil {
			return false, fmt.Errorf("list installation providers: %w", err)
		}
	}
	got, _ := v1alpha1.ResolveProvider(ch, snd.ProviderName(ch), own.Items, installation.Items)
	return got != nil && got.Namespace == p.Namespace && got.Name == p.Name, nil
}

// via is what a callback through p may move: the messages sent through p.
func (h *Handler) via(p *v1alpha1.Provider) message.Via {
	v := message.Via{Provider: p.Namespace + "/" + p.Name}
	if p.Namespace != h.InstallationNamespace {
		v.Project = p.Namespace
	}
	return v
}

// publicURL is the address the provider called: the public URL's origin and the request's
// path and query.
func (h *Handler) publicURL(r *http.Request) string {
	return strings.TrimRight(h.PublicURL, "/") + r.URL.RequestURI()
}

// applyStatus moves the message a provider reports on, among those sent through p. A Twilio
// callback's URL names the message (messageID: transport.CallbackMessageParam, signed with the
// rest of the URL), so a report that overtakes the dispatcher's commit of the provider's id
// still applies; Meta signs no URL, so its callbacks name none. A message Switchboard did not
// send through p (another project's, or none) is acknowledged and logged, so the provider does
// not retry it, and nothing moves.
func (h *Handler) applyStatus(ctx context.Context, p *v1alpha1.Provider, u transport.StatusUpdate, messageID string) error {
	if u.Status == "" || u.ProviderMessageID == "" {
		return nil
	}
	via := h.via(p)
	known, err := h.Messages.KnowsProviderID(ctx, via, u.ProviderMessageID)
	if err != nil {
		return err
	}
	ch := message.StatusChange{ProviderMessageID: u.ProviderMessageID, Status: u.Status, Failure: u.Failure, Via: via}
	if !known {
		ch.MessageID = messageID
		if ch.MessageID == "" {
			h.Log.Info("status callback for a message Switchboard did not send through this provider", "provider", via.Provider,
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
