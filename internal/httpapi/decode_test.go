package httpapi

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
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
