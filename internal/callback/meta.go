package callback

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
)

// metaCallbacks are the webhook of a Meta app: WhatsApp business accounts, pages and Instagram
// accounts all post to it. The GET is the subscription handshake (answered with the Secret's
// verifyToken); every POST is verified against X-Hub-Signature-256 with the app secret before
// it is read.

// metaHandshake answers Meta's subscription check with its challenge.
func (h *Handler) metaHandshake(w http.ResponseWriter, r *http.Request) {
	_, creds, ok := h.metaProvider(w, r)
	if !ok {
		return
	}
	challenge, err := meta.VerifyHandshake(r.URL.Query(), string(creds[v1alpha1.ProviderKeyVerifyToken]))
	if err != nil {
		refuse(w, http.StatusForbidden, "bad handshake")
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, challenge)
}

// metaWebhook takes what Meta posts: message statuses, inbound messages, template verdicts.
func (h *Handler) metaWebhook(w http.ResponseWriter, r *http.Request) {
	p, creds, ok := h.metaProvider(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, meta.WebhookMaxBody+1))
	if err != nil {
		h.internalError(w, err, "meta")
		return
	}
	if len(body) > meta.WebhookMaxBody {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	switch err := meta.VerifySignature(creds[v1alpha1.ProviderKeyAppSecret], body, r.Header.Get(meta.WebhookSignatureHeader)); {
	case errors.Is(err, meta.ErrWebhookUnsigned):
		refuse(w, http.StatusUnauthorized, "missing "+meta.WebhookSignatureHeader)
		return
	case err != nil:
		refuse(w, http.StatusForbidden, "bad "+meta.WebhookSignatureHeader)
		return
	}
	events, err := meta.ParseWebhook(body)
	if err != nil {
		http.Error(w, "not a webhook Switchboard reads", http.StatusBadRequest)
		return
	}
	if err := h.metaEvents(r, p, events); err != nil {
		h.internalError(w, err, "meta")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// metaProvider reads the meta Provider the URL names, answering 404 itself when there is none.
func (h *Handler) metaProvider(w http.ResponseWriter, r *http.Request) (*v1alpha1.Provider, map[string][]byte, bool) {
	p, creds, err := h.provider(r.Context(), r.PathValue("namespace"), r.PathValue("provider"), v1alpha1.ProviderMeta)
	if apierrors.IsNotFound(err) {
		refuse(w, http.StatusNotFound, "no such provider")
		return nil, nil, false
	}
	if err != nil {
		h.internalError(w, err, "meta")
		return nil, nil, false
	}
	return p, creds, true
}

// metaEvents applies a verified webhook: each status to its message, each message to the
// sender whose account it reached (an account no sender has is logged once and ignored), each
// template verdict to its Template.
func (h *Handler) metaEvents(r *http.Request, p *v1alpha1.Provider, events *meta.Events) error {
	ctx := r.Context()
	provider := p.Namespace + "/" + p.Name
	for _, s := range events.Statuses {
		if s.Status == transport.StatusRead && s.Channel != string(v1alpha1.ChannelWhatsApp) {
			// read is a WhatsApp state (spec: States, Message); on Messenger and Instagram a
			// read receipt says the message was delivered.
			s.Status = transport.StatusDelivered
		}
		if s.ProviderMessageID == "" && !s.Watermark.IsZero() {
			if err := h.applyWatermark(ctx, p, s); err != nil {
				return err
			}
			continue
		}
		// Meta signs the body only: a message id in the URL's query proves nothing.
		if err := h.applyStatus(ctx, p, s.StatusUpdate, ""); err != nil {
			return err
		}
	}
	for _, m := range events.Messages {
		snd, err := h.accountSender(ctx, p, v1alpha1.Channel(m.Channel), m.AccountID)
		if err != nil {
			return err
		}
		if snd == nil {
			h.logUnknownAccount(provider, m.Channel, m.AccountID)
			continue
		}
		in := message.Inbound{Project: snd.Namespace, Sender: snd.Name, Inbound: m.Inbound}
		if (m.MediaID != "" || m.MediaURL != "") && h.Media != nil {
			h.keepMedia(ctx, snd, &in, m)
		}
		if m.Unsupported != "" {
			err = h.Messages.ReceiveUnsupported(ctx, in)
		} else {
			_, err = h.Messages.Receive(ctx, in)
			err = h.refusedInbound(err, snd.Namespace, m.Channel)
		}
		if err != nil {
			return err
		}
	}
	for _, t := range events.Templates {
		if err := h.templateUpdate(ctx, p, t); err != nil {
			return err
		}
	}
	return h.coexistence(ctx, p, events.Coexistence)
}

// coexistence takes what a coexistence number's WhatsApp Business app syncs: its contacts, its
// history, and echoes of what the business sends from the app. A number no sender of the
// Provider's reach has (another project's) is logged and left alone.
func (h *Handler) coexistence(ctx context.Context, p *v1alpha1.Provider, c meta.Coexistence) error {
	if h.WhatsAppSync == nil {
		return nil
	}
	provider := p.Namespace + "/" + p.Name
	wa := v1alpha1.ChannelWhatsApp
	for _, cs := range c.ContactSyncs {
		snd, err := h.accountSender(ctx, p, wa, cs.PhoneNumberID)
		if err != nil {
			return err
		}
		if snd == nil {
			h.logUnknownAccount(provider, string(wa), cs.PhoneNumberID)
			continue
		}
		if err := h.WhatsAppSync.Contacts(ctx, snd, cs); err != nil {
			return err
		}
	}
	for _, hs := range c.HistorySyncs {
		snd, err := h.accountSender(ctx, p, wa, hs.PhoneNumberID)
		if err != nil {
			return err
		}
		if snd == nil {
			h.logUnknownAccount(provider, string(wa), hs.PhoneNumberID)
			continue
		}
		if err := h.WhatsAppSync.History(ctx, snd, hs); err != nil {
			return err
		}
	}
	byAccount := map[string][]meta.HookMessage{}
	for _, e := range c.Echoes {
		byAccount[e.AccountID] = append(byAccount[e.AccountID], e)
	}
	for account, echoes := range byAccount {
		snd, err := h.accountSender(ctx, p, wa, account)
		if err != nil {
			return err
		}
		if snd == nil {
			h.logUnknownAccount(provider, string(wa), account)
			continue
		}
		if err := h.WhatsAppSync.Echoes(ctx, snd, echoes); err != nil {
			return err
		}
	}
	return nil
}

// applyWatermark applies a receipt by time (Messenger's read, or an old client's delivery): each
// message the page's sender sent the contact up to the watermark that has not reached the
// status reaches it, with its own event.
func (h *Handler) applyWatermark(ctx context.Context, p *v1alpha1.Provider, s meta.HookStatus) error {
	snd, err := h.accountSender(ctx, p, v1alpha1.Channel(s.Channel), s.AccountID)
	if err != nil || snd == nil {
		return err
	}
	ids, err := h.Messages.AwaitingReceipt(ctx, snd.Namespace, snd.Name, s.Channel, s.Recipient, s.Status, s.Watermark)
	if err != nil {
		return err
	}
	for _, id := range ids {
		u := s.StatusUpdate
		u.ProviderMessageID = id
		if err := h.applyStatus(ctx, p, u, ""); err != nil {
			return err
		}
	}
	return nil
}

// keepMedia stores a copy of the file a contact sent with its message, so it can be fetched
// after Meta's link expires. A file that cannot be fetched is logged and the message kept
// without it: losing the message would be worse, and Meta would post the whole batch again.
func (h *Handler) keepMedia(ctx context.Context, snd *v1alpha1.Sender, in *message.Inbound, m meta.HookMessage) {
	var data []byte
	var mimeType string
	var err error
	name := m.MediaID
	if m.MediaID != "" {
		data, mimeType, err = h.Media.FetchMedia(ctx, snd, m.MediaID)
	} else {
		// The CDN URL is signed: it is not logged. The message id names the file.
		data, mimeType, err = h.Media.FetchAttachment(ctx, snd, v1alpha1.Channel(m.Channel), m.MediaURL)
		name = "attachment"
	}
	if err != nil {
		h.Log.Error(err, "could not keep a file a contact sent", "sender", snd.Namespace+"/"+snd.Name, "channel", m.Channel, "mediaId", m.MediaID)
		return
	}
	if mimeType == "" {
		mimeType = m.MediaMime
	}
	if in.Content != nil && in.Content.Filename != "" {
		name = in.Content.Filename
	} else if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		name += exts[0]
	}
	in.Attachments = []transport.Attachment{{Filename: name, ContentType: mimeType, Content: data}}
}

// accountSender finds the sender whose channel ch is the account, through p (senderWhere).
func (h *Handler) accountSender(ctx context.Context, p *v1alpha1.Provider, ch v1alpha1.Channel, account string) (*v1alpha1.Sender, error) {
	return h.senderWhere(ctx, p, ch, func(s *v1alpha1.Sender) bool { return s.AccountID(ch) == account })
}

// templateUpdate applies a template verdict or recategorisation to the Template submitted to
// that business account under that id (or name and language).
func (h *Handler) templateUpdate(ctx context.Context, p *v1alpha1.Provider, u meta.TemplateUpdate) error {
	if h.Templates == nil {
		return nil
	}
	var list v1alpha1.TemplateList
	if err := h.Reader.List(ctx, &list, h.scope(p)...); err != nil {
		return err
	}
	for i := range list.Items {
		t := &list.Items[i]
		if t.Status.BusinessAccount != u.WABAID || t.Status.Sandbox {
			continue
		}
		if t.Status.ProviderID != u.TemplateID && (t.Spec.Name != u.Name || t.Spec.Language != u.Language) {
			continue
		}
		err := h.Templates.ProviderUpdate(ctx, t, u.Event, u.Reason, u.Category)
		if apierrors.IsConflict(err) {
			// The controller wrote it a moment ago: read it again and apply once more.
			if err := h.Live.Get(ctx, client.ObjectKeyFromObject(t), t); err != nil {
				return err
			}
			err = h.Templates.ProviderUpdate(ctx, t, u.Event, u.Reason, u.Category)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// logUnknownAccount logs an account no sender has once (unknownAccounts), so a busy one logs
// one line, not one per message.
func (h *Handler) logUnknownAccount(provider, channel, account string) {
	if _, seen := h.unknownAccounts.LoadOrStore(provider+"/"+channel+"/"+account, true); !seen {
		h.Log.Info("webhook for an account no sender has; ignored", "provider", provider, "channel", channel, "account", account)
	}
}
