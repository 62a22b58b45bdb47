package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// ErrInvalidToken: Meta does not accept the access token (expired, revoked, malformed). The
// error CheckToken returns wraps it with Meta's code.
var ErrInvalidToken = errors.New("meta: the access token was rejected")

// maxAnswer bounds a JSON answer read (a page of templates with their components is the
// largest, some hundred kilobytes).
const maxAnswer = 4 << 20

// graphSegment is what a path segment may be: a node id (digits for Meta's objects), "me", or
// an edge name. Nothing a caller passes can climb the path or add a query.
var graphSegment = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// request is one Graph API call.
type request struct {
	// op names the call in errors ("send whatsapp message").
	op     string
	method string
	// path are the segments after the version: node ids and edges.
	path  []string
	query url.Values
	// body is sent as JSON when not nil; raw (with contentType) otherwise, when not nil.
	body        any
	raw         []byte
	contentType string
	token       string
	// oauth sends the token as "Authorization: OAuth <token>", as the Resumable Upload API's
	// upload step wants it, instead of Bearer.
	oauth bool
	// anonymous sends no Authorization header and needs no token: the OAuth code exchange
	// authenticates the app by its id and secret in the query.
	anonymous bool
	// header are more request headers (the upload's file_offset).
	header http.Header
	// secrets are what an error must never repeat besides the token: the text, parameters.
	secrets []string
}

// token is tok, or the Provider's token when tok is empty.
func (t *Transport) token(tok string) string {
	if tok != "" {
		return tok
	}
	return t.cfg.AccessToken
}

// call makes the request r and decodes a 2xx answer into out (when not nil). Its errors are
// those of Send: *transport.Failure, *transport.Temporary, or trouble on the way.
func (t *Transport) call(ctx context.Context, r request, out any) error {
	if t.baseErr != nil {
		return t.baseErr
	}
	if r.token == "" && !r.anonymous {
		return &transport.Failure{Code: CodeAuthFailed, Message: "There is no Meta access token: neither the Provider nor the sender has one."}
	}
	for _, seg := range r.path {
		if !graphSegment.MatchString(seg) {
			return &transport.Failure{Code: CodeInvalidRequest, Message: fmt.Sprintf("%s: %q is not a Graph API id.", r.op, seg)}
		}
	}
	u := t.endpoint(strings.Join(r.path, "/"))
	u.RawQuery = r.query.Encode()
	return t.send(ctx, r, u, out)
}

// endpoint is the URL of path (node ids and edges) under the base URL and Graph API version.
func (t *Transport) endpoint(path string) url.URL {
	u := *t.base
	u.Path = strings.TrimRight(u.Path, "/") + "/" + t.cfg.Version + "/" + path
	return u
}

// send makes the request r to u; see call.
func (t *Transport) send(ctx context.Context, r request, u url.URL, out any) error {
	var body io.Reader
	contentType := r.contentType
	switch {
	case r.body != nil:
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("meta: %s: encode body: %w", r.op, err)
		}
		body, contentType = bytes.NewReader(b), "application/json"
	case r.raw != nil:
		body = bytes.NewReader(r.raw)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return fmt.Errorf("meta: %s: build request: %w", r.op, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.oauth {
		req.Header.Set("Authorization", "OAuth "+r.token)
	}
	raw, err := t.exchange(ctx, req, r.op, r.token, maxAnswer, r.secrets)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return acceptedUnreadable(r.op)
		}
	}
	return nil
}

// callForSuccess makes a request Meta answers {"success": true}.
func (t *Transport) callForSuccess(ctx context.Context, r request) error {
	var out struct {
		Success bool `json:"success"`
	}
	if err := t.call(ctx, r, &out); err != nil {
		return err
	}
	if !out.Success {
		return acceptedUnreadable(r.op)
	}
	return nil
}

// exchange sends req with the token (as Bearer, unless req carries its own Authorization or
// the request is anonymous) and returns the body of a 2xx answer, at most maxBytes (more is an
// error). Any other answer is classified (classify).
func (t *Transport) exchange(ctx context.Context, req *http.Request, op, token string, maxBytes int64, secrets []string) ([]byte, error) {
	if req.Header.Get("Authorization") == "" && token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, networkError(ctx, op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		return nil, classify(op, resp.StatusCode, resp.Header, b, append([]string{token}, secrets...))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, networkError(ctx, op, err)
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("meta: %s: the answer is larger than %d bytes", op, maxBytes)
	}
	return b, nil
}

// networkError is trouble on the way, tried again. url.Error repeats the URL; only its cause is
// kept (the URL holds no token, but a media URL holds Meta's signature of the file).
func networkError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("meta: %s: %w", op, ctxErr)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &transport.Temporary{Err: fmt.Errorf("meta: %s: %w", op, err)}
}

// acceptedUnreadable: Meta answered 2xx but the answer cannot be read. A message may be on its
// way, so it fails rather than being sent again.
func acceptedUnreadable(op string) error {
	return &transport.Failure{Code: CodeResponseInvalid,
		Message: fmt.Sprintf("Meta accepted the request (%s) but its answer could not be read; it was not sent again.", op)}
}

// CheckToken asks Meta who the Provider's token belongs to (GET /me?fields=id,name) and returns
// "name (id)". A token Meta refuses is an error wrapping ErrInvalidToken; other errors are
// those of Send.
func (t *Transport) CheckToken(ctx context.Context) (string, error) {
	var me struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	err := t.call(ctx, request{op: "check token", method: http.MethodGet, path: []string{"me"},
		query: url.Values{"fields": {"id,name"}}, token: t.cfg.AccessToken}, &me)
	if f := transport.AsFailure(err); f != nil && f.Code == CodeAuthFailed {
		return "", fmt.Errorf("%w (Meta code %s)", ErrInvalidToken, f.ProviderCode)
	}
	if err != nil {
		return "", err
	}
	if me.ID == "" {
		return "", acceptedUnreadable("check token")
	}
	return fmt.Sprintf("%s (%s)", me.Name, me.ID), nil
}

// MarkRead marks the inbound WhatsApp message wamid as read on the phone number (its blue
// ticks), and with typing shows the contact a typing indicator until the reply is sent or 25
// seconds pass: POST /{phone-number-id}/messages {status: read, message_id, typing_indicator}.
// An empty token is the Provider's.
func (t *Transport) MarkRead(ctx context.Context, token, phoneNumberID, wamid string, typing bool) error {
	body := obj{"messaging_product": "whatsapp", "status": "read", "message_id": wamid}
	if typing {
		body["typing_indicator"] = obj{"type": "text"}
	}
	return t.callForSuccess(ctx, request{op: "mark read", method: http.MethodPost, path: []string{phoneNumberID, "messages"},
		body: body, token: t.token(token)})
}
