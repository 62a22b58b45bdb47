// Package webrisk asks Google's Web Risk Lookup API whether a URL is on one of its threat lists:
// one GET of uris.search (https://cloud.google.com/web-risk/docs/reference/rest/v1/uris/search)
// per URL, authenticated by an API key in the key query parameter.
//
// The answer is {} for a URL on none of the lists asked, or {"threat":{"threatTypes":[...],
// "expireTime":"..."}}: the lists it is on, and the time until which that verdict may be cached
// (Google: clients must not cache it past expireTime). Google gives no lifetime for a safe
// answer, so a safe Verdict has a zero ExpireTime and the caller chooses how long it stands.
// The URI is sent as given: Google wants a valid URL (RFC 2396) but canonicalizes it itself.
//
// Errors: Google's refusals ({"error":{"code","message","status"}}) of the request or of the key
// are an *Error, for good; 429 (RESOURCE_EXHAUSTED), 5xx and trouble on the way are a
// *transport.Temporary, worth trying again. The API key is in every request's URL, so no error
// of this package carries that URL, nor the key anywhere in its text; nor does it add the URI
// looked up, which may be a message's content (the caller says what it looked up).
//
// Google's own client, cloud.google.com/go/webrisk (apiv1), has a REST transport
// (NewRESTClient) that option.WithEndpoint could point at a loopback server, but taking it needs
// new requirements in go.mod and newer google.golang.org/api, gax-go, auth and genproto than
// the module pins, and brings gRPC, protobuf and OpenTelemetry in for one GET: this package is
// a small net/http client of the documented REST method instead.
package webrisk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultBaseURL is the Web Risk API's address.
const DefaultBaseURL = "https://webrisk.googleapis.com"

// searchPath is uris.search's path under the base URL.
const searchPath = "/v1/uris:search"

// The ThreatType values of the v1 API (its THREAT_TYPE_UNSPECIFIED matches nothing and is not
// accepted here).
const (
	ThreatMalware           = "MALWARE"
	ThreatSocialEngineering = "SOCIAL_ENGINEERING"
	ThreatUnwantedSoftware  = "UNWANTED_SOFTWARE"
	// ThreatSocialEngineeringExtendedCoverage is a wider list of social engineering URIs.
	ThreatSocialEngineeringExtendedCoverage = "SOCIAL_ENGINEERING_EXTENDED_COVERAGE"
)

// defaultThreatTypes are the lists searched when Config.ThreatTypes is empty.
var defaultThreatTypes = []string{ThreatMalware, ThreatSocialEngineering, ThreatUnwantedSoftware}

// defaultHTTP is the client of a Config without one. A lookup is a single small GET.
var defaultHTTP = &http.Client{Timeout: 10 * time.Second}

// maxAnswer bounds the answer read (a verdict or an error is well under a kilobyte).
const maxAnswer = 1 << 16

// Config says where and how to ask.
type Config struct {
	// BaseURL is the API's address, DefaultBaseURL when empty; tests point it at webrisktest.
	BaseURL string
	// APIKey is the Google Cloud API key of a project with the Web Risk API enabled. Required.
	APIKey string
	// HTTP is the client requests go through; a client with a 10 s timeout when nil.
	HTTP *http.Client
	// ThreatTypes are the lists searched (Threat constants); MALWARE, SOCIAL_ENGINEERING and
	// UNWANTED_SOFTWARE when empty.
	ThreatTypes []string
}

// Client looks URLs up. It is safe for concurrent use.
type Client struct {
	search      *url.URL
	key         string
	hc          *http.Client
	threatTypes []string
}

// New checks cfg and returns its Client. It makes no request.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("webrisk: no API key")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("webrisk: base URL %q is not an http(s) URL without a query", base)
	}
	u.Path += searchPath
	types := cfg.ThreatTypes
	if len(types) == 0 {
		types = defaultThreatTypes
	}
	for _, t := range types {
		switch t {
		case ThreatMalware, ThreatSocialEngineering, ThreatUnwantedSoftware, ThreatSocialEngineeringExtendedCoverage:
		default:
			return nil, fmt.Errorf("webrisk: unknown threat type %q", t)
		}
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	return &Client{search: u, key: cfg.APIKey, hc: hc, threatTypes: append([]string(nil), types...)}, nil
}

// Verdict is what Web Risk says of a URI.
type Verdict struct {
	// Threats are the lists the URI is on (ThreatType values, as Google names them); empty when
	// it is on none of those asked.
	Threats []string
	// ExpireTime is when a verdict with threats stops holding: it may be cached until then and
	// must not be after. Zero for a safe verdict, whose lifetime the caller chooses (Google gives
	// none), and for a flagged one Google gave no lifetime for (do not cache it).
	ExpireTime time.Time
}

// Safe says the URI is on none of the lists searched.
func (v Verdict) Safe() bool { return len(v.Threats) == 0 }

// searchAnswer is uris.search's SearchUrisResponse.
type searchAnswer struct {
	Threat *struct {
		ThreatTypes []string  `json:"threatTypes"`
		ExpireTime  time.Time `json:"expireTime"`
	} `json:"threat"`
}

// Lookup asks whether uri is on the lists the client searches. Its errors are an *Error (Google
// refused the request or the key), a *transport.Temporary (rate limit, Google's trouble, the
// network), or, when ctx ended, one that wraps ctx.Err().
func (c *Client) Lookup(ctx context.Context, uri string) (Verdict, error) {
	q := url.Values{"threatTypes": c.threatTypes, "uri": {uri}, "key": {c.key}}
	u := *c.search
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		// Its text would repeat the URL, key and all.
		return Verdict{}, errors.New("webrisk: build uris.search request")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return Verdict{}, c.networkError(ctx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Verdict{}, c.networkError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Verdict{}, c.refusal(resp, raw)
	}
	var a searchAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return Verdict{}, temporary(fmt.Errorf("webrisk: uris.search answered %d with no verdict", resp.StatusCode), 0, "")
	}
	if a.Threat == nil || len(a.Threat.ThreatTypes) == 0 {
		return Verdict{}, nil
	}
	return Verdict{Threats: a.Threat.ThreatTypes, ExpireTime: a.Threat.ExpireTime.UTC()}, nil
}
