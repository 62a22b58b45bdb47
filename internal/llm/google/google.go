// Package google is the llm adapter for Google's Gemini API: the Gemini Developer API at
// generativelanguage.googleapis.com with an API key (not Vertex AI), through the
// google.golang.org/genai SDK. Its loopback peer for tests is googletest.
//
// The SDK's own retries and its automatic continuation of unfinished answers are off: one
// Chat or Embed call is one HTTP request per batch, and a failure comes back at once as an
// *llm.Error for the agent runtime to decide on.
package google

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// DefaultBaseURL is the Gemini API's public URL.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// DefaultTimeout bounds a whole call (a streamed answer included) when Config.HTTPClient is
// nil.
const DefaultTimeout = 5 * time.Minute

// apiVersion is the API version the adapter speaks; v1beta is the one with function calling,
// system instructions and parametersJsonSchema.
const apiVersion = "v1beta"

// Config is one Gemini API account.
type Config struct {
	// APIKey is the Gemini API key (required). It is sent in the x-goog-api-key header and
	// never appears in an error.
	APIKey string
	// BaseURL replaces the API's URL (a proxy, a test peer); empty: DefaultBaseURL.
	BaseURL string
	// HTTPClient sends the requests; nil: a client with DefaultTimeout. Its Transport is
	// wrapped, never changed.
	HTTPClient *http.Client
}

// Client is a Gemini API account: an llm.Model and an llm.Embedder, safe for concurrent use.
type Client struct {
	models *genai.Models
	key    string
	// account is how Check names the account: the Gemini API, or the host of another base URL.
	account string
}

var (
	_ llm.Model    = (*Client)(nil)
	_ llm.Embedder = (*Client)(nil)
)

// New returns a client for cfg. It sends nothing.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("create google client: an API key is required")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("create google client: base URL %q is not an http(s) URL", redact(base, cfg.APIKey))
	}
	hc := &http.Client{Timeout: DefaultTimeout}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.Transport = &recorder{base: hc.Transport}

	attempts := int32(1) // no SDK retries: the runtime moves to the next model instead
	gc, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:     cfg.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:      base,
			APIVersion:   apiVersion,
			RetryOptions: &genai.HTTPRetryOptions{Attempts: &attempts},
		},
	})
	if err != nil {
		// The SDK prints its whole configuration, key included, into some of its errors.
		return nil, fmt.Errorf("create google client: %s", redact(err.Error(), cfg.APIKey))
	}
	account := u.Host
	if strings.EqualFold(u.Hostname(), "generativelanguage.googleapis.com") {
		account = "Gemini API"
	}
	return &Client{models: gc.Models, key: cfg.APIKey, account: account}, nil
}

// Chat sends req to generateContent, or to streamGenerateContent (server-sent events) when
// req.OnText is set.
func (c *Client) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := checkModel(req.Model); err != nil {
		return nil, err
	}
	contents, config, err := buildRequest(req)
	if err != nil {
		return nil, err
	}
	ctx, rec := withRecord(ctx)
	acc := newAccumulator(req, req.OnText)
	if req.OnText == nil {
		resp, err := c.models.GenerateContent(ctx, req.Model, contents, config)
		if err != nil {
			return nil, c.classify(ctx, err, rec)
		}
		acc.add(resp)
		return acc.response()
	}
	for chunk, err := range c.models.GenerateContentStream(ctx, req.Model, contents, config) {
		if err != nil {
			return nil, c.classify(ctx, err, rec)
		}
		acc.add(chunk)
	}
	return acc.response()
}

// maxBatch is the most texts one batchEmbedContents request may carry.
const maxBatch = 100

// Embed embeds inputs with model (text-embedding-004, gemini-embedding-001…) through
// batchEmbedContents, 100 inputs a request. The Gemini API reports no token usage for
// embeddings: Usage stays zero.
// Dimensions is sent as outputDimensionality.
func (c *Client) Embed(ctx context.Context, req llm.EmbedRequest) (*llm.Embeddings, error) {
	model, inputs := req.Model, req.Inputs
	var cfg *genai.EmbedContentConfig
	if req.Dimensions > 0 {
		d := int32(req.Dimensions)
		cfg = &genai.EmbedContentConfig{OutputDimensionality: &d}
	}
	if err := checkModel(model); err != nil {
		return nil, err
	}
	out := &llm.Embeddings{Model: model, Vectors: make([][]float32, 0, len(inputs))}
	for i, in := range inputs {
		if in == "" {
			return nil, invalidf("input %d is empty", i)
		}
	}
	for start := 0; start < len(inputs); start += maxBatch {
		batch := inputs[start:min(start+maxBatch, len(inputs))]
		contents := make([]*genai.Content, len(batch))
		for i, in := range batch {
			contents[i] = &genai.Content{Parts: []*genai.Part{{Text: in}}}
		}
		rctx, rec := withRecord(ctx)
		resp, err := c.models.EmbedContent(rctx, model, contents, cfg)
		if err != nil {
			return nil, c.classify(rctx, err, rec)
		}
		if len(resp.Embeddings) != len(batch) {
			return nil, &llm.Error{Kind: llm.KindUnavailable,
				Message: fmt.Sprintf("the API answered %d embeddings for %d inputs", len(resp.Embeddings), len(batch))}
		}
		for _, e := range resp.Embeddings {
			if e == nil {
				return nil, &llm.Error{Kind: llm.KindUnavailable, Message: "the API answered an empty embedding"}
			}
			out.Vectors = append(out.Vectors, e.Values)
		}
	}
	return out, nil
}
