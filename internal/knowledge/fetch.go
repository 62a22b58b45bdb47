package knowledge

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/knowledge/extract"
)

// FetchTimeout bounds a document URL's whole answer.
const FetchTimeout = 30 * time.Second

// Fetcher reads documents' URLs through the deliveries' HTTP client, whose address guard is
// applied when each connection is made: a URL, or a redirect, whose host resolves to a refused
// address fails then, whatever it resolved to when the document was given.
type Fetcher struct {
	Client *http.Client
}

// maxRedirects is how many redirects a document URL may take (a page moved, a short link).
const maxRedirects = 5

// NewFetcher follows up to maxRedirects redirects with c, the deliveries' client (which follows
// none: a webhook's answer is its own): each is a new connection, guarded as the first.
func NewFetcher(c *http.Client) *Fetcher {
	copied := *c
	copied.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		return nil
	}
	return &Fetcher{Client: &copied}
}

// fetched is a URL's answer.
type fetched struct {
	data        []byte
	contentType string
}

// fetchFailure is a URL that gave no document: the document fails with it as its reason.
type fetchFailure struct{ reason string }

func (f *fetchFailure) Error() string { return f.reason }

// get reads u: at most extract.MaxBytes, within FetchTimeout.
func (f *Fetcher) get(ctx context.Context, u string) (fetched, error) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fetched{}, &fetchFailure{reason: "The URL cannot be requested."}
	}
	req.Header.Set("User-Agent", "Switchboard-Knowledge/1")
	req.Header.Set("Accept", "text/html, text/plain, text/markdown, application/pdf;q=0.9, */*;q=0.1")
	resp, err := f.Client.Do(req)
	if err != nil {
		return fetched{}, &fetchFailure{reason: fmt.Sprintf("The URL could not be fetched: %s.", briefly(err))}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fetched{}, &fetchFailure{reason: fmt.Sprintf("The URL answered HTTP %d.", resp.StatusCode)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(extract.MaxBytes)+1))
	if err != nil {
		return fetched{}, &fetchFailure{reason: fmt.Sprintf("The URL's answer could not be read: %s.", briefly(err))}
	}
	if len(data) > extract.MaxBytes {
		return fetched{}, &fetchFailure{reason: fmt.Sprintf("The URL's answer is larger than %d bytes.", extract.MaxBytes)}
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		ct = mt
	}
	return fetched{data: data, contentType: ct}, nil
}

// briefly is an error without what a long chain of wrapping repeats.
func briefly(err error) string {
	s := err.Error()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
