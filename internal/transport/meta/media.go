package meta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// MaxMediaBytes is the largest media file downloaded or uploaded: 100 MB, WhatsApp's largest
// (documents).
const MaxMediaBytes = 100 << 20

// mediaHosts are the hosts, besides the base URL's, a media URL Meta answers may point to
// (lookaside.fbsbx.com today): the token goes to no other.
var mediaHosts = []string{".fbsbx.com", ".facebook.com", ".fbcdn.net", ".whatsapp.net"}

// DownloadMedia fetches a WhatsApp media file by its id: GET /{media-id} names a short-lived
// URL, which is then fetched with the same token. It returns the file and its MIME type. A file
// over MaxMediaBytes, a URL outside Meta's hosts, or bytes that do not match Meta's sha256 are
// errors. An empty token is the Provider's.
func (t *Transport) DownloadMedia(ctx context.Context, token, mediaID string) (data []byte, mimeType string, err error) {
	tok := t.token(token)
	var info struct {
		URL      string `json:"url"`
		MimeType string `json:"mime_type"`
		SHA256   string `json:"sha256"`
		FileSize int64  `json:"file_size"`
	}
	if err := t.call(ctx, request{op: "get media", method: http.MethodGet, path: []string{mediaID}, token: tok}, &info); err != nil {
		return nil, "", err
	}
	const op = "download media"
	if info.FileSize > MaxMediaBytes {
		return nil, "", fmt.Errorf("meta: %s: the file has %d bytes, more than %d", op, info.FileSize, MaxMediaBytes)
	}
	u, err := url.Parse(info.URL)
	if err != nil || !t.mediaURLAllowed(u) {
		return nil, "", fmt.Errorf("meta: %s: Meta's answer names no media URL on Meta's hosts", op)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("meta: %s: build request: %w", op, err)
	}
	data, err = t.exchange(ctx, req, op, tok, MaxMediaBytes, nil)
	if err != nil {
		return nil, "", err
	}
	if info.SHA256 != "" {
		sum := sha256.Sum256(data)
		if !strings.EqualFold(hex.EncodeToString(sum[:]), info.SHA256) {
			return nil, "", fmt.Errorf("meta: %s: the file does not match Meta's sha256", op)
		}
	}
	return data, info.MimeType, nil
}

// DownloadAttachment fetches a file a contact sent on Messenger or Instagram from the URL of
// Meta's CDN the webhook gave (signed, valid for a while; no token goes with it). A URL outside
// Meta's hosts, or a file over MaxMediaBytes, is an error. It returns the file and the type the
// CDN names.
func (t *Transport) DownloadAttachment(ctx context.Context, rawURL string) (data []byte, mimeType string, err error) {
	const op = "download attachment"
	if t.baseErr != nil {
		return nil, "", t.baseErr
	}
	u, err := url.Parse(rawURL)
	if err != nil || !t.mediaURLAllowed(u) {
		return nil, "", fmt.Errorf("meta: %s: the URL is not on Meta's hosts", op)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("meta: %s: build request: %w", op, err)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, "", networkError(ctx, op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("meta: %s: the CDN answered HTTP %d (the link may have expired)", op, resp.StatusCode)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, MaxMediaBytes+1))
	switch {
	case err != nil:
		return nil, "", networkError(ctx, op, err)
	case len(data) > MaxMediaBytes:
		return nil, "", fmt.Errorf("meta: %s: the file is larger than %d bytes", op, MaxMediaBytes)
	}
	mimeType, _, _ = strings.Cut(resp.Header.Get("Content-Type"), ";")
	return data, strings.TrimSpace(mimeType), nil
}

func (t *Transport) mediaURLAllowed(u *url.URL) bool {
	if t.base != nil && u.Scheme == t.base.Scheme && u.Host == t.base.Host {
		return true
	}
	if u.Scheme != "https" || u.User != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range mediaHosts {
		if strings.HasSuffix(host, h) {
			return true
		}
	}
	return false
}

// UploadMedia uploads a file for the phone number to send (POST /{phone-number-id}/media,
// multipart: messaging_product, type, file) and returns its media id, which a message names as
// content.mediaId for 30 days. An empty token is the Provider's.
func (t *Transport) UploadMedia(ctx context.Context, token, phoneNumberID, filename, mimeType string, data []byte) (string, error) {
	const op = "upload media"
	switch {
	case len(data) == 0:
		return "", invalid("An upload needs a file.")
	case len(data) > MaxMediaBytes:
		return "", invalid("The file has %d bytes; Meta takes at most %d.", len(data), MaxMediaBytes)
	case mimeType == "":
		return "", invalid("An upload needs the file's MIME type.")
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("messaging_product", "whatsapp")
	_ = w.WriteField("type", mimeType)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, quoteEscaper.Replace(filename)))
	h.Set("Content-Type", mimeType)
	part, err := w.CreatePart(h)
	if err != nil {
		return "", fmt.Errorf("meta: %s: %w", op, err)
	}
	_, _ = part.Write(data)
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("meta: %s: %w", op, err)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := t.call(ctx, request{op: op, method: http.MethodPost, path: []string{phoneNumberID, "media"},
		raw: buf.Bytes(), contentType: w.FormDataContentType(), token: t.token(token)}, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", acceptedUnreadable(op)
	}
	return out.ID, nil
}

// quoteEscaper escapes a file name in a Content-Disposition header, as mime/multipart does.
var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "")
