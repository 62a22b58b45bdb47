package openai_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv := openaitest.New(openaitest.Options{Flavor: f, Models: []string{"a", "b", "c", "d"}})
			t.Cleanup(srv.Close)
			u, _ := url.Parse(srv.URL())
			c := client(t, f, srv.APIKey(), srv.URL(), nil)

			got, err := c.Check(context.Background())
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if want := u.Host + ", 4 models"; got != want {
				t.Errorf("check = %q, want %q", got, want)
			}
			reqs := srv.ListRequests()
			if len(reqs) != 1 || len(srv.Requests()) != 0 {
				t.Fatalf("%d list requests and %d others, want 1 and none", len(reqs), len(srv.Requests()))
			}
			req := reqs[0]
			if req.Method != http.MethodGet || req.Path != "/v1/models" || req.Header.Get("Authorization") != "Bearer "+srv.APIKey() {
				t.Errorf("request %s %s, Authorization %q", req.Method, req.Path, req.Header.Get("Authorization"))
			}
		})
	}
}

// At the provider's public address, the account is named after the provider.
func TestCheckNamesThePublicAPI(t *testing.T) {
	t.Parallel()
	for f, want := range map[openaitest.Flavor]struct{ account, url string }{
		openaitest.OpenAI:  {"OpenAI, 3 models", "https://api.openai.com/v1/models"},
		openaitest.Mistral: {"Mistral, 3 models", "https://api.mistral.ai/v1/models"},
	} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv := openaitest.New(openaitest.Options{Flavor: f})
			t.Cleanup(srv.Close)
			rd := newRedirect(t, srv)
			got, err := client(t, f, srv.APIKey(), "", &http.Client{Transport: rd}).Check(context.Background())
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if got != want.account {
				t.Errorf("check = %q, want %q", got, want.account)
			}
			if asked := rd.asked(); !slices.Equal(asked, []string{want.url}) {
				t.Errorf("asked %v, want %s", asked, want.url)
			}
		})
	}
}

// A local server that takes no key is checked without one.
func TestCheckWithoutKey(t *testing.T) {
	t.Parallel()
	srv := openaitest.New(openaitest.Options{})
	t.Cleanup(srv.Close)
	_, err := client(t, openaitest.OpenAI, "", srv.URL(), nil).Check(context.Background())
	if e := llmError(t, err); e.Kind != llm.KindUnauthorized || e.Status != http.StatusUnauthorized {
		t.Fatalf("check = %v, want unauthorized 401", err)
	}
	if got := srv.ListRequests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization %q sent without a key", got)
	}
}

func TestCheckFailures(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv := openaitest.New(openaitest.Options{Flavor: f})
			t.Cleanup(srv.Close)

			const wrong = "sk-wrong-key-0123456789abcdefghij"
			_, err := client(t, f, wrong, srv.URL(), nil).Check(context.Background())
			if e := llmError(t, err); e.Kind != llm.KindUnauthorized || e.Status != http.StatusUnauthorized {
				t.Errorf("wrong key: %v, want unauthorized 401", err)
			}
			noKey(t, err, wrong)

			c := client(t, f, srv.APIKey(), srv.URL(), nil)
			srv.Fail(http.StatusServiceUnavailable, 1)
			_, err = c.Check(context.Background())
			if e := llmError(t, err); e.Kind != llm.KindUnavailable || e.Status != http.StatusServiceUnavailable {
				t.Errorf("503: %v, want unavailable 503", err)
			}

			srv.Close()
			_, err = c.Check(context.Background())
			if e := llmError(t, err); e.Kind != llm.KindUnavailable || e.Status != 0 {
				t.Errorf("closed server: %v, want unavailable with no status", err)
			}
		})
	}
}
