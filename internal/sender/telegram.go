package sender

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
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
	// Webhook is the URL Telegram posts the bot's updates to; "" when the installation has no
	// public URL.
	Webhook(snd *v1alpha1.Sender) string
}

// AttachTelegram checks token with Telegram, points the bot's webhook at Switchboard with a new
// random secret token, keeps both in a Secret the sender owns and connects the bot to the
// sender, active. It returns the bot. A token Telegram refuses, or a webhook it does not take,
// changes nothing.
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
	secret := ""
	if url := s.bots.Webhook(current); url != "" {
		if secret, err = telegram.NewWebhookSecret(); err != nil {
			return View{}, telegram.Bot{}, err
		}
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
		if err := s.storeToken(ctx, snd, token, secret); err != nil {
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

// storeToken writes the bot token, and the secret token of its webhook (none without a public
// URL), to the sender's Secret, labelled so Switchboard can read it.
func (s *Service) storeToken(ctx context.Context, snd *v1alpha1.Sender, token, webhookSecret string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: snd.Namespace, Name: telegramSecretName(snd),
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte(token)},
	}
	if webhookSecret != "" {
		secret.Data[v1alpha1.TelegramWebhookSecretKey] = []byte(webhookSecret)
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

// TelegramSecrets gives each bot attached before webhook secret tokens were random a random one:
// the bot's webhook is set again with it, then it is stored beside the token. Until then the
// bot's updates are refused (its old token derived from the bot's id, which a project could
// learn for another's bot) and Telegram keeps them to retry. It runs in the api process once its
// cache is synced (a manager.Runnable), and again every minute while a bot could not be moved
// (Telegram unreachable).
type TelegramSecrets struct {
	Service *Service
	Log     logr.Logger
	// Every is the wait before another try; a minute when zero.
	Every time.Duration
}

// NeedLeaderElection is false: every api replica may run it; two that move one bot at once
// agree on the secret stored (renewWebhookSecret).
func (m *TelegramSecrets) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (m *TelegramSecrets) Start(ctx context.Context) error {
	every := m.Every
	if every == 0 {
		every = time.Minute
	}
	for {
		left, err := m.Service.renewWebhookSecrets(ctx, m.Log)
		if err != nil {
			m.Log.Error(err, "give telegram bots random webhook secrets")
		}
		if err == nil && left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// renewWebhookSecrets moves every bot whose Secret has no webhook secret token, and returns how
// many could not be moved now.
func (s *Service) renewWebhookSecrets(ctx context.Context, log logr.Logger) (int, error) {
	if s.bots == nil {
		return 0, nil
	}
	var list v1alpha1.SenderList
	if err := s.client.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("list senders: %w", err)
	}
	left := 0
	for i := range list.Items {
		snd := &list.Items[i]
		if err := s.renewWebhookSecret(ctx, snd); err != nil {
			left++
			log.Error(err, "give a telegram bot a random webhook secret", "sender", snd.Namespace+"/"+snd.Name)
		}
	}
	return left, nil
}

// renewWebhookSecret moves the sender's bot when it was attached by Switchboard (its Secret is
// the sender's own) and has no webhook secret token: it sets the webhook with a new one and
// stores it, if the Secret has not changed meanwhile. When it has (the bot was attached again,
// or another replica moved it first), the webhook is set once more with the secret stored, so
// Telegram and the Secret agree.
func (s *Service) renewWebhookSecret(ctx context.Context, snd *v1alpha1.Sender) error {
	ref := snd.Credentials(v1alpha1.ChannelTelegram)
	if snd.Spec.Telegram == nil || ref == nil || ref.Name != telegramSecretName(snd) || !snd.DeletionTimestamp.IsZero() {
		return nil
	}
	url := s.bots.Webhook(snd)
	if url == "" {
		return nil // no public URL: no webhook
	}
	var secret corev1.Secret
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: snd.Namespace, Name: ref.Name}, &secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	token := string(secret.Data[ref.Key])
	if token == "" || len(secret.Data[v1alpha1.TelegramWebhookSecretKey]) > 0 {
		return nil
	}
	fresh, err := telegram.NewWebhookSecret()
	if err != nil {
		return err
	}
	api := s.bots.API(ctx, snd)
	if err := api.SetWebhook(ctx, token, url, fresh); err != nil {
		if errors.Is(err, telegram.ErrInvalidToken) {
			return nil // the bot's token was revoked: it has no webhook to keep
		}
		return fmt.Errorf("set the webhook of sender %s: %w", snd.Name, err)
	}
	updated := secret.DeepCopy()
	updated.Data[v1alpha1.TelegramWebhookSecretKey] = []byte(fresh)
	err = s.client.Update(ctx, updated, client.FieldOwner(kubewrite.FieldManager))
	if !apierrors.IsConflict(err) {
		if err != nil {
			return fmt.Errorf("store the webhook secret of sender %s: %w", snd.Name, err)
		}
		return nil
	}
	if err := s.live.Get(ctx, client.ObjectKeyFromObject(&secret), &secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	stored := string(secret.Data[v1alpha1.TelegramWebhookSecretKey])
	if stored == "" {
		return fmt.Errorf("store the webhook secret of sender %s: %w", snd.Name, err) // tried again later
	}
	if err := api.SetWebhook(ctx, string(secret.Data[ref.Key]), url, stored); err != nil && !errors.Is(err, telegram.ErrInvalidToken) {
		return fmt.Errorf("set the webhook of sender %s: %w", snd.Name, err)
	}
	return nil
}
