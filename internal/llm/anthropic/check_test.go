package anthropic_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/anthropic"
	"github.com/switchboard-io/switchboard/internal/llm/anthropic/anthropictest"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	peer := anthropictest.NewServer(t, anthropictest.Options{Models: []string{"claude-a", "claude-b"}})
	c := newClient(t, peer.URL(), peer.APIKey())
	got, err := c.Check(context.Background())
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	u, _ := url.Parse(peer.URL())
	if want := u.Host + ", 2 models"; got != want {
		t.Errorf("check = %q, want %q", got, want)
	}
	reqs := peer.ListRequests()
	if len(reqs) != 1 || len(peer.Requests()) != 0 || reqs[0].Path != "/v1/models" || reqs[0].Version != anthropictest.Version {
		t.Fatalf("requests = %+v, want one GET /v1/models with anthropic-version %s", reqs, anthropictest.Version)
	}
}

// redirectTo sends every request to target, whatever its host, remembering the URLs asked for.
type redirectTo struct {
	target *url.URL
	asked  []string
}

func (r *redirectTo) RoundTrip(req *http.Request) (*http.Response, error) {
	r.asked = append(r.asked, req.URL.Scheme+"://"+req.URL.Host+req.URL.Path)
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = r.target.Scheme, r.target.Host, r.target.Host
	return http.DefaultTransport.RoundTrip(out)
}

// At Anthropic's public address, the account is named Anthropic.
func TestCheckNamesThePublicAPI(t *testing.T) {
	t.Parallel()
	peer := anthropictest.NewServer(t, anthropictest.Options{})
	u, _ := url.Parse(peer.URL())
	rd := &redirectTo{target: u}
	c, err := anthropic.New(anthropic.Config{APIKey: peer.APIKey(), HTTPClient: &http.Client{Transport: rd, Timeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Check(context.Background())
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if want := "Anthropic, 3 models"; got != want {
		t.Errorf("check = %q, want %q", got, want)
	}
	if len(rd.asked) != 1 || rd.asked[0] != "https://api.anthropic.com/v1/models" {
		t.Errorf("asked %v", rd.asked)
	}
}

func TestCheckFailures(t *testing.T) {
	t.Parallel()
	peer := anthropictest.NewServer(t, anthropictest.Options{})

	const wrong = "sk-ant-api03-WRONG-zzzzzzzzzzzzzzzz"
	_, err := newClient(t, peer.URL(), wrong).Check(context.Background())
	if e := llmError(t, err); e.Kind != llm.KindUnauthorized || e.Status != http.StatusUnauthorized || e.Message != "invalid x-api-key" {
		t.Errorf("wrong key: %+v, want unauthorized 401 invalid x-api-key", e)
	}
	assertNoKey(t, err, wrong)

	c := newClient(t, peer.URL(), peer.APIKey())
	peer.Fail(anthropictest.Failure{Status: 529})
	_, err = c.Check(context.Background())
	if e := llmError(t, err); e.Kind != llm.KindUnavailable || e.Status != 529 {
		t.Errorf("529: %+v, want unavailable 529", e)
	}

	peer.Close()
	_, err = c.Check(context.Background())
	if e := llmError(t, err); e.Kind != llm.KindUnavailable || e.Status != 0 {
		t.Errorf("closed peer: %+v, want unavailable with no status", e)
	}
}
