package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// A body is read whole whatever Content-Length says (net/http enforces it on real requests).
func TestReadBody(t *testing.T) {
	t.Parallel()
	body := `{"to":"+15005550100","text":"` + strings.Repeat("x", 5000) + `"}`
	for name, length := range map[string]int64{"declared": int64(len(body)), "unknown": -1, "declared short": 10} {
		r := httptest.NewRequest("POST", "/v1/messages", io.NopCloser(strings.NewReader(body)))
		r.ContentLength = length
		got, err := readBody(r)
		if err != nil || string(got) != body {
			t.Errorf("%s: read %d bytes, %v", name, len(got), err)
		}
	}
}

// Fields decode from views into the body, each field of the wrong type reported by path.
func TestDecodeJSONFields(t *testing.T) {
	t.Parallel()
	var dst struct {
		To   *string           `json:"to"`
		Text *string           `json:"text"`
		Meta map[string]string `json:"metadata"`
	}
	r := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(`{"to":"+1500","text":"hi","metadata":{"a":"b"}}`))
	if err := decodeJSON(r, &dst, false); err != nil || *dst.To != "+1500" || *dst.Text != "hi" || dst.Meta["a"] != "b" {
		t.Fatalf("decode = %v %+v", err, dst)
	}
	r = httptest.NewRequest("POST", "/v1/messages", strings.NewReader(`{"to":5,"text":"hi","metadata":{"a":1}}`))
	err := decodeJSON(r, &dst, false)
	if err == nil || !strings.Contains(err.Error(), "to: must be a string") || !strings.Contains(err.Error(), "metadata: must be a string") {
		t.Fatalf("wrong types = %v", err)
	}
}

// A NUL character (U+0000) in any string the body's known fields hold, at any depth, is refused
// with its path; Postgres would refuse the text later, as a 500.
func TestDecodeJSONRefusesNUL(t *testing.T) {
	t.Parallel()
	type dst struct {
		To       *string           `json:"to"`
		Text     *string           `json:"text"`
		Metadata map[string]string `json:"metadata"`
		Tags     []string          `json:"tags"`
		Content  json.RawMessage   `json:"content"`
		Count    *int              `json:"count"`
	}
	const nul = `\u0000`
	tests := []struct {
		name, body string
		want       string // details.errors as JSON; "" when the body is accepted
	}{
		{"text", `{"text":"a` + nul + `b"}`, `[{"path":"text","message":"must not contain the NUL character (U+0000)"}]`},
		{"only NUL", `{"text":"` + nul + `"}`, `[{"path":"text","message":"must not contain the NUL character (U+0000)"}]`},
		{"metadata value", `{"metadata":{"order":"4` + nul + `2","ok":"x"}}`, `[{"path":"metadata.order","message":"must not contain the NUL character (U+0000)"}]`},
		{"metadata key", `{"metadata":{"or` + nul + `der":"42"}}`, `[{"path":"metadata","message":"has a key that contains the NUL character (U+0000)"}]`},
		{"list item", `{"tags":["vip","a` + nul + `"]}`, `[{"path":"tags[1]","message":"must not contain the NUL character (U+0000)"}]`},
		{"deep in a raw field", `{"content":{"contacts":[{"name":"x"},{"name":{"first":"A` + nul + `"}}]}}`,
			`[{"path":"content.contacts[1].name.first","message":"must not contain the NUL character (U+0000)"}]`},
		{"two fields", `{"to":"` + nul + `","text":"` + nul + `"}`,
			`[{"path":"to","message":"must not contain the NUL character (U+0000)"},{"path":"text","message":"must not contain the NUL character (U+0000)"}]`},
		{"beside a wrong type", `{"count":"x","text":"` + nul + `"}`,
			`[{"path":"text","message":"must not contain the NUL character (U+0000)"},{"path":"count","message":"must be an integer, not string"}]`},
		{"NUL where a number belongs", `{"count":"` + nul + `"}`, `[{"path":"count","message":"must not contain the NUL character (U+0000)"}]`},
		{"an escaped backslash is no NUL", `{"text":"a\\u0000b"}`, ""},
		{"other escapes", `{"text":"\u0001\u00e9\n"}`, ""},
		{"unknown fields are ignored", `{"other":"` + nul + `"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var d dst
			err := decodeJSON(httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader(tt.body)), &d, false)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("decodeJSON = %v", err)
				}
				return
			}
			e := apperror.As(err)
			if e == nil || e.Code != "invalid_request" {
				t.Fatalf("decodeJSON = %v, want invalid_request", err)
			}
			if b, _ := json.Marshal(e.Details["errors"]); string(b) != tt.want {
				t.Fatalf("errors %s\nwant   %s", b, tt.want)
			}
		})
	}
}

// A body is parsed only when it is declared JSON, or not declared at all.
func TestDecodeJSONContentType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		contentType string
		body        string
		accepted    bool
	}{
		{"", `{"text":"x"}`, true},
		{"application/json", `{"text":"x"}`, true},
		{"application/json; charset=utf-8", `{"text":"x"}`, true},
		{"Application/JSON;charset=UTF-8", `{"text":"x"}`, true},
		{"application/merge-patch+json", `{"text":"x"}`, true},
		{"application/vnd.acme.v1+json", `{"text":"x"}`, true},
		{"text/plain", `{"text":"x"}`, false},
		{"text/plain; charset=utf-8", `{"text":"x"}`, false},
		{"text/json", `{"text":"x"}`, false},
		{"application/x-www-form-urlencoded", `text=x`, false},
		{"multipart/form-data; boundary=b", `{"text":"x"}`, false},
		{"application/jsonl", `{"text":"x"}`, false},
		{"application/json+xml", `{"text":"x"}`, false},
		{"+json", `{"text":"x"}`, false},
		{"application/json; charset", `{"text":"x"}`, true}, // a broken parameter: still JSON
		{"application/json, text/plain", `{"text":"x"}`, false},
		{"text/plain", ``, true}, // no body: nothing to refuse
	}
	for _, tt := range tests {
		t.Run(tt.contentType+" "+tt.body, func(t *testing.T) {
			t.Parallel()
			var dst struct {
				Text *string `json:"text"`
			}
			r := httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			err := decodeJSON(r, &dst, true)
			if tt.accepted {
				if err != nil {
					t.Fatalf("decodeJSON = %v", err)
				}
				return
			}
			e := apperror.As(err)
			if e == nil || e.Code != "unsupported_media_type" || !strings.Contains(e.Message, "application/json") {
				t.Fatalf("decodeJSON = %v, want unsupported_media_type", err)
			}
			if statusOfCode[e.Code] != http.StatusUnsupportedMediaType {
				t.Fatalf("status %d", statusOfCode[e.Code])
			}
		})
	}
}

// NUL in the path is no resource (404); in a query value, the parameter is invalid (400).
func TestCheckNUL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target string
		code   string // "" when the request passes
		paths  string
	}{
		{"/v1/messages/msg_1?to=%2B1500&cursor=abc", "", ""},
		{"/v1/messages/msg_%00", "not_found", ""},
		{"/v1/messages?to=%00", "invalid_request", "to"},
		{"/v1/contacts?search=a%00b&tag=x", "invalid_request", "search"},
		{"/v1/contacts?tag=ok&tag=%00", "invalid_request", "tag"},
		{"/v1/messages?to=%00&cursor=%00&limit=5", "invalid_request", "cursor,to"},
		{"/v1/messages?%00=x", "", ""},    // a parameter nobody reads
		{"/v1/messages?to=%2500", "", ""}, // the text %00, no NUL
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			t.Parallel()
			u, err := url.ParseRequestURI(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			e := apperror.As(checkNUL(u))
			switch {
			case tt.code == "" && e == nil:
				return
			case e == nil || e.Code != tt.code:
				t.Fatalf("checkNUL = %v, want %s", e, tt.code)
			}
			var paths []string
			if errs, ok := e.Details["errors"].([]apperror.FieldError); ok {
				for _, fe := range errs {
					paths = append(paths, fe.Path)
				}
			}
			if strings.Join(paths, ",") != tt.paths {
				t.Fatalf("paths %v, want %s", paths, tt.paths)
			}
		})
	}
}
