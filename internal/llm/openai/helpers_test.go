package openai_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/openai"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

var flavors = []openaitest.Flavor{openaitest.OpenAI, openaitest.Mistral}

// model is a model name of the flavor, as an agent would configure it.
func model(f openaitest.Flavor) string {
	if f == openaitest.Mistral {
		return "mistral-small-latest"
	}
	return "gpt-4o-mini"
}

// peer starts a peer of the flavor and a client configured for it.
func peer(t *testing.T, f openaitest.Flavor) (*openaitest.Server, *openai.Client) {
	t.Helper()
	srv := openaitest.New(openaitest.Options{Flavor: f})
	t.Cleanup(srv.Close)
	return srv, client(t, f, srv.APIKey(), srv.URL(), nil)
}

func client(t *testing.T, f openaitest.Flavor, key, baseURL string, hc *http.Client) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{Flavor: openai.Flavor(f), APIKey: key, BaseURL: baseURL, HTTPClient: hc})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

// llmError is err as *llm.Error, failing the test when it is not one.
func llmError(t *testing.T, err error) *llm.Error {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got none")
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *llm.Error, got %T: %v", err, err)
	}
	return e
}

// noKey fails the test when the key shows in the error, its message or anything it wraps.
func noKey(t *testing.T, err error, key string) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), key) {
			t.Fatalf("the key shows in the error: %v", e)
		}
	}
	var le *llm.Error
	if errors.As(err, &le) && strings.Contains(le.Message, key) {
		t.Fatalf("the key shows in the message: %q", le.Message)
	}
}

// redirect sends every request to target whatever its host, remembering the hosts asked for:
// it lets a client configured with a provider's public URL talk to a peer.
type redirect struct {
	target *url.URL
	mu     sync.Mutex
	hosts  []string
}

func (r *redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.hosts = append(r.hosts, req.URL.Scheme+"://"+req.URL.Host+req.URL.Path)
	r.mu.Unlock()
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = r.target.Scheme, r.target.Host, r.target.Host
	return http.DefaultTransport.RoundTrip(out)
}

func (r *redirect) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.hosts...)
}

func newRedirect(t *testing.T, srv *openaitest.Server) *redirect {
	t.Helper()
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	return &redirect{target: u}
}
