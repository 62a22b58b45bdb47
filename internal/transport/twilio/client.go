package twilio

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twilio/twilio-go/client"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"
)

// defaultTimeout is the SDK's own default for a request.
const defaultTimeout = 10 * time.Second

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

// exchange is what the RoundTripper saw of the last answer: the SDK keeps neither the status of
// an answer it cannot decode nor any header.
type exchange struct {
	mu     sync.Mutex
	status int
	header http.Header
}

func (e *exchange) get() (int, http.Header) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status, e.header
}

// api returns the SDK's v2010 service for one call: its requests carry ctx, go to the base URL
// and leave what they saw of the answer in the exchange.
//
// twilio.NewRestClientWithParams(ClientParams{...}) would build every Twilio API's service (and
// compile some sixty packages in) for the three resources used here; it builds this same
// ApiService over the same client.Client, so that is built directly.
func (t *Transport) api(ctx context.Context) (*openapi.ApiService, *exchange, error) {
	h, ex, err := t.handler(ctx)
	if err != nil {
		return nil, nil, err
	}
	return openapi.NewApiService(h), ex, nil
}

// handler is the SDK's request handler for one call (api): any Twilio API's service is built
// over it.
func (t *Transport) handler(ctx context.Context) (*client.RequestHandler, *exchange, error) {
	if t.baseErr != nil {
		return nil, nil, t.baseErr
	}
	next, timeout := http.RoundTripper(http.DefaultTransport), defaultTimeout
	if t.cfg.HTTP != nil {
		if t.cfg.HTTP.Transport != nil {
			next = t.cfg.HTTP.Transport
		}
		timeout = t.cfg.HTTP.Timeout
	}
	ex := &exchange{}
	c := &client.Client{
		Credentials: client.NewCredentials(t.cfg.AccountSID, t.cfg.AuthToken),
		HTTPClient: &http.Client{
			Transport: &roundTripper{ctx: ctx, base: t.base, next: next, ex: ex},
			Timeout:   timeout,
			// As the SDK's own client: a redirect is an answer, never followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	c.SetAccountSid(t.cfg.AccountSID)
	h := client.NewRequestHandler(c)
	// The base URL chooses the endpoint, not TWILIO_EDGE and TWILIO_REGION from the environment.
	h.Edge, h.Region = "", ""
	return h, ex, nil
}

// roundTripper sends the SDK's requests with the call's context to the base URL, and reads an
// error answer whole so the connection is reused (the SDK does not close those bodies).
type roundTripper struct {
	ctx  context.Context
	base *url.URL
	next http.RoundTripper
	ex   *exchange
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(rt.ctx)
	if rt.base != nil {
		r.URL.Scheme, r.URL.Host = rt.base.Scheme, rt.base.Host
		r.URL.Path = strings.TrimRight(rt.base.Path, "/") + r.URL.Path
		r.URL.RawPath = ""
		r.Host = ""
	}
	resp, err := rt.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	rt.ex.mu.Lock()
	rt.ex.status, rt.ex.header = resp.StatusCode, resp.Header.Clone()
	rt.ex.mu.Unlock()
	if resp.StatusCode >= 400 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	return resp, nil
}
