package agent

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/sandbox"
)

// The embedding model of each model API, and the dimensions asked for where the API lets them
// be reduced (a smaller vector is a smaller index: docs/agents.md, "What a chunk costs").
var embeddingModels = map[v1alpha1.ProviderType]struct {
	model string
	dims  int // 0: the model's own, labelled with known
	known int
}{
	v1alpha1.ProviderOpenAI:  {model: "text-embedding-3-small", dims: 256},
	v1alpha1.ProviderGoogle:  {model: "gemini-embedding-001", dims: 256},
	v1alpha1.ProviderMistral: {model: "mistral-embed", known: 1024},
}

// LocalEmbedding labels the vectors of Switchboard's own embedder (the sandbox's): an
// installation with no embedding Provider, and test keys, embed with it.
var LocalEmbedding = fmt.Sprintf("switchboard/hashing@%d", sandbox.EmbeddingDimensions)

// EmbeddingRoute is the model that embeds agent a's documents (knowledge.Routes): the agent's
// own account when its provider has embeddings (OpenAI, Google, Mistral); else (Anthropic, the
// installation's model) the installation's first model Provider that has them; else
// Switchboard's local embedder, which matches words rather than meaning.
func (r *Runtime) EmbeddingRoute(ctx context.Context, a *v1alpha1.Agent) (knowledge.Route, error) {
	own := v1alpha1.FallbackModel{Provider: a.Spec.Provider, Model: a.Spec.Model, APIKeyRef: a.Spec.APIKeyRef, ProviderRef: a.Spec.ProviderRef}
	if own.Provider != v1alpha1.ModelZavu {
		if _, ok := embeddingModels[v1alpha1.ProviderType(own.Provider)]; ok {
			kind, key, baseURL, problem, err := r.account(ctx, a.Namespace, own)
			if err != nil {
				return knowledge.Route{}, err
			}
			if problem != "" {
				return knowledge.Route{Problem: problem}, nil
			}
			return r.embeddingRoute(kind, key, baseURL)
		}
	}
	var list v1alpha1.ProviderList
	if r.InstallationNamespace != "" {
		if err := r.Reader.List(ctx, &list, client.InNamespace(r.InstallationNamespace)); err != nil {
			return knowledge.Route{}, fmt.Errorf("list the installation's providers: %w", err)
		}
	}
	// The installation's model Provider first (the default, then the oldest), then the others.
	ordered := list.Items
	if p := v1alpha1.InstallationModel(list.Items); p != nil {
		ordered = append([]v1alpha1.Provider{*p}, list.Items...)
	}
	for i := range ordered {
		p := &ordered[i]
		if _, ok := embeddingModels[p.Spec.Type]; !ok || !p.DeletionTimestamp.IsZero() {
			continue
		}
		kind, key, baseURL, problem, err := r.providerAccount(ctx, p)
		if err != nil {
			return knowledge.Route{}, err
		}
		if problem == "" {
			route, err := r.embeddingRoute(kind, key, baseURL)
			route.Installation = true
			return route, err
		}
	}
	return knowledge.Route{Embedder: sandbox.Model{}, Model: "hashing", Label: LocalEmbedding, Local: true}, nil
}

func (r *Runtime) embeddingRoute(kind v1alpha1.ProviderType, key, baseURL string) (knowledge.Route, error) {
	m := embeddingModels[kind]
	if r.Models == nil {
		return knowledge.Route{Problem: "this installation calls no model API"}, nil
	}
	c, err := r.Models(kind, key, baseURL)
	if err != nil {
		return knowledge.Route{Problem: err.Error()}, nil
	}
	e, ok := c.(llm.Embedder)
	if !ok {
		return knowledge.Route{Problem: fmt.Sprintf("the %s API has no embeddings", kind)}, nil
	}
	dims := m.dims
	if dims == 0 {
		dims = m.known
	}
	route := knowledge.Route{Embedder: e, Model: m.model, Dimensions: m.dims, Label: fmt.Sprintf("%s/%s@%d", kind, m.model, dims)}
	return route, nil
}

// ChargeEmbedding takes what tokens of the installation's embedding model cost from the
// project's balance, at its PriceList's model prices (input tokens), inside tx
// (knowledge.Routes). Nothing priced: nothing taken.
func (r *Runtime) ChargeEmbedding(ctx context.Context, tx pgx.Tx, project, chargeID, model string, tokens int64) (bool, error) {
	if r.Prices == nil || tokens <= 0 {
		return true, nil
	}
	list, err := r.Prices.For(ctx, project)
	if err != nil {
		return false, err
	}
	cost, _, err := billing.TokensQuote(list, model, tokens, 0)
	if err != nil || cost <= 0 {
		return err == nil, err
	}
	a, ok, err := r.billingAccount(ctx, project)
	if err != nil || !ok {
		return err == nil, err
	}
	err = billing.ChargeAll(ctx, tx, a, []billing.Charge{{MessageID: chargeID, Amount: cost}}, false, r.clock().UTC())
	if isInsufficient(err) {
		return false, nil
	}
	return err == nil, err
}
