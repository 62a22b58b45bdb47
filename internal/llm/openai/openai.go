// Package openai is the llm adapter for OpenAI's Chat Completions API, the servers that speak it
// (Ollama, vLLM, LiteLLM), and Mistral's API, which is the same API with known differences (see
// Flavor). It is built on the official SDK (github.com/openai/openai-go/v3) with the SDK's own
// retries off: on a retryable failure the agent runtime moves to the next model itself.
//
// Chat Completions, not the Responses API: it is the one the compatible servers implement.
//
// Wire decisions:
//   - The answer's bound is max_completion_tokens for the public OpenAI API (api.openai.com),
//     which has deprecated max_tokens and refuses it for its reasoning models, and max_tokens
//     everywhere else: Ollama, vLLM, LiteLLM and Mistral all take max_tokens, and Mistral
//     refuses max_completion_tokens (422).
//   - Streams ask for usage (stream_options.include_usage) on the openai flavor; Mistral refuses
//     stream_options (422) and sends usage in its last chunk anyway.
//   - A tool result that failed (IsError) has no field of its own in this API: its content is
//     "Error: " and the text.
//   - Tool call ids are sent back as they were received, except where the provider would refuse
//     them: Mistral takes exactly nine letters and digits, OpenAI at most 40 characters, so an id
//     made elsewhere (another provider's, a made-up one) is replaced by one derived from it
//     with SHA-256 — the same id always maps to the same replacement, so a call and its result
//     stay linked without any state.
//   - Nothing the provider said about the key reaches an error: the key itself, and the masked
//     key of OpenAI's 401, are redacted from every message.
package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// Flavor is the provider a Client talks to.
type Flavor string

const (
	// FlavorOpenAI is OpenAI's API and the servers compatible with it.
	FlavorOpenAI Flavor = "openai"
	// FlavorMistral is Mistral's API.
	FlavorMistral Flavor = "mistral"
)

// The providers' public base URLs, used when Config.BaseURL is empty.
const (
	OpenAIBaseURL  = "https://api.openai.com/v1"
	MistralBaseURL = "https://api.mistral.ai/v1"
)

// DefaultTimeout bounds a whole call (a streamed answer included) when Config.HTTPClient is nil.
const DefaultTimeout = 5 * time.Minute

// Config configures a Client.
type Config struct {
	// Flavor is "openai" (the default) or "mistral".
	Flavor Flavor
	APIKey string
	// BaseURL is the API's base URL, as https://api.openai.com/v1; empty is the flavor's public one.
	BaseURL string
	// HTTPClient makes the requests; nil is a client with DefaultTimeout.
	HTTPClient *http.Client
}

// Client is a Model and an Embedder for one account of the provider.
type Client struct {
	flavor Flavor
	key    string
	// completionTokens sends the bound as max_completion_tokens (the public OpenAI API).
	completionTokens bool
	// streamUsage asks for usage in streams (stream_options.include_usage).
	streamUsage bool
	// account is how Check names the account: the provider, or the host of a compatible server.
	account    string
	chat       oai.ChatCompletionService
	embeddings oai.EmbeddingService
	models     oai.ModelService
}

var (
	_ llm.Model    = (*Client)(nil)
	_ llm.Embedder = (*Client)(nil)
)

// New makes a Client. It reads nothing from the environment (the SDK's OPENAI_* variables
// included): everything comes from cfg.
func New(cfg Config) (*Client, error) {
	flavor := cfg.Flavor
	if flavor == "" {
		flavor = FlavorOpenAI
	}
	base := cfg.BaseURL
	switch flavor {
	case FlavorOpenAI:
		if base == "" {
			base = OpenAIBaseURL
		}
	case FlavorMistral:
		if base == "" {
			base = MistralBaseURL
		}
	default:
		return nil, fmt.Errorf("new model client: unknown flavor %q (want %q or %q)", flavor, FlavorOpenAI, FlavorMistral)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("new model client: base URL is not an absolute http(s) URL")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Client{
		flavor:           flavor,
		key:              cfg.APIKey,
		completionTokens: flavor == FlavorOpenAI && strings.EqualFold(u.Hostname(), "api.openai.com"),
		streamUsage:      flavor == FlavorOpenAI,
		account:          accountName(flavor, u),
		// The services are made directly, not through oai.NewClient, which would add options
		// read from the environment.
		chat:       oai.NewChatCompletionService(opts...),
		embeddings: oai.NewEmbeddingService(opts...),
		models:     oai.NewModelService(opts...),
	}, nil
}

// Chat sends req as a chat completion, streamed when req.OnText is set.
func (c *Client) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	var raw *http.Response
	if req.OnText != nil {
		if c.streamUsage {
			params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
		}
		stream := c.chat.NewStreaming(ctx, params, option.WithResponseInto(&raw))
		defer stream.Close()
		var acc accumulator
		for stream.Next() {
			acc.add(stream.Current(), req.OnText)
		}
		if err := stream.Err(); err != nil {
			return nil, c.failure(ctx, raw, err)
		}
		return acc.response()
	}
	completion, err := c.chat.New(ctx, params, option.WithResponseInto(&raw))
	if err != nil {
		return nil, c.failure(ctx, raw, err)
	}
	return response(completion)
}

// Embed returns the embeddings of inputs, in one request.
// Dimensions is sent as OpenAI's dimensions (text-embedding-3 models); Mistral's
// mistral-embed has one length and is asked for none.
func (c *Client) Embed(ctx context.Context, req llm.EmbedRequest) (*llm.Embeddings, error) {
	model, inputs := req.Model, req.Inputs
	if len(inputs) == 0 {
		return &llm.Embeddings{Model: model}, nil
	}
	params := oai.EmbeddingNewParams{
		Model: model,
		Input: oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
	}
	if req.Dimensions > 0 && c.flavor != FlavorMistral {
		params.Dimensions = oai.Int(int64(req.Dimensions))
	}
	var raw *http.Response
	res, err := c.embeddings.New(ctx, params, option.WithResponseInto(&raw))
	if err != nil {
		return nil, c.failure(ctx, raw, err)
	}
	if len(res.Data) != len(inputs) {
		return nil, broken("the answer has %d vectors for %d inputs", len(res.Data), len(inputs))
	}
	vectors := make([][]float32, len(inputs))
	for _, d := range res.Data {
		i := int(d.Index)
		if i < 0 || i >= len(vectors) || vectors[i] != nil {
			return nil, broken("the answer has a vector of index %d for %d inputs", d.Index, len(inputs))
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			v[j] = float32(x)
		}
		vectors[i] = v
	}
	return &llm.Embeddings{
		Vectors: vectors,
		Usage:   llm.Usage{InputTokens: res.Usage.PromptTokens},
		Model:   res.Model,
	}, nil
}
