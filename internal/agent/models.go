package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/sandbox"
)

// candidate is one model an execution may call: the agent's, then each fallback.
type candidate struct {
	provider v1alpha1.ModelProvider
	model    string
	client   llm.Model
	// installation: the installation's model (zavu), priced by the PriceList.
	installation bool
	// problem, when set, is why it cannot be called; the execution moves on past it.
	problem string
}

// candidates are the models of a, in order. A test-mode execution calls the sandbox model
// whatever the agent names: test traffic never reaches a provider or costs anything.
func (r *Runtime) candidates(ctx context.Context, a *v1alpha1.Agent, testMode bool) ([]candidate, error) {
	models := append([]v1alpha1.FallbackModel{{Provider: a.Spec.Provider, Model: a.Spec.Model, APIKeyRef: a.Spec.APIKeyRef,
		ProviderRef: a.Spec.ProviderRef}}, a.Spec.Fallbacks...)
	if testMode {
		return []candidate{{provider: a.Spec.Provider, model: a.Spec.Model, client: sandbox.Model{}}}, nil
	}
	out := make([]candidate, 0, len(models))
	for i, m := range models {
		if i > 0 && m.APIKeyRef == nil && m.ProviderRef == "" && m.Provider == a.Spec.Provider {
			m.APIKeyRef, m.ProviderRef = a.Spec.APIKeyRef, a.Spec.ProviderRef
		}
		c := candidate{provider: m.Provider, model: m.Model}
		kind, key, baseURL, problem, err := r.account(ctx, a.Namespace, m)
		if err != nil {
			return nil, err
		}
		c.installation = m.Provider == v1alpha1.ModelZavu && m.APIKeyRef == nil && m.ProviderRef == ""
		switch {
		case problem != "":
			c.problem = problem
		case r.Models == nil:
			c.problem = "this installation calls no model API"
		default:
			if c.client, err = r.Models(kind, key, baseURL); err != nil {
				c.problem = err.Error()
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// account is what calls m: the API type, its key and base URL; problem says why there is none.
func (r *Runtime) account(ctx context.Context, namespace string, m v1alpha1.FallbackModel) (kind v1alpha1.ProviderType,
	key, baseURL, problem string, err error) {
	switch {
	case m.APIKeyRef != nil:
		key, problem, err = r.secretKey(ctx, namespace, m.APIKeyRef.Name, m.APIKeyRef.Key)
		kind = v1alpha1.ProviderType(m.Provider)
		return kind, key, "", problem, err
	case m.ProviderRef != "":
		var p v1alpha1.Provider
		if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: m.ProviderRef}, &p); err != nil {
			return "", "", "", fmt.Sprintf("Provider %q cannot be read", m.ProviderRef), client.IgnoreNotFound(err)
		}
		if !v1alpha1.ServesModel(p.Spec.Type, m.Provider) {
			return "", "", "", fmt.Sprintf("Provider %q is not a %s model provider", p.Name, m.Provider), nil
		}
		return r.providerAccount(ctx, &p)
	case m.Provider == v1alpha1.ModelZavu:
		var list v1alpha1.ProviderList
		if r.InstallationNamespace != "" {
			if err := r.Reader.List(ctx, &list, client.InNamespace(r.InstallationNamespace)); err != nil {
				return "", "", "", "", fmt.Errorf("list the installation's providers: %w", err)
			}
		}
		p := v1alpha1.InstallationModel(list.Items)
		if p == nil {
			return "", "", "", "this installation has no model Provider", nil
		}
		return r.providerAccount(ctx, p)
	}
	return "", "", "", "no API key", nil
}

func (r *Runtime) providerAccount(ctx context.Context, p *v1alpha1.Provider) (v1alpha1.ProviderType, string, string, string, error) {
	baseURL := p.Spec.BaseURL
	if !p.EndpointAllowed(r.InstallationNamespace, r.AllowProjectEndpoints) {
		return "", "", "", fmt.Sprintf("Provider %q may not set baseURL", p.Name), nil
	}
	if p.Spec.SecretRef == nil {
		return p.Spec.Type, "", baseURL, "", nil
	}
	key, problem, err := r.secretKey(ctx, p.Namespace, p.Spec.SecretRef.Name, v1alpha1.ProviderKeyAPIKey)
	return p.Spec.Type, key, baseURL, problem, err
}

func (r *Runtime) secretKey(ctx context.Context, namespace, name, key string) (string, string, error) {
	var s corev1.Secret
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		return "", fmt.Sprintf("Secret %q cannot be read", name), client.IgnoreNotFound(err)
	}
	if len(s.Data[key]) == 0 {
		return "", fmt.Sprintf("Secret %q has no key %s", name, key), nil
	}
	return string(s.Data[key]), "", nil
}
