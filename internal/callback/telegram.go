package callback

import (
	"io"
	"net/http"
	"strconv"

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
		}
		if err != nil {
			h.internalError(w, err, "telegram")
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}
