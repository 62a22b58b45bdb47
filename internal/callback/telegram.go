package callback

import (
	"context"
	"io"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
)

// telegramUpdate takes an update of the bot connected to a sender: Telegram sends it with the
// secret token Switchboard gave setWebhook (telegram.WebhookSecret), which is checked first.
func (h *Handler) telegramUpdate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var snd v1alpha1.Sender
	key := client.ObjectKey{Namespace: r.PathValue("namespace"), Name: r.PathValue("sender")}
	err := h.Reader.Get(ctx, key, &snd)
	if (apierrors.IsNotFound(err) || (err == nil && snd.Spec.Telegram == nil)) && h.Live != nil {
		err = h.Live.Get(ctx, key, &snd)
	}
	if apierrors.IsNotFound(err) || (err == nil && snd.Spec.Telegram == nil) {
		refuse(w, http.StatusNotFound, "no such bot")
		return
	}
	if err != nil {
		h.internalError(w, err, "telegram")
		return
	}
	botID, _ := strconv.ParseInt(snd.Spec.Telegram.AccountID, 10, 64)
	header := r.Header.Get(telegram.SecretHeader)
	if header == "" {
		refuse(w, http.StatusUnauthorized, "missing "+telegram.SecretHeader)
		return
	}
	if !telegram.VerifySecretToken(header, telegram.WebhookSecret(h.TelegramKey, botID)) {
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
			h.answerButton(ctx, &snd, id)
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
