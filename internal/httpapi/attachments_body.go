package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/message"
)

// attachmentBody is one item of a send's attachments (WIRE.md §2): inline content in base64, or
// a path (URL) the transport fetches. content_type and content_id are snake_case on the wire.
type attachmentBody struct {
	Filename    *string     `json:"filename"`
	Content     *base64Body `json:"content"`
	Path        *string     `json:"path"`
	ContentType *string     `json:"content_type"`
	ContentID   *string     `json:"content_id"`
	// wrongType is the first field found with the wrong JSON type while decoding ("" for the
	// item itself), and what it should have been; the domain reports it with the item's index.
	wrongType *apperror.FieldError
}

// UnmarshalJSON decodes an item, keeping a field of the wrong type as a validation error of
// this item rather than failing the whole list, so the domain can name it as
// attachments[i].field.
func (a *attachmentBody) UnmarshalJSON(raw []byte) error {
	type plain attachmentBody
	var p plain
	if len(raw) == 0 || raw[0] != '{' {
		*a = attachmentBody{wrongType: &apperror.FieldError{Path: "", Message: "must be an object"}}
		return nil
	}
	err := json.Unmarshal(raw, &p)
	var te *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &te) {
		return err
	}
	*a = attachmentBody(p)
	if te != nil {
		a.wrongType = &apperror.FieldError{Path: te.Field, Message: "must be a string, not " + te.Value}
	}
	return nil
}

// input is the item in the domain's terms. The decoded content is handed over, not copied.
func (a attachmentBody) input() message.AttachmentInput {
	in := message.AttachmentInput{Filename: a.Filename, Path: a.Path, ContentType: a.ContentType, ContentID: a.ContentID,
		WrongType: a.wrongType}
	// encoding/json leaves a field of the wrong type set to its zero value: it was not given,
	// and is reported once, as of the wrong type.
	if w := a.wrongType; w != nil {
		switch w.Path {
		case "filename":
			in.Filename = nil
		case "path":
			in.Path = nil
		case "content_type":
			in.ContentType = nil
		case "content_id":
			in.ContentID = nil
		}
	}
	if a.Content != nil {
		in.HasContent, in.Content, in.ContentProblem = true, a.Content.data, a.Content.problem
	}
	return in
}

// attachmentInputs is a send's attachments in the domain's terms (nil when none were sent).
func attachmentInputs(items []attachmentBody) []message.AttachmentInput {
	if items == nil {
		return nil
	}
	out := make([]message.AttachmentInput, len(items))
	for i, a := range items {
		out[i] = a.input()
	}
	return out
}

// base64Body is base64 content decoded while the request body is decoded: a large attachment is
// held once, as its bytes, never also as a base64 string.
type base64Body struct {
	data []byte
	// problem says why the value is not base64 content; the domain reports it with its path.
	problem string
}

// UnmarshalJSON decodes a JSON string of standard base64 (RFC 4648 §4; line breaks allowed).
func (b *base64Body) UnmarshalJSON(raw []byte) error {
	*b = base64Body{}
	if len(raw) < 2 || raw[0] != '"' {
		b.problem = "must be a base64 string"
		return nil
	}
	src := raw[1 : len(raw)-1]
	if bytes.IndexByte(src, '\\') >= 0 {
		// A JSON escape (\/, or \n from encoders that wrap lines): unquote first. Base64
		// from most encoders has none, and is decoded straight from the request body.
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		src = []byte(s)
	}
	dst := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
	n, err := base64.StdEncoding.Decode(dst, src)
	if err != nil {
		var corrupt base64.CorruptInputError
		if errors.As(err, &corrupt) {
			b.problem = fmt.Sprintf("is not standard base64 (at character %d)", int64(corrupt))
		} else {
			b.problem = "is not standard base64"
		}
		return nil
	}
	b.data = dst[:n:n]
	return nil
}
