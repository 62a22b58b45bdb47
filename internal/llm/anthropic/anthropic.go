// Package anthropic is the llm.Model of Anthropic's Messages API (POST /v1/messages), built on
// the official SDK (github.com/anthropics/anthropic-sdk-go/v2, API version 2026-10-21). Its
// loopback peer for tests is the package anthropictest beside it.
//
// What the mapping loses or changes is said where it happens: the temperature is not sent
// (request.go), blocks other than text and tool_use in an answer are dropped and the usage
// counts cached input too (response.go), and an error event in the middle of a stream is given
// the status of its error type (errors.go).
package anthropic

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/switchboard-io/switchboard/internal/llm"
)

// DefaultBaseURL is Anthropic's public API.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultTimeout bounds a whole call (streamed answers included) made with the default HTTP
// client: Anthropic's advice for answers that are not streamed is ten minutes.
const DefaultTimeout = 10 * time.Minute

// Config is one Anthropic account.
type Config struct {
	// APIKey is the account's key (sk-ant-…); required.
	APIKey string
	// BaseURL is the API's base URL; empty: DefaultBaseURL.
	BaseURL string
	// HTTPClient sends the requests; nil: a client with DefaultTimeout.
	HTTPClient *http.Client
}

// Client is an llm.Model of one Anthropic account; it may be used by many goroutines at once.
type Client struct {
	sdk anthropic.Client
	key string
	// account is how Check names the account: Anthropic, or the host of another base URL.
	account string
}

var _ llm.Model = (*Client)(nil)

// New makes a client of cfg's account. It sends nothing.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("anthropic: an API key is required")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("anthropic: the base URL must be an absolute http or https URL")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	sdk := anthropic.NewClient(
		// Nothing from the environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, custom headers,
		// profiles): the Config is the whole account.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		// The agent runtime decides what a failure leads to (the next model), so the SDK
		// does not retry on its own.
		option.WithMaxRetries(0),
		// Spans never carry prompts or answers, whatever the environment says.
		option.WithOpenTelemetryTracesContentMode(option.OpenTelemetryContentModeMetadataOnly),
	)
	account := u.Host
	if strings.EqualFold(u.Hostname(), "api.anthropic.com") {
		account = "Anthropic"
	}
	return &Client{sdk: sdk, key: cfg.APIKey, account: account}, nil
}

func defaultHTTPClient() *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok { // wrapped (by instrumentation, say): keep the wrapper
		return &http.Client{Timeout: DefaultTimeout}
	}
	t = t.Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	return &http.Client{Transport: t, Timeout: DefaultTimeout}
}

// Chat sends req to POST /v1/messages; see llm.Model. Errors are *llm.Error.
func (c *Client) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params, err := toParams(req)
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalid, Message: c.redact(err.Error()), Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, c.classify(err)
	}
	if req.OnText != nil || mustStream(params) {
		return c.stream(ctx, params, req.OnText)
	}
	msg, err := c.sdk.Messages.New(ctx, params)
	if err != nil {
		return nil, c.classify(err)
	}
	return toResponse(msg), nil
}

// mustStream says the SDK would refuse to wait for the whole answer (a max_tokens it expects to
// take over ten minutes): such a call is streamed even without OnText, and answers the same.
func mustStream(p anthropic.MessageNewParams) bool {
	_, err := anthropic.CalculateNonStreamingTimeout(int(p.MaxTokens), p.Model, nil)
	return err != nil
}

// stream sends the request with stream: true, passes each text delta to onText (when set) and
// assembles the whole message from the events.
func (c *Client) stream(ctx context.Context, params anthropic.MessageNewParams, onText func(string)) (*llm.Response, error) {
	s := c.sdk.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var msg anthropic.Message
	stopped := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, c.unavailable("read the answer stream", err)
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && onText != nil && ev.Delta.Text != "" {
				onText(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, c.classify(err)
	}
	if !stopped {
		if err := ctx.Err(); err != nil {
			return nil, c.classify(err)
		}
		return nil, c.unavailable("read the answer stream", errors.New("the stream ended before message_stop"))
	}
	return toResponse(&msg), nil
}
