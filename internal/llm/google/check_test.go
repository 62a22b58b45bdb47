package google_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/llm/google"
	"github.com/switchboard-io/switchboard/internal/llm/google/googletest"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	s, c := start(t, googletest.Options{Models: []string{"gemini-a", "gemini-b"}})
	got, err := c.Check(context.Background())
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	u, _ := url.Parse(s.URL())
	if want := u.Host + ", 2 models"; got != want {
		t.Errorf("check = %q, want %q", got, want)
	}
	reqs := s.ListRequests()
	if len(reqs) != 1 || len(s.Requests()) != 0 || reqs[0].Method != "list" || reqs[0].Status != http.StatusOK || reqs[0].Header.Get("x-goog-api-key") != googletest.Key {
		t.Fatalf("requests = %+v, want one models.list with the key in x-goog-api-key", reqs)
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

// At the Gemini API's public address, the account is named after it.
func TestCheckNamesThePublicAPI(t *testing.T) {
	t.Parallel()
	s := googletest.New(googletest.Options{})
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL())
	rd := &redirectTo{target: u}
	c, err := google.New(google.Config{APIKey: googletest.Key, HTTPClient: &http.Client{Transport: rd}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Check(context.Background())
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if want := "Gemini API, 3 models"; got != want {
		t.Errorf("check = %q, want %q", got, want)
	}
	if len(rd.asked) != 1 || rd.asked[0] != "https://generativelanguage.googleapis.com/v1beta/models" {
		t.Errorf("asked %v", rd.asked)
	}
}

func TestCheckFailures(t *testing.T) {
	t.Parallel()
	s, c := start(t, googletest.Options{})

	// Google answers a wrong key 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
	const wrong = "AIzaSyWrong-0123456789abcdefghijklmnop"
	bad, err := google.New(google.Config{APIKey: wrong, BaseURL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Check(context.Background())
	if e := asLLMError(t, err); e.Kind != llm.KindUnauthorized || e.Status != http.StatusBadRequest || e.Message != "API key not valid. Please pass a valid API key." {
		t.Errorf("wrong key: %+v, want unauthorized 400 API key not valid", e)
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(fmt.Sprintf("%v %+v", e, e), wrong) {
			t.Fatalf("the key is in the error: %v", e)
		}
	}

	s.FailN(http.StatusServiceUnavailable, 1)
	_, err = c.Check(context.Background())
	if e := asLLMError(t, err); e.Kind != llm.KindUnavailable || e.Status != http.StatusServiceUnavailable {
		t.Errorf("503: %+v, want unavailable 503", e)
	}

	s.Close()
	_, err = c.Check(context.Background())
	if e := asLLMError(t, err); e.Kind != llm.KindUnavailable || e.Status != 0 {
		t.Errorf("closed peer: %+v, want unavailable with no status", e)
	}
}
