package webrisk_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/webrisk"
	"github.com/switchboard-io/switchboard/internal/transport/webrisk/webrisktest"
)

// newClient is a client of base with cfg, and the peer's key when cfg has none.
func newClient(t *testing.T, base string, cfg webrisk.Config) *webrisk.Client {
	t.Helper()
	cfg.BaseURL = base
	if cfg.APIKey == "" {
		cfg.APIKey = webrisktest.APIKey
	}
	c, err := webrisk.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// asError is the *webrisk.Error err carries, failing the test when there is none or when err is
// also a *transport.Temporary.
func asError(t *testing.T, err error) *webrisk.Error {
	t.Helper()
	var e *webrisk.Error
	var tmp *transport.Temporary
	if !errors.As(err, &e) || errors.As(err, &tmp) {
		t.Fatalf("err = %v (%T), want a *webrisk.Error and no *transport.Temporary", err, err)
	}
	return e
}

// asTemporary is the *transport.Temporary err carries, failing the test when there is none or
// when err is also a *webrisk.Error.
func asTemporary(t *testing.T, err error) *transport.Temporary {
	t.Helper()
	var e *webrisk.Error
	var tmp *transport.Temporary
	if !errors.As(err, &tmp) || errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want a *transport.Temporary and no *webrisk.Error", err, err)
	}
	return tmp
}

// noKey fails the test when err's text has key in it, as written or escaped.
func noKey(t *testing.T, err error, key string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if s := err.Error(); strings.Contains(s, key) || strings.Contains(s, url.QueryEscape(key)) {
		t.Fatalf("error text carries the API key: %s", s)
	}
}

func TestLookupSafe(t *testing.T) {
	t.Parallel()
	srv := webrisktest.NewServer(t)
	c := newClient(t, srv.URL, webrisk.Config{})
	const uri = "https://example.com/a path?q=1&key=x#frag"
	v, err := c.Lookup(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Safe() || v.Threats != nil || !v.ExpireTime.IsZero() {
		t.Fatalf("verdict = %+v, want safe with a zero ExpireTime", v)
	}
	if got := srv.Lookups(); !slices.Equal(got, []string{uri}) {
		t.Fatalf("lookups = %q, want the URI as given", got)
	}
}

func TestLookupFlagged(t *testing.T) {
	t.Parallel()
	srv := webrisktest.NewServer(t)
	srv.Flag("bad.example", webrisk.ThreatMalware)
	srv.Flag("https://ok.example/phish", webrisk.ThreatSocialEngineering, webrisk.ThreatUnwantedSoftware)
	c := newClient(t, srv.URL, webrisk.Config{})
	for _, tc := range []struct {
		uri  string
		want []string
	}{
		{"http://bad.example/anything", []string{"MALWARE"}},
		{"https://BAD.example:8443/x", []string{"MALWARE"}},
		{"https://ok.example/phish", []string{"SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE"}},
		{"https://ok.example/other", nil},
		{"https://login.phishing.test/", []string{"SOCIAL_ENGINEERING"}},
		{"http://dl.malware.test/setup.exe", []string{"MALWARE"}},
	} {
		before := time.Now()
		v, err := c.Lookup(context.Background(), tc.uri)
		if err != nil {
			t.Fatalf("%s: %v", tc.uri, err)
		}
		if !slices.Equal(v.Threats, tc.want) || v.Safe() != (tc.want == nil) {
			t.Errorf("%s: threats = %q (safe %v), want %q", tc.uri, v.Threats, v.Safe(), tc.want)
		}
		if tc.want == nil {
			if !v.ExpireTime.IsZero() {
				t.Errorf("%s: safe verdict expires at %v, want zero", tc.uri, v.ExpireTime)
			}
			continue
		}
		if lo, hi := before.Add(webrisktest.TTL-time.Second), time.Now().Add(webrisktest.TTL+time.Second); v.ExpireTime.Before(lo) || v.ExpireTime.After(hi) {
			t.Errorf("%s: expires at %v, want about %v from now", tc.uri, v.ExpireTime, webrisktest.TTL)
		}
		if v.ExpireTime.Location() != time.UTC {
			t.Errorf("%s: ExpireTime in %v, want UTC", tc.uri, v.ExpireTime.Location())
		}
	}
}

func TestThreatTypeFiltering(t *testing.T) {
	t.Parallel()
	srv := webrisktest.NewServer(t)
	srv.Flag("mixed.example", webrisk.ThreatMalware, webrisk.ThreatUnwantedSoftware, webrisk.ThreatSocialEngineeringExtendedCoverage)
	for _, tc := range []struct {
		types []string
		want  []string
	}{
		{nil, []string{"MALWARE", "UNWANTED_SOFTWARE"}}, // the default three
		{[]string{webrisk.ThreatSocialEngineering, webrisk.ThreatUnwantedSoftware}, []string{"UNWANTED_SOFTWARE"}},
		{[]string{webrisk.ThreatSocialEngineering}, nil},
		{[]string{webrisk.ThreatSocialEngineeringExtendedCoverage}, []string{"SOCIAL_ENGINEERING_EXTENDED_COVERAGE"}},
	} {
		c := newClient(t, srv.URL, webrisk.Config{ThreatTypes: tc.types})
		v, err := c.Lookup(context.Background(), "https://mixed.example/")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v.Threats, tc.want) {
			t.Errorf("asking %q: threats = %q, want %q", tc.types, v.Threats, tc.want)
		}
	}
}

// TestRequest: the request is uris.search's as Google documents it.
func TestRequest(t *testing.T) {
	t.Parallel()
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL+"/", webrisk.Config{APIKey: "k-123"})
	const uri = "http://testsafebrowsing.appspot.com/s/malware.html?a=1&b=2"
	if _, err := c.Lookup(context.Background(), uri); err != nil {
		t.Fatal(err)
	}
	q := got.URL.Query()
	switch {
	case got.Method != http.MethodGet || got.URL.Path != "/v1/uris:search":
		t.Fatalf("request = %s %s, want GET /v1/uris:search", got.Method, got.URL.Path)
	case !slices.Equal(q["threatTypes"], []string{"MALWARE", "SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE"}):
		t.Fatalf("threatTypes = %q", q["threatTypes"])
	case !slices.Equal(q["uri"], []string{uri}) || !slices.Equal(q["key"], []string{"k-123"}) || len(q) != 3:
		t.Fatalf("query = %v", q)
	}
}

func TestBadKey(t *testing.T) {
	t.Parallel()
	srv := webrisktest.NewServer(t)
	const key = "AIzaSyWRONG-key-that-must-not-leak"
	c := newClient(t, srv.URL, webrisk.Config{APIKey: key})
	_, err := c.Lookup(context.Background(), "https://example.com/")
	e := asError(t, err)
	if e.Status != http.StatusForbidden || e.Code != "PERMISSION_DENIED" || e.Reason != "API_KEY_INVALID" || !e.KeyRejected() || e.Message == "" {
		t.Fatalf("error = %+v, want 403 PERMISSION_DENIED API_KEY_INVALID", e)
	}
	noKey(t, err, key)
}

// TestRefusals: how Google's answers classify, from the peer and from answers it does not give.
func TestRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status      int
		code        string // the Error's Code, or the Temporary's ProviderCode
		temporary   bool
		keyRejected bool
	}{
		{400, "INVALID_ARGUMENT", false, false},
		{401, "UNAUTHENTICATED", false, true},
		{403, "PERMISSION_DENIED", false, true},
		{404, "NOT_FOUND", false, false},
		{429, "RESOURCE_EXHAUSTED", true, false},
		{500, "INTERNAL", true, false},
		{503, "UNAVAILABLE", true, false},
		{504, "DEADLINE_EXCEEDED", true, false},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			t.Parallel()
			srv := webrisktest.NewServer(t)
			c := newClient(t, srv.URL, webrisk.Config{})
			srv.FailNext(tc.status)
			_, err := c.Lookup(context.Background(), "https://example.com/")
			if tc.temporary {
				if tmp := asTemporary(t, err); tmp.ProviderCode != tc.code {
					t.Fatalf("temporary = %+v, want provider code %s", tmp, tc.code)
				}
				if !strings.Contains(err.Error(), tc.code) {
					t.Fatalf("error %q does not say %s", err, tc.code)
				}
			} else if e := asError(t, err); e.Status != tc.status || e.Code != tc.code || e.KeyRejected() != tc.keyRejected || e.Message == "" {
				t.Fatalf("error = %+v, want %d %s", e, tc.status, tc.code)
			}
			// The failure was for one request only.
			if _, err := c.Lookup(context.Background(), "https://example.com/"); err != nil {
				t.Fatalf("after the failure: %v", err)
			}
		})
	}
}

func TestMissingURI(t *testing.T) {
	t.Parallel()
	c := newClient(t, webrisktest.NewServer(t).URL, webrisk.Config{})
	_, err := c.Lookup(context.Background(), "")
	if e := asError(t, err); e.Status != 400 || e.Code != "INVALID_ARGUMENT" || e.KeyRejected() {
		t.Fatalf("error = %+v, want 400 INVALID_ARGUMENT", e)
	}
}

// TestAnswersOffThePeer: answers the peer does not give (a gateway's HTML, retry hints, a 200
// without JSON, Google's message quoting the key).
func TestAnswersOffThePeer(t *testing.T) {
	t.Parallel()
	const key = "AIzaSySECRET/+key"
	for _, tc := range []struct {
		name       string
		status     int
		header     string // Retry-After
		body       string
		temporary  bool
		code       string // Temporary's ProviderCode or Error's Code
		retryAfter time.Duration
	}{
		{"gateway HTML", 502, "", `<html>502 Bad Gateway</html>`, true, "502", 0},
		{"Retry-After", 429, "7", `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}`, true, "RESOURCE_EXHAUSTED", 7 * time.Second},
		{"RetryInfo", 503, "", `{"error":{"code":503,"message":"busy","status":"UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2.5s"}]}}`, true, "UNAVAILABLE", 2500 * time.Millisecond},
		{"200 without JSON", 200, "", `<html>maintenance</html>`, true, "", 0},
		{"unknown key, as Google answers it", 400, "", `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`, false, "INVALID_ARGUMENT", 0},
		{"message quoting the key", 403, "", `{"error":{"code":403,"message":"key AIzaSySECRET/+key and AIzaSySECRET%2F%2Bkey are restricted","status":"PERMISSION_DENIED"}}`, false, "PERMISSION_DENIED", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			c := newClient(t, srv.URL, webrisk.Config{APIKey: key})
			_, err := c.Lookup(context.Background(), "https://example.com/")
			noKey(t, err, key)
			if !tc.temporary {
				e := asError(t, err)
				if e.Code != tc.code || !e.KeyRejected() {
					t.Fatalf("error = %+v, want %s, key rejected", e, tc.code)
				}
				return
			}
			if tmp := asTemporary(t, err); tmp.ProviderCode != tc.code || tmp.RetryAfter != tc.retryAfter {
				t.Fatalf("temporary = %+v, want provider code %q, retry after %v", tmp, tc.code, tc.retryAfter)
			}
		})
	}
}

func TestNetworkError(t *testing.T) {
	t.Parallel()
	// A server that is gone: the connection is refused.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	c := newClient(t, gone.URL, webrisk.Config{})
	_, err := c.Lookup(context.Background(), "https://lookup-target.example/")
	asTemporary(t, err)
	noKey(t, err, webrisktest.APIKey)
	var ue *url.Error
	if errors.As(err, &ue) || strings.Contains(err.Error(), "lookup-target") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("error %q keeps the request's URL, or lost its cause", err)
	}
}

// leakyTransport fails every request with an error that repeats its URL, key and all.
type leakyTransport struct{}

func (leakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("proxy refused %s", r.URL)
}

func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	const key = "AIzaSyLEAK+check/=="
	c := newClient(t, "http://127.0.0.1:1", webrisk.Config{APIKey: key, HTTP: &http.Client{Transport: leakyTransport{}}})
	_, err := c.Lookup(context.Background(), "https://example.com/")
	asTemporary(t, err)
	noKey(t, err, key)
	if !strings.Contains(err.Error(), "proxy refused") {
		t.Fatalf("error %q lost its cause", err)
	}
	// A refusal of the key from the peer, and a lookup cut short.
	srv := webrisktest.NewServer(t)
	c = newClient(t, srv.URL, webrisk.Config{APIKey: key})
	_, err = c.Lookup(context.Background(), "https://example.com/")
	noKey(t, err, key)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Lookup(ctx, "https://example.com/")
	noKey(t, err, key)
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	t.Run("before", func(t *testing.T) {
		t.Parallel()
		srv := webrisktest.NewServer(t)
		c := newClient(t, srv.URL, webrisk.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Lookup(ctx, "https://example.com/")
		var tmp *transport.Temporary
		if !errors.Is(err, context.Canceled) || errors.As(err, &tmp) {
			t.Fatalf("err = %v (%T), want context.Canceled, not temporary", err, err)
		}
		if n := len(srv.Lookups()); n != 0 {
			t.Fatalf("%d lookups reached the server", n)
		}
	})
	t.Run("during", func(t *testing.T) {
		t.Parallel()
		arrived := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}))
		t.Cleanup(srv.Close)
		c := newClient(t, srv.URL, webrisk.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-arrived; cancel() }()
		start := time.Now()
		_, err := c.Lookup(ctx, "https://example.com/")
		if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
			t.Fatalf("err = %v after %v, want context.Canceled at once", err, time.Since(start))
		}
		noKey(t, err, webrisktest.APIKey)
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		c := newClient(t, srv.URL, webrisk.Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := c.Lookup(ctx, "https://example.com/"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestNew(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]webrisk.Config{
		"no key":              {},
		"base URL not http":   {APIKey: "k", BaseURL: "ftp://example.com"},
		"base URL no host":    {APIKey: "k", BaseURL: "/v1"},
		"base URL with query": {APIKey: "k", BaseURL: "https://example.com/?a=b"},
		"unknown threat type": {APIKey: "k", ThreatTypes: []string{"MALWARE", "PHISHING"}},
		"unspecified type":    {APIKey: "k", ThreatTypes: []string{"THREAT_TYPE_UNSPECIFIED"}},
	} {
		if _, err := webrisk.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	if _, err := webrisk.New(webrisk.Config{APIKey: "k"}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
