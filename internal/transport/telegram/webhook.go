package telegram

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
)

// SecretHeader is the header Telegram sends a webhook's secret_token in.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// AllowedUpdates are the updates a webhook asks for: what ParseUpdate reads, and edits (which
// it recognises and drops).
var AllowedUpdates = []string{"message", "edited_message", "callback_query", "message_reaction"}

// SetWebhook makes Telegram post the bot's updates to url with secretToken in SecretHeader
// (NewWebhookSecret makes one; an empty one is refused). Updates that wait are kept. A token Telegram does not know is
// ErrInvalidToken; other refusals are those of Transport.Send.
func (c Client) SetWebhook(ctx context.Context, token, url, secretToken string) error {
	if !tokenShape.MatchString(token) {
		return ErrInvalidToken
	}
	if secretToken == "" {
		return errors.New("telegram: setWebhook: a webhook needs a secret token")
	}
	params := map[string]any{"url": url, "secret_token": secretToken, "allowed_updates": AllowedUpdates, "drop_pending_updates": false}
	return tokenError(c.call(ctx, token, "setWebhook", params, nil))
}

// DeleteWebhook stops Telegram posting the bot's updates, keeping the ones that wait.
func (c Client) DeleteWebhook(ctx context.Context, token string) error {
	if !tokenShape.MatchString(token) {
		return ErrInvalidToken
	}
	return tokenError(c.call(ctx, token, "deleteWebhook", map[string]any{"drop_pending_updates": false}, nil))
}

// AnswerCallbackQuery tells Telegram the button press callbackQueryID was received (see
// CallbackQueryID), so that the app stops showing the button loading. It shows the user nothing.
func (c Client) AnswerCallbackQuery(ctx context.Context, token, callbackQueryID string) error {
	if !tokenShape.MatchString(token) {
		return ErrInvalidToken
	}
	return tokenError(c.call(ctx, token, "answerCallbackQuery", map[string]any{"callback_query_id": callbackQueryID}, nil))
}

// NewWebhookSecret makes a webhook's secret_token: 32 random bytes in base64url without padding
// (43 characters of A-Z a-z 0-9 _ -, as Telegram allows). It is random, not derived from the
// bot, so no one who learns a bot's id (or claims one) can compute it; it is kept beside the
// bot's token.
func NewWebhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make webhook secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// VerifySecretToken says whether header, the SecretHeader of a webhook request, is want, in
// time that does not depend on where they differ. An empty want matches nothing.
func VerifySecretToken(header, want string) bool {
	if want == "" {
		return false
	}
	h, w := sha256.Sum256([]byte(header)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(h[:], w[:]) == 1
}
