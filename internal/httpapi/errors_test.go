package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

func TestWriteError(t *testing.T) {
	t.Parallel()
	s := &Server{log: logr.Discard()}
	tests := []struct {
		name, path string
		err        error
		status     int
		body       string
		header     map[string]string
	}{
		{"conflict says not to retry", "/v1/x", apperror.New(apperror.Conflict, "conflict", "taken"), 409,
			`{"code":"conflict","message":"taken"}`, map[string]string{"X-Should-Retry": "false"}},
		{"v2 invalid_request always lists errors", "/v2/x", apperror.New(apperror.Invalid, "invalid_request", "bad body"), 400,
			`{"code":"invalid_request","message":"bad body","details":{"errors":[{"path":"","message":"bad body"}]}}`, nil},
		{"v1 invalid_request as given", "/v1/x", apperror.New(apperror.Invalid, "invalid_request", "bad body"), 400,
			`{"code":"invalid_request","message":"bad body"}`, nil},
		{"field errors on both", "/v1/x", apperror.InvalidFields(apperror.FieldError{Path: "name", Message: "is required"}), 400,
			`{"code":"invalid_request","message":"Invalid request: name: is required","details":{"errors":[{"path":"name","message":"is required"}]}}`, nil},
		{"internal errors hide their text", "/v1/x", errors.New("pq: password authentication failed for secret"), 500,
			`{"code":"internal_error","message":"Something went wrong on our side. Try again later."}`, nil},
		{"too large", "/v1/x", bodyTooLarge(10), 413,
			`{"code":"request_too_large","message":"The request body is larger than this endpoint accepts (10 bytes).","details":{"limit":10}}`, nil},
		{"unsupported media type", "/v2/x", checkJSONType("text/plain"), 415,
			`{"code":"unsupported_media_type","message":"The body must be JSON: send it with Content-Type: application/json.","details":{"expected":"application/json"}}`, nil},
		{"body too slow closes the connection", "/v1/x", bodyTooSlow(), 408,
			`{"code":"request_timeout","message":"The request body arrived too slowly: after the first 5 seconds it must arrive at 64 KiB/s or more. Send the request again.","details":{"graceSeconds":5,"minBytesPerSecond":65536}}`,
			map[string]string{"Connection": "close"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			s.writeError(rec, httptest.NewRequest(http.MethodPost, tt.path, nil), tt.err)
			if rec.Code != tt.status || strings.TrimSpace(rec.Body.String()) != tt.body {
				t.Fatalf("got %d %s\nwant %d %s", rec.Code, rec.Body, tt.status, tt.body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			for k, v := range tt.header {
				if rec.Header().Get(k) != v {
					t.Errorf("%s = %q, want %q", k, rec.Header().Get(k), v)
				}
			}
		})
	}
}

func TestDecodeJSONListsEveryWrongField(t *testing.T) {
	t.Parallel()
	var dst struct {
		Name  string   `json:"name"`
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
		Skip  string   `json:"-"`
	}
	r := httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader(`{"name": 1, "count": "x", "tags": [1], "other": {}}`))
	e := apperror.As(decodeJSON(r, &dst, false))
	if e == nil || e.Code != "invalid_request" {
		t.Fatalf("decodeJSON = %v", e)
	}
	b, _ := json.Marshal(e.Details["errors"])
	want := `[{"path":"name","message":"must be a string, not number"},{"path":"count","message":"must be an integer, not string"},{"path":"tags","message":"must be a string, not number"}]`
	if string(b) != want {
		t.Fatalf("errors %s\nwant   %s", b, want)
	}
}

func TestDecodeJSONFollowsEmbeddedStructs(t *testing.T) {
	t.Parallel()
	type inner struct {
		To   *string `json:"to"`
		Text *string `json:"text"`
	}
	var dst struct {
		inner
		From *string `json:"from"`
	}
	r := httptest.NewRequest(http.MethodPost, "/v2/x", strings.NewReader(`{"to": "+15005550100", "text": 5, "from": []}`))
	e := apperror.As(decodeJSON(r, &dst, false))
	if e == nil || dst.To == nil || *dst.To != "+15005550100" {
		t.Fatalf("decodeJSON = %v, to %v", e, dst.To)
	}
	b, _ := json.Marshal(e.Details["errors"])
	if want := `[{"path":"text","message":"must be a string, not number"},{"path":"from","message":"must be a string, not array"}]`; string(b) != want {
		t.Fatalf("errors %s\nwant   %s", b, want)
	}
}
