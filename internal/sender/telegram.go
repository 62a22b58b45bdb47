package sender

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
)

// invalidBotToken is the v2 answer to a token Telegram rejects (v1 answers invalid_request).
func invalidBotToken() *apperror.Error {
	e := apperror.InvalidFields(apperror.FieldError{Path: "botToken", Message: "Telegram rejected this bot token"})
	e.Code = "invalid_bot_token"
	return e
}

// Bots reaches the Bot API for a sender's bot and says where the bot's webhook points.
type Bots interface {
	// API is the Bot API the sender's bots use.
	API(ctx context.Context, snd *v1alpha1.Sender) telegram.Client
	// Webhook is the URL Telegram posts the bot's updates to and the secret token it sends with
	// them; url is "" when the installation has no public URL.
	Webhook(snd *v1alpha1.Sender, botID int64) (url, secretToken string)
}

// AttachTelegram checks token with Telegram, points the bot's webhook at Switchboard, keeps the
// token in a Secret the sender owns and connects the bot to the sender, active. It returns the
// bot. A token Telegram refuses, or a webhook it does not take, changes nothing.
func (s *Service) AttachTelegram(ctx context.Context, project, id, token string) (View, telegram.Bot, error) {
	current, err := s.getLive(ctx, project, id)
	if err != nil {
		return View{}, telegram.Bot{}, err
	}
	api := s.bots.API(ctx, current)
	bot, err := api.GetMe(ctx, token)
	if errors.Is(err, telegram.ErrInvalidToken) {
		return View{}, telegram.Bot{}, invalidBotToken()
	}
	if err != nil {
		return View{}, telegram.Bot{}, err
	}
	if url, secret := s.bots.Webhook(current, bot.ID); url != "" {
		if err := api.SetWebhook(ctx, token, url, secret); err != nil {
			return View{}, telegram.Bot{}, fmt.Errorf("set the webhook of bot %s: %w", bot.Username, err)
		}
	}
	var snd *v1alpha1.Sender
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.getLive(ctx, project, id)
		if err != nil {
			return err
		}
		snd = current.DeepCopy()
		if err := s.storeToken(ctx, snd, token); err != nil {
			return err
		}
		snd.Spec.Telegram = &v1alpha1.ConnectedAccount{
			AccountID: strconv.FormatInt(bot.ID, 10), DisplayName: bot.Username, Active: true,
			CredentialsRef: &v1alpha1.SecretKeyRef{Name: telegramSecretName(snd), Key: "token"},
		}
		return s.write(ctx, snd)
	})
	if err != nil {
		return View{}, telegram.Bot{}, err
	}
	v, err := s.view(ctx, snd)
	return v, bot, err
}

// DetachTelegram removes the bot's webhook, the bot and its token.
func (s *Service) DetachTelegram(ctx context.Context, project, id string) error {
	if current, err := s.getLive(ctx, project, id); err == nil && current.Spec.Telegram != nil {
		s.unhook(ctx, current)
	}
	var snd *v1alpha1.Sender
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := s.getLive(ctx, project, id)
		if err != nil {
			return err
		}
		if current.Spec.Telegram == nil {
			return apperror.NotFoundf("Sender %s has no Telegram bot.", id)
		}
		snd = current.DeepCopy()
		snd.Spec.Telegram = nil
		return s.write(ctx, snd)
	})
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: telegramSecretName(snd)}}
	if err := s.client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete telegram token of sender %s: %w", id, err)
	}
	return nil
}

func telegramSecretName(snd *v1alpha1.Sender) string { return snd.Name + "-telegram" }

// storeToken writes the bot token to the sender's Secret, labelled so Switchboard can read it.
func (s *Service) storeToken(ctx context.Context, snd *v1alpha1.Sender, token string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: snd.Namespace, Name: telegramSecretName(snd),
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte(token)},
	}
	if err := controllerutil.SetControllerReference(snd, secret, s.scheme); err != nil {
		return err
	}
	err := s.client.Create(ctx, secret, client.FieldOwner(kubewrite.FieldManager))
	if apierrors.IsAlreadyExists(err) {
		err = s.client.Update(ctx, secret, client.FieldOwner(kubewrite.FieldManager))
	}
	if err != nil {
		return fmt.Errorf("store telegram token of sender %s: %w", snd.Name, err)
	}
	return nil
}

// unhook deletes the webhook of the sender's bot, so Telegram stops posting its updates. It is
// best effort: a bot whose token no longer works has no webhook to keep.
func (s *Service) unhook(ctx context.Context, snd *v1alpha1.Sender) {
	ref := snd.Credentials(v1alpha1.ChannelTelegram)
	if ref == nil {
		return
	}
	var secret corev1.Secret
	if err := s.live.Get(ctx, client.ObjectKey{Namespace: snd.Namespace, Name: ref.Name}, &secret); err != nil {
		return
	}
	if token := string(secret.Data[ref.Key]); token != "" {
		_ = s.bots.API(ctx, snd).DeleteWebhook(ctx, token)
	}
}
