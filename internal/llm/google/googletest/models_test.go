package googletest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/switchboard-io/switchboard/internal/llm/google/googletest"
)

func get(t *testing.T, url, key string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-goog-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// models.list pages with pageSize and pageToken, behind the same key check as the other methods.
func TestListModels(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{Models: []string{"gemini-2.5-flash", "gemini-b", "gemini-embedding-001"}})
	t.Cleanup(s.Close)
	type page struct {
		Models []struct {
			Name                       string   `json:"name"`
			DisplayName                string   `json:"displayName"`
			SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
		} `json:"models"`
		NextPageToken string `json:"nextPageToken"`
	}
	list := func(query string) page {
		t.Helper()
		a := get(t, s.URL()+"/v1beta/models"+query, googletest.Key)
		if a.status != http.StatusOK {
			t.Fatalf("list%s: %d %s", query, a.status, a.body)
		}
		var p page
		if err := json.Unmarshal([]byte(a.body), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	p := list("?pageSize=2")
	if len(p.Models) != 2 || p.NextPageToken == "" || p.Models[0].Name != "models/gemini-2.5-flash" || p.Models[0].DisplayName != "Gemini 2.5 Flash" {
		t.Fatalf("first page = %+v", p)
	}
	p = list("?pageSize=2&pageToken=" + p.NextPageToken)
	if len(p.Models) != 1 || p.NextPageToken != "" || p.Models[0].SupportedGenerationMethods[0] != "embedContent" {
		t.Fatalf("second page = %+v", p)
	}
	if a := get(t, s.URL()+"/v1beta/models?pageToken=nonsense", googletest.Key); a.status != http.StatusBadRequest {
		t.Errorf("bad page token: %d", a.status)
	}

	a := get(t, s.URL()+"/v1beta/models", "AIzaSyWrong")
	var e errorBody
	_ = json.Unmarshal([]byte(a.body), &e)
	if a.status != http.StatusBadRequest || e.Error.Status != "INVALID_ARGUMENT" || len(e.Error.Details) == 0 || e.Error.Details[0]["reason"] != "API_KEY_INVALID" {
		t.Errorf("wrong key: %d %s", a.status, a.body)
	}
	s.FailN(http.StatusServiceUnavailable, 1)
	if a := get(t, s.URL()+"/v1beta/models", googletest.Key); a.status != http.StatusServiceUnavailable {
		t.Errorf("scripted failure: %d", a.status)
	}
	if lists := s.ListRequests(); len(lists) != 5 || lists[0].Method != "list" || lists[3].Status != http.StatusBadRequest || len(s.Requests()) != 0 {
		t.Errorf("%d list requests (%+v) and %d others, want 5 and none", len(lists), lists, len(s.Requests()))
	}
}
