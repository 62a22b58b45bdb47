package callback

import (
	"context"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
)

// Telegram updates are checked against the secret token of the sender's bot (a random one,
// kept beside the bot's token: v1alpha1.TelegramWebhookSecretKey) from the informer cache only,
// so an unauthenticated request makes no read of the API server. A bot attached a moment ago
// can post before the cache holds its Secret: a token that does not match is looked up again
// for up to telegramCacheWait before the update is refused, which Telegram then retries. An
// unknown sender, a sender without a bot and a wrong token get the same answer after the same
// wait, so the answer does not tell which senders exist.
const (
	telegramCacheWait = 2 * time.Second
	telegramCachePoll = 100 * time.Millisecond
	// telegramMaxWaits bounds the updates waiting at once; beyond it a mismatch is refused at once.
	telegramMaxWaits = 64
)

// telegramUpdate takes an update of the bot connected to a sender: Telegram sends it with the
// secret token Switchboard gave setWebhook, which is checked first.
func (h *Handler) telegramUpdate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	header := r.Header.Get(telegram.SecretHeader)
	if header == "" {
		refuse(w, http.StatusUnauthorized, "missing "+telegram.SecretHeader)
		return
	}
	key := client.ObjectKey{Namespace: r.PathValue("namespace"), Name: r.PathValue("sender")}
	snd, err := h.telegramBot(ctx, key, header)
	if err != nil {
		h.internalError(w, err, "telegram")
		return
	}
	if snd == nil {
		refuse(w, http.StatusForbidden, "bad "+telegram.SecretHeader)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		h.internalError(w, err, "telegram")
		return
	}
	in, ok, err := telegram.ParseUpdate(body)
	if err != nil {
		// Telegram retries what is not answered 2xx: a malformed update would come back forever.
		h.Log.Info("unreadable telegram update", "sender", snd.Namespace+"/"+snd.Name)
		w.WriteHeader(http.StatusOK)
		return
	}
	if ok {
		in.To = snd.Address(v1alpha1.ChannelTelegram)
		inbound := message.Inbound{Project: snd.Namespace, Sender: snd.Name, Inbound: in}
		if in.Unsupported != "" {
			err = h.Messages.ReceiveUnsupported(ctx, inbound)
		} else {
			_, err = h.Messages.Receive(ctx, inbound)
			err = h.refusedInbound(err, snd.Namespace, in.Channel)
		}
		if err != nil {
			h.internalError(w, err, "telegram")
			return
		}
		if id, pressed := telegram.CallbackQueryID(in.ProviderMessageID); pressed {
			h.answerButton(ctx, snd, id)
		}
	}
	w.WriteHeader(http.StatusOK)
}

// answerButton tells Telegram a button press was received, so the contact's app stops showing
// it as loading. Best effort: the press is stored either way.
func (h *Handler) answerButton(ctx context.Context, snd *v1alpha1.Sender, callbackQueryID string) {
	ref := snd.Credentials(v1alpha1.ChannelTelegram)
	if h.Bots == nil || ref == nil {
		return
	}
	var secret corev1.Secret
	if err := h.Reader.Get(ctx, client.ObjectKey{Namespace: snd.Namespace, Name: ref.Name}, &secret); err != nil {
		return
	}
	if err := h.Bots.API(ctx, snd).AnswerCallbackQuery(ctx, string(secret.Data[ref.Key]), callbackQueryID); err != nil {
		h.Log.V(1).Info("answer a button press", "sender", snd.Namespace+"/"+snd.Name, "error", err.Error())
	}
}

// telegramBot returns the sender key names when its bot's secret token is header, looking in
// the cache again for up to telegramCacheWait; nil when it is not (an unknown sender, no bot, or
// another token).
func (h *Handler) telegramBot(ctx context.Context, key client.ObjectKey, header string) (*v1alpha1.Sender, error) {
	snd, err := h.cachedBot(ctx, key, header)
	if snd != nil || err != nil {
		return snd, err
	}
	if h.botWaits.Add(1) > telegramMaxWaits {
		h.botWaits.Add(-1)
		return nil, nil
	}
	defer h.botWaits.Add(-1)
	deadline := time.Now().Add(telegramCacheWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(telegramCachePoll):
		}
		if snd, err = h.cachedBot(ctx, key, header); snd != nil || err != nil {
			return snd, err
		}
	}
	return nil, nil
}

// cachedBot is telegramBot's one look at the cache.
func (h *Handler) cachedBot(ctx context.Context, key client.ObjectKey, header string) (*v1alpha1.Sender, error) {
	var snd v1alpha1.Sender
	if err := h.Reader.Get(ctx, key, &snd); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	ref := snd.Credentials(v1alpha1.ChannelTelegram)
	if snd.Spec.Telegram == nil || ref == nil || !snd.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	var secret corev1.Secret
	if err := h.Reader.Get(ctx, client.ObjectKey{Namespace: snd.Namespace, Name: ref.Name}, &secret); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	// A bot attached before secrets were random has none here until it is given one
	// (sender.TelegramSecrets): its derived token is refused, as anyone could have learnt it.
	if !telegram.VerifySecretToken(header, string(secret.Data[v1alpha1.TelegramWebhookSecretKey])) {
		return nil, nil
	}
	return &snd, nil
}
