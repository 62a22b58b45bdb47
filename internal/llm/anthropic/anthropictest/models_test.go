package anthropictest_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/switchboard-io/switchboard/internal/llm/anthropic/anthropictest"
)

type modelPage struct {
	Data []struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	} `json:"data"`
	HasMore bool    `json:"has_more"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
}

// GET /v1/models pages with limit and after_id, as Anthropic's API reference documents it.
func TestListModels(t *testing.T) {
	t.Parallel()
	s := anthropictest.NewServer(t, anthropictest.Options{Models: []string{"claude-sonnet-4-5", "claude-b", "claude-c"}})
	key := s.APIKey()
	list := func(query string) modelPage {
		t.Helper()
		resp := do(t, s, call{method: http.MethodGet, path: "/v1/models" + query, key: key})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/models%s: %d", query, resp.StatusCode)
		}
		var p modelPage
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	p := list("?limit=2")
	if len(p.Data) != 2 || !p.HasMore || *p.FirstID != "claude-sonnet-4-5" || *p.LastID != "claude-b" {
		t.Fatalf("first page = %+v", p)
	}
	if d := p.Data[0]; d.Type != "model" || d.DisplayName != "Claude Sonnet 4.5" || d.CreatedAt == "" {
		t.Errorf("model = %+v", d)
	}
	p = list("?limit=2&after_id=claude-b")
	if len(p.Data) != 1 || p.HasMore || p.Data[0].ID != "claude-c" {
		t.Fatalf("second page = %+v", p)
	}
	if p := list(""); len(p.Data) != 3 || p.HasMore {
		t.Fatalf("default page = %+v", p)
	}

	if resp := do(t, s, call{method: http.MethodGet, path: "/v1/models?limit=0", key: key}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("limit=0: %d, want 400", resp.StatusCode)
	}
	resp := do(t, s, call{method: http.MethodGet, path: "/v1/models", key: "sk-ant-wrong"})
	if b := decodeError(t, resp); resp.StatusCode != http.StatusUnauthorized || b.Error.Type != "authentication_error" {
		t.Errorf("wrong key: %d %+v", resp.StatusCode, b)
	}
	s.Fail(anthropictest.Failure{Status: 529})
	resp = do(t, s, call{method: http.MethodGet, path: "/v1/models", key: key})
	if b := decodeError(t, resp); resp.StatusCode != 529 || b.Error.Type != "overloaded_error" {
		t.Errorf("scripted failure: %d %+v", resp.StatusCode, b)
	}
	if reqs := s.ListRequests(); len(reqs) != 5 || len(s.Requests()) != 0 || reqs[0].Path != "/v1/models" || reqs[0].Header.Get("x-api-key") != "" {
		t.Errorf("requests = %d, first %+v: want 5 authenticated ones recorded, without the key", len(reqs), reqs[0])
	}
}
