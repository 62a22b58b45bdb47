package meta_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

func TestUploadThenDownloadMedia(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	ctx := context.Background()
	pdf := []byte("%PDF-1.7 a small invoice")
	id, err := tr.UploadMedia(ctx, "", graphPhoneID, `invoice "May".pdf`, "application/pdf", pdf)
	if err != nil || id == "" {
		t.Fatalf("UploadMedia = %q, %v", id, err)
	}
	if data, mime, ok := peer.Media(id); !ok || !bytes.Equal(data, pdf) || mime != "application/pdf" {
		t.Fatalf("the peer stored %q (%s, %v)", data, mime, ok)
	}
	data, mime, err := tr.DownloadMedia(ctx, "", id)
	if err != nil || !bytes.Equal(data, pdf) || mime != "application/pdf" {
		t.Fatalf("DownloadMedia = %q, %q, %v", data, mime, err)
	}
	// The uploaded id sends.
	sendOK(t, peer, tr, transport.Outbound{Channel: "whatsapp", MessageType: "document", To: "15551234567", From: graphPhoneID,
		Content: &transport.Content{MediaID: id, Filename: "invoice.pdf"}})

	_, err = tr.UploadMedia(ctx, "", graphPhoneID, "a.exe", "application/x-msdownload", []byte("MZ"))
	if f := transport.AsFailure(err); f == nil || f.Code != meta.CodeInvalidRequest {
		t.Fatalf("uploading an .exe: err = %v, want INVALID_REQUEST", err)
	}
	_, _, err = tr.DownloadMedia(ctx, "", "9999999999")
	if f := transport.AsFailure(err); f == nil || f.ProviderCode != "100/33" {
		t.Fatalf("downloading an unknown id: err = %v", err)
	}
}

// TestDownloadMediaGuards: the token is not sent to a URL off Meta's hosts, and a file that is
// not what Meta described is refused.
func TestDownloadMediaGuards(t *testing.T) {
	t.Parallel()
	var gotToken bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotToken = r.Header.Get("Authorization") != ""
		_, _ = w.Write([]byte("x"))
	}))
	t.Cleanup(elsewhere.Close)
	for _, c := range []struct {
		name string
		info map[string]any
		want string
	}{
		{"a URL on another host", map[string]any{"url": elsewhere.URL + "/f", "mime_type": "image/jpeg"}, "Meta's hosts"},
		{"a plain http Meta host", map[string]any{"url": "http://lookaside.fbsbx.com/f", "mime_type": "image/jpeg"}, "Meta's hosts"},
		{"too large", map[string]any{"url": "/self", "mime_type": "video/mp4", "file_size": meta.MaxMediaBytes + 1}, "more than"},
		{"another file", map[string]any{"url": "/self", "mime_type": "image/jpeg", "sha256": strings.Repeat("0", 64)}, "sha256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var graph *httptest.Server
			graph = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/self" {
					_, _ = w.Write([]byte("jpeg"))
					return
				}
				info := map[string]any{}
				for k, v := range c.info {
					info[k] = v
				}
				if info["url"] == "/self" {
					info["url"] = graph.URL + "/self"
				}
				_ = json.NewEncoder(w).Encode(info)
			}))
			defer graph.Close()
			_, _, err := meta.New(meta.Config{BaseURL: graph.URL, AccessToken: "EAAtoken0000"}).DownloadMedia(context.Background(), "", "123")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
	if gotToken {
		t.Fatal("the token went to a host that is not Meta's")
	}
}

func TestDownloadAttachment(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	ctx := context.Background()
	link := peer.AttachmentURL("image/png", []byte("png bytes"))
	data, mimeType, err := tr.DownloadAttachment(ctx, link)
	if err != nil || string(data) != "png bytes" || mimeType != "image/png" {
		t.Fatalf("DownloadAttachment = %q %q %v", data, mimeType, err)
	}
	// Only Meta's hosts (and the configured base URL's) are fetched.
	if _, _, err := tr.DownloadAttachment(ctx, "https://attacker.example/x.png"); err == nil {
		t.Fatal("a URL off Meta's hosts was fetched")
	}
	if _, _, err := tr.DownloadAttachment(ctx, peer.URL+"/cdn/unknown"); err == nil {
		t.Fatal("an expired link gave a file")
	}
}
