package webrisktest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport/webrisk/webrisktest"
)

// answer is a uris.search answer: a verdict or Google's error body.
type answer struct {
	Threat *struct {
		ThreatTypes []json.RawMessage `json:"threatTypes"`
		ExpireTime  time.Time         `json:"expireTime"`
	} `json:"threat"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
		} `json:"details"`
	} `json:"error"`
}

// search asks srv's uris.search with the query q and the headers header, and returns the HTTP
// status and the answer.
func search(t *testing.T, srv *webrisktest.Server, q url.Values, header http.Header) (int, answer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/uris:search?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("answer is no JSON: %v", err)
	}
	if (resp.StatusCode == http.StatusOK) != (a.Error == nil) || (a.Error != nil && a.Error.Code != resp.StatusCode) {
		t.Fatalf("status %d with answer %+v", resp.StatusCode, a)
	}
	return resp.StatusCode, a
}

func threats(a answer) []string {
	if a.Threat == nil {
		return nil
	}
	var out []string
	for _, raw := range a.Threat.ThreatTypes {
		out = append(out, string(raw))
	}
	return out
}

func TestSearch(t *testing.T) {
	t.Parallel()
	srv := webrisktest.NewServer(t)
	srv.Flag("both.example", "MALWARE", "SOCIAL_ENGINEERING")
	srv.Flag("http://exact.example/x", "UNWANTED_SOFTWARE")
	all := []string{"MALWARE", "SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE", "SOCIAL_ENGINEERING_EXTENDED_COVERAGE"}
	for _, tc := range []struct {
		uri   string
		asked []string
		want  []string
	}{
		{"https://example.com/", all, nil},
		{"https://both.example/page", all, []string{`"MALWARE"`, `"SOCIAL_ENGINEERING"`}},
		{"https://both.example/page", []string{"SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE"}, []string{`"SOCIAL_ENGINEERING"`}},
		{"https://both.example/page", []string{"UNWANTED_SOFTWARE"}, nil},
		{"both.example", []string{"MALWARE"}, []string{`"MALWARE"`}},
		{"http://exact.example/x", all, []string{`"UNWANTED_SOFTWARE"`}},
		{"http://exact.example/y", all, nil},
		{"https://a.b.malware.test/x", all, []string{`"MALWARE"`}},
		{"https://a.b.malware.test/x", []string{"SOCIAL_ENGINEERING"}, nil},
		{"https://secure.phishing.test/login", all, []string{`"SOCIAL_ENGINEERING"`}},
		{"https://notmalware.test/", all, nil},
	} {
		before := time.Now()
		status, a := search(t, srv, url.Values{"key": {webrisktest.APIKey}, "uri": {tc.uri}, "threatTypes": tc.asked}, nil)
		if status != http.StatusOK || !slices.Equal(threats(a), tc.want) {
			t.Errorf("%s asking %q: %d %q, want %q", tc.uri, tc.asked, status, threats(a), tc.want)
			continue
		}
		if tc.want == nil {
			if a.Threat != nil {
				t.Errorf("%s: answer %+v, want {}", tc.uri, a.Threat)
			}
			continue
		}
		if exp := a.Threat.ExpireTime; exp.Before(before.Add(webrisktest.TTL-time.Second)) || exp.After(time.Now().Add(webrisktest.TTL+time.Second)) {
			t.Errorf("%s: expireTime %v, want %v ahead", tc.uri, exp, webrisktest.TTL)
		}
	}
	if got := srv.Lookups(); len(got) != 11 || got[0] != "https://example.com/" || got[4] != "both.example" {
		t.Fatalf("lookups = %q", got)
	}
}

// TestGeneratedClientDialect: enum numbers in, and out when $alt asks for them, with the key in
// the X-Goog-Api-Key header, as Google's generated REST client asks.
func TestGeneratedClientDialect(t *testing.T) {
	t.Parallel()
	srv := webrisktest.NewServer(t)
	q := url.Values{"$alt": {"json;enum-encoding=int"}, "uri": {"http://x.malware.test/"}, "threatTypes": {"1", "2"}}
	status, a := search(t, srv, q, http.Header{"X-Goog-Api-Key": {webrisktest.APIKey}})
	if status != http.StatusOK || !slices.Equal(threats(a), []string{"1"}) {
		t.Fatalf("%d %q, want MALWARE as 1", status, threats(a))
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	srv := webrisktest.NewServer(t)
	key := webrisktest.APIKey
	for _, tc := range []struct {
		name   string
		q      url.Values
		status int
		code   string
		reason string
	}{
		{"no key", url.Values{"uri": {"https://example.com/"}, "threatTypes": {"MALWARE"}}, 403, "PERMISSION_DENIED", ""},
		{"wrong key", url.Values{"key": {"nope"}, "uri": {"https://example.com/"}, "threatTypes": {"MALWARE"}}, 403, "PERMISSION_DENIED", "API_KEY_INVALID"},
		{"no threat types", url.Values{"key": {key}, "uri": {"https://example.com/"}}, 400, "INVALID_ARGUMENT", ""},
		{"unknown threat type", url.Values{"key": {key}, "uri": {"https://example.com/"}, "threatTypes": {"MALWARE", "PHISHING"}}, 400, "INVALID_ARGUMENT", ""},
		{"unspecified threat type", url.Values{"key": {key}, "uri": {"https://example.com/"}, "threatTypes": {"THREAT_TYPE_UNSPECIFIED"}}, 400, "INVALID_ARGUMENT", ""},
		{"no uri", url.Values{"key": {key}, "threatTypes": {"MALWARE"}}, 400, "INVALID_ARGUMENT", ""},
		{"uri without a host", url.Values{"key": {key}, "uri": {"http:///path"}, "threatTypes": {"MALWARE"}}, 400, "INVALID_ARGUMENT", ""},
	} {
		status, a := search(t, srv, tc.q, nil)
		switch {
		case status != tc.status || a.Error.Status != tc.code || a.Error.Message == "":
			t.Errorf("%s: %d %+v, want %d %s", tc.name, status, a.Error, tc.status, tc.code)
		case tc.reason != "" && (len(a.Error.Details) != 1 || a.Error.Details[0].Reason != tc.reason ||
			a.Error.Details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo"):
			t.Errorf("%s: details %+v, want ErrorInfo %s", tc.name, a.Error.Details, tc.reason)
		}
	}
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	srv := webrisktest.NewServer(t)
	srv.FailNext(http.StatusTooManyRequests)
	srv.FailNext(http.StatusServiceUnavailable)
	q := url.Values{"key": {webrisktest.APIKey}, "uri": {"https://example.com/"}, "threatTypes": {"MALWARE"}}
	for _, want := range []struct {
		status int
		code   string
	}{{429, "RESOURCE_EXHAUSTED"}, {503, "UNAVAILABLE"}, {200, ""}} {
		status, a := search(t, srv, q, nil)
		if status != want.status || (a.Error != nil && a.Error.Status != want.code) {
			t.Fatalf("%d %+v, want %d %s", status, a.Error, want.status, want.code)
		}
	}
	if n := len(srv.Lookups()); n != 3 {
		t.Fatalf("%d lookups recorded, want the 3 asked", n)
	}
}
