package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/message"
)

// A send's attachments decode from the body into the domain's inputs: every item is kept, a
// field of the wrong JSON type or content that is not base64 is kept as the item's problem (the
// domain reports it by path), and base64 is decoded, JSON escapes and all.
func TestSendBodyAttachments(t *testing.T) {
	t.Parallel()
	pdf := []byte("%PDF-1.7 \x00\xff binary")
	pdf64 := base64.StdEncoding.EncodeToString(pdf)
	wrong := func(path, msg string) *apperror.FieldError { return &apperror.FieldError{Path: path, Message: msg} }
	for _, c := range []struct {
		name  string
		body  string // the value of attachments
		want  []message.AttachmentInput
		error string // a decoding error of the whole body, instead
	}{
		{name: "none", body: `null`, want: nil},
		{name: "empty", body: `[]`, want: []message.AttachmentInput{}},
		{name: "inline and URL",
			body: `[{"filename":"a.pdf","content":"` + pdf64 + `"},{"filename":"logo.png","path":"https://cdn.acme.example/logo.png","content_id":"logo"}]`,
			want: []message.AttachmentInput{
				{Filename: new("a.pdf"), HasContent: true, Content: pdf},
				{Filename: new("logo.png"), Path: new("https://cdn.acme.example/logo.png"), ContentID: new("logo")},
			}},
		{name: "every field, as sent",
			body: `[{"filename":"a\r\nBcc: x@y.example","content":"AAAA","path":"/etc/passwd","content_type":"pdf","content_id":""}]`,
			want: []message.AttachmentInput{{Filename: new("a\r\nBcc: x@y.example"), HasContent: true, Content: []byte{0, 0, 0},
				Path: new("/etc/passwd"), ContentType: new("pdf"), ContentID: new("")}}},
		{name: "wrapped base64 and an escaped slash", body: `[{"filename":"a.bin","content":"AAAA\nAA\/A"}]`,
			want: []message.AttachmentInput{{Filename: new("a.bin"), HasContent: true, Content: []byte{0, 0, 0, 0, 0x0f, 0xc0}}}},
		{name: "CRLF-wrapped base64 and unicode escapes", body: `[{"filename":"a.txt","content":"QUJD\r\n\u0052EVG"}]`,
			want: []message.AttachmentInput{{Filename: new("a.txt"), HasContent: true, Content: []byte("ABCDEF")}}},
		{name: "empty content is an empty file", body: `[{"filename":"data","content":""}]`,
			want: []message.AttachmentInput{{Filename: new("data"), HasContent: true, Content: []byte{}}}},
		{name: "null content is no content", body: `[{"filename":"data","content":null}]`,
			want: []message.AttachmentInput{{Filename: new("data")}}},
		{name: "not base64", body: `[{"filename":"a","content":"AAAA"},{"filename":"b","content":"not base64!"},{"filename":"c","content":"@@"}]`,
			want: []message.AttachmentInput{
				{Filename: new("a"), HasContent: true, Content: []byte{0, 0, 0}},
				{Filename: new("b"), HasContent: true, ContentProblem: "is not standard base64 (at character 3)"},
				{Filename: new("c"), HasContent: true, ContentProblem: "is not standard base64 (at character 0)"},
			}},
		{name: "not base64 once unescaped", body: `[{"filename":"a","content":"AA\/@"}]`,
			want: []message.AttachmentInput{{Filename: new("a"), HasContent: true, ContentProblem: "is not standard base64 (at character 3)"}}},
		{name: "content not a string", body: `[{"filename":"a","content":42},{"filename":"b","content":{"data":"AAAA"}},{"filename":"c","content":["AAAA"]},{"filename":"d","content":true}]`,
			want: []message.AttachmentInput{
				{Filename: new("a"), HasContent: true, ContentProblem: "must be a base64 string"},
				{Filename: new("b"), HasContent: true, ContentProblem: "must be a base64 string"},
				{Filename: new("c"), HasContent: true, ContentProblem: "must be a base64 string"},
				{Filename: new("d"), HasContent: true, ContentProblem: "must be a base64 string"},
			}},
		// A field of the wrong type comes through as not given, reported once, as of the wrong
		// type (encoding/json would leave it "").
		{name: "filename not a string", body: `[{"filename":7,"content":"AAAA"}]`,
			want: []message.AttachmentInput{{HasContent: true, Content: []byte{0, 0, 0}, WrongType: wrong("filename", "must be a string, not number")}}},
		{name: "the first field of the wrong type", body: `[{"filename":"a","path":["x"],"content_type":true,"content_id":{}}]`,
			want: []message.AttachmentInput{{Filename: new("a"), ContentType: new(""), ContentID: new(""),
				WrongType: wrong("path", "must be a string, not array")}}},
		{name: "content_type and content_id not strings",
			body: `[{"filename":"a","content":"AAAA","content_type":true},{"filename":"b","content":"AAAA","content_id":{}}]`,
			want: []message.AttachmentInput{
				{Filename: new("a"), HasContent: true, Content: []byte{0, 0, 0}, WrongType: wrong("content_type", "must be a string, not bool")},
				{Filename: new("b"), HasContent: true, Content: []byte{0, 0, 0}, WrongType: wrong("content_id", "must be a string, not object")},
			}},
		{name: "item not an object", body: `["a.pdf",{"filename":"b","content":"AAAA"},7,["x"]]`,
			want: []message.AttachmentInput{
				{WrongType: wrong("", "must be an object")},
				{Filename: new("b"), HasContent: true, Content: []byte{0, 0, 0}},
				{WrongType: wrong("", "must be an object")},
				{WrongType: wrong("", "must be an object")},
			}},
		{name: "not a list", body: `{"filename":"a","content":"AAAA"}`, error: "attachments: must be an array, not object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(`{"to":"ada@example.com","attachments":`+c.body+`}`))
			var b sendBody
			err := decodeJSON(r, &b, false)
			if c.error != "" {
				if err == nil || !strings.Contains(err.Error(), c.error) {
					t.Fatalf("decode = %v, want %q", err, c.error)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := b.request(r).Attachments
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("attachments\n%s\nwant\n%s", inputsString(got), inputsString(c.want))
			}
		})
	}
}

// inputsString shows attachment inputs with their pointers followed.
func inputsString(in []message.AttachmentInput) string {
	if in == nil {
		return "nil"
	}
	str := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", *p)
	}
	var b strings.Builder
	for i, a := range in {
		fmt.Fprintf(&b, "[%d] filename %s, path %s, content_type %s, content_id %s, has content %t, content %x (nil %t), problem %q, wrong type %+v\n",
			i, str(a.Filename), str(a.Path), str(a.ContentType), str(a.ContentID), a.HasContent, a.Content, a.Content == nil, a.ContentProblem, a.WrongType)
	}
	return b.String()
}

// Content without JSON escapes is decoded straight from the request body: the only allocation
// is the decoded bytes, which the domain's input then holds without a copy. Not parallel, so
// other tests' allocations are not counted.
func TestBase64BodyDecodesOnce(t *testing.T) {
	content := make([]byte, 3<<20)
	for i := range content {
		content[i] = byte(i)
	}
	raw := []byte(`"` + base64.StdEncoding.EncodeToString(content) + `"`)
	var b base64Body
	if allocs := testing.AllocsPerRun(5, func() {
		if err := b.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
	}); allocs > 1 {
		t.Errorf("decoding %d bytes of base64 allocates %v times, want once (the bytes)", len(raw), allocs)
	}
	if b.problem != "" || string(b.data) != string(content) {
		t.Fatalf("decoded %d bytes, problem %q", len(b.data), b.problem)
	}
	in := attachmentBody{Filename: new("a.bin"), Content: &b}.input()
	if !in.HasContent || len(in.Content) != len(content) || &in.Content[0] != &b.data[0] {
		t.Errorf("the domain's input does not hold the decoded bytes themselves")
	}
}
