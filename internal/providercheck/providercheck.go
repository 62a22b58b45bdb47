// Package providercheck checks a Provider's credentials with the provider itself, by type: the
// Provider controller's CredentialCheck for each type that has one.
package providercheck

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/controller"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/models"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/registry"
	"github.com/switchboard-io/switchboard/internal/transport/smtp"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
	"github.com/switchboard-io/switchboard/internal/transport/webrisk"
)

// Checks are the credential checks by Provider type. A telegram Provider has no credentials of
// its own (each bot's token is checked with getMe when it is attached); meta and smtp are checked
// with their transports, the model types with their llm adapters.
func Checks() map[v1alpha1.ProviderType]controller.CredentialCheck {
	return map[v1alpha1.ProviderType]controller.CredentialCheck{v1alpha1.ProviderTwilio: Twilio, v1alpha1.ProviderSMTP: SMTP,
		v1alpha1.ProviderMeta: Meta, v1alpha1.ProviderOpenAI: Model, v1alpha1.ProviderMistral: Model,
		v1alpha1.ProviderAnthropic: Model, v1alpha1.ProviderGoogle: Model, v1alpha1.ProviderWebRisk: WebRisk}
}

// modelChecker is an llm adapter that can check its account.
type modelChecker interface {
	Check(ctx context.Context) (string, error)
}

// Model lists the account's models with the Provider type's llm adapter (GET /models for
// openai and mistral, GET /v1/models for anthropic, models.list for google), with the apiKey
// of the Secret (an openai Provider of a local server may have none). A key the provider
// refuses (401, 403, Google's 400 API_KEY_INVALID) wraps controller.ErrCredentialsRejected;
// any other failure is returned as unreachable. The errors carry the provider's answer, which
// the adapters redact, never the key.
func Model(ctx context.Context, p *v1alpha1.Provider, creds map[string][]byte) (string, error) {
	m, err := models.New(p.Spec.Type, string(creds[v1alpha1.ProviderKeyAPIKey]), p.Spec.BaseURL)
	if err != nil {
		// A configuration no call can succeed with (no key, a base URL that is not one): it
		// is not retried, only checked again when the Provider or its Secret changes.
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, err)
	}
	checker, ok := m.(modelChecker)
	if !ok {
		return "", fmt.Errorf("check %s credentials: the adapter cannot list models", p.Spec.Type)
	}
	account, err := checker.Check(ctx)
	var le *llm.Error
	switch {
	case err == nil:
		return account, nil
	case !errors.As(err, &le):
		return "", fmt.Errorf("list models: %w", err)
	case le.Kind == llm.KindUnauthorized:
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, modelAnswer{le})
	default:
		return "", fmt.Errorf("list models: %w", modelAnswer{le})
	}
}

// modelAnswer is an adapter's error as the Ready condition shows it: the provider's status and
// message, or why there was no answer.
type modelAnswer struct{ err *llm.Error }

func (a modelAnswer) Error() string {
	if a.err.Status != 0 {
		return fmt.Sprintf("HTTP %d: %s", a.err.Status, a.err.Message)
	}
	return a.err.Message
}

func (a modelAnswer) Unwrap() error { return a.err }

// Meta asks the Graph API who the system-user token is (GET /me): an expired or revoked token
// wraps controller.ErrCredentialsRejected, with Meta's reason.
func Meta(ctx context.Context, p *v1alpha1.Provider, creds map[string][]byte) (string, error) {
	who, err := meta.New(registry.MetaConfig(p, creds, nil)).CheckToken(ctx)
	if errors.Is(err, meta.ErrInvalidToken) {
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, err)
	}
	return who, err
}

// SMTP connects to the relay, starts TLS and logs in, without sending. A relay refusing the
// username or password wraps controller.ErrCredentialsRejected; one that cannot be reached, or
// whose certificate is not trusted, is reported as unreachable with the reason.
func SMTP(ctx context.Context, p *v1alpha1.Provider, creds map[string][]byte) (string, error) {
	cfg, err := smtp.ProviderConfig(p.Spec.BaseURL, string(creds[v1alpha1.ProviderKeyUsername]),
		string(creds[v1alpha1.ProviderKeyPassword]), creds[v1alpha1.ProviderKeyCACert], nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, err)
	}
	t, err := smtp.New(cfg)
	if err != nil {
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, err)
	}
	relay, err := t.Check(ctx)
	if errors.Is(err, smtp.ErrInvalidCredentials) {
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, err)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (as %s)", relay, creds[v1alpha1.ProviderKeyUsername]), nil
}

// Twilio fetches the account, as Twilio documents a credentials check. Refused credentials, or
// a suspended or closed account, wrap controller.ErrCredentialsRejected.
func Twilio(ctx context.Context, p *v1alpha1.Provider, creds map[string][]byte) (string, error) {
	sid := string(creds[v1alpha1.ProviderKeyAccountSID])
	info, err := twilio.New(twilio.Config{BaseURL: p.Spec.BaseURL, AccountSID: sid,
		AuthToken: string(creds[v1alpha1.ProviderKeyAuthToken])}).CheckAccount(ctx)
	if errors.Is(err, twilio.ErrInvalidCredentials) || errors.Is(err, twilio.ErrAccountInactive) {
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, err)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (%s)", info.FriendlyName, sid), nil
}

// webRiskProbe is the URL a webrisk Provider's key is checked with: one no threat list has.
const webRiskProbe = "https://example.com/"

// WebRisk looks a known URL up with the Provider's API key (Web Risk's uris.search): a key
// Google refuses wraps controller.ErrCredentialsRejected; any other failure is returned as
// unreachable. No error carries the key.
func WebRisk(ctx context.Context, p *v1alpha1.Provider, creds map[string][]byte) (string, error) {
	c, err := webrisk.New(webrisk.Config{BaseURL: p.Spec.BaseURL, APIKey: string(creds[v1alpha1.ProviderKeyAPIKey])})
	if err != nil {
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, err)
	}
	_, err = c.Lookup(ctx, webRiskProbe)
	var we *webrisk.Error
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &we) && we.KeyRejected():
		return "", fmt.Errorf("%w: %w", controller.ErrCredentialsRejected, err)
	}
	return "", fmt.Errorf("look %s up: %w", webRiskProbe, err)
}
