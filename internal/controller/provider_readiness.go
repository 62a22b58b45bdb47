package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// providerFacts is what the Provider's readiness is computed from.
type providerFacts struct {
	provider *v1alpha1.Provider
	// endpointRefused: the Provider sets a baseURL its namespace may not (EndpointAllowed).
	endpointRefused bool
	// secret is the Secret spec.secretRef names; nil when it names none or the Secret is missing.
	secret *corev1.Secret
	// checked tells whether a credential check is registered for the Provider's type.
	checked bool
	// outcome is the check's outcome for the current spec and Secret; nil while it is pending.
	outcome *checkRecord
}

// providerCheck is one small check of the readiness chain.
type providerCheck func(f providerFacts) (reason, message string, failed bool)

// providerReadinessChain runs in order; the first failure names the reason.
var providerReadinessChain = []providerCheck{
	providerEndpointAllowed,
	providerSecretFound,
	providerSecretComplete,
	providerCheckDone,
	providerCredentialsAccepted,
	providerReachable,
}

// providerReadiness computes the Ready condition of a Provider.
func providerReadiness(f providerFacts) readiness {
	if r := runProviderChecks(f, providerReadinessChain); !r.ready {
		return r
	}
	p := f.provider
	if !f.checked {
		return readyOK(fmt.Sprintf("credentials are not checked for %s", p.Spec.Type))
	}
	msg := fmt.Sprintf("%s accepted the credentials", p.Spec.Type)
	if f.outcome.account != "" {
		msg += " of account " + f.outcome.account
	}
	return readyOK(msg)
}

// credentialsPresent runs the checks that need no call to the provider: its endpoint may be
// used, and the Secret is there and holds every key the type needs.
func credentialsPresent(f providerFacts) readiness {
	return runProviderChecks(f, providerReadinessChain[:3])
}

func runProviderChecks(f providerFacts, chain []providerCheck) readiness {
	for _, check := range chain {
		if reason, message, failed := check(f); failed {
			return notReady(reason, message)
		}
	}
	return readiness{ready: true}
}

// providerEndpointAllowed refuses a project's own baseURL: a tenant's endpoint could answer for
// the provider (claim another project's bot id or number). Nothing calls it.
func providerEndpointAllowed(f providerFacts) (string, string, bool) {
	if !f.endpointRefused {
		return "", "", false
	}
	return v1alpha1.ReasonEndpointNotAllowed, fmt.Sprintf(
		"baseURL is for the installation's Providers: remove it to use %s's public address (the operator allows projects' endpoints with --allow-project-provider-endpoints)",
		f.provider.Spec.Type), true
}

func providerSecretFound(f providerFacts) (string, string, bool) {
	ref := f.provider.Spec.SecretRef
	if ref == nil || f.secret != nil {
		return "", "", false
	}
	return v1alpha1.ReasonSecretNotFound, fmt.Sprintf(
		"Secret %q not found in namespace %s: create it, with the label %s: \"true\" (Switchboard reads no Secret without it)",
		ref.Name, f.provider.Namespace, v1alpha1.SecretLabel), true
}

func providerSecretComplete(f providerFacts) (string, string, bool) {
	p := f.provider
	if p.Spec.SecretRef == nil {
		if missing := p.Spec.Type.MissingCredentialKeys(nil); len(missing) > 0 {
			// CEL refuses this; kept so the chain never calls a check without credentials.
			return v1alpha1.ReasonSecretNotFound, fmt.Sprintf("a %s Provider needs spec.secretRef", p.Spec.Type), true
		}
		return "", "", false
	}
	missing := p.Spec.Type.MissingCredentialKeys(f.secret.Data)
	if len(missing) == 0 {
		return "", "", false
	}
	required, _ := p.Spec.Type.CredentialKeys()
	noun := "key"
	if len(missing) > 1 {
		noun = "keys"
	}
	return v1alpha1.ReasonSecretIncomplete, fmt.Sprintf("Secret %q has no %s %s: a %s Provider needs %s",
		p.Spec.SecretRef.Name, noun, strings.Join(missing, ", "), p.Spec.Type, andList(required)), true
}

func providerCheckDone(f providerFacts) (string, string, bool) {
	if !f.checked || f.outcome != nil {
		return "", "", false
	}
	return v1alpha1.ReasonCheckPending, fmt.Sprintf(
		"the credentials changed: they are checked with %s within %s", f.provider.Spec.Type, providerMinCheckInterval), true
}

func providerCredentialsAccepted(f providerFacts) (string, string, bool) {
	if f.outcome == nil || !f.outcome.rejected() {
		return "", "", false
	}
	p := f.provider
	where := "the Provider's credentials"
	fix := "correct them"
	if p.Spec.SecretRef != nil {
		where = fmt.Sprintf("the credentials in Secret %q", p.Spec.SecretRef.Name)
		fix = "correct the Secret"
		if required, _ := p.Spec.Type.CredentialKeys(); len(required) > 0 {
			fix = fmt.Sprintf("correct %s in the Secret", andList(required))
		}
	}
	return v1alpha1.ReasonCredentialsRejected, fmt.Sprintf("%s rejected %s (%s): %s; the Provider is checked again as soon as it changes",
		p.Spec.Type, where, errText(f.outcome.err), fix), true
}

func providerReachable(f providerFacts) (string, string, bool) {
	if f.outcome == nil || !f.outcome.unreachable() {
		return "", "", false
	}
	p := f.provider
	at := "its public API"
	if p.Spec.BaseURL != "" {
		at = p.Spec.BaseURL
	}
	return v1alpha1.ReasonProviderUnreachable, fmt.Sprintf(
		"could not check the credentials with %s at %s (%s); trying again after 30s, then doubling the wait up to 5m",
		p.Spec.Type, at, errText(f.outcome.err)), true
}

// errText is a check error as a condition shows it: bounded in length.
func errText(err error) string {
	const limit = 300
	s := []rune(err.Error())
	if len(s) > limit {
		return string(s[:limit]) + "…"
	}
	return string(s)
}

// andList writes "a", "a and b", "a, b and c".
func andList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	default:
		return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
	}
}
