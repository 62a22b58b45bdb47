package message

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// inlineInput is an attachment with inline content, urlInput one with a path.
func inlineInput(filename string, content []byte) AttachmentInput {
	return AttachmentInput{Filename: &filename, HasContent: true, Content: content}
}

func urlInput(filename, path string) AttachmentInput {
	return AttachmentInput{Filename: &filename, Path: &path}
}

// withInput returns a after change.
func withInput(a AttachmentInput, change func(*AttachmentInput)) AttachmentInput {
	change(&a)
	return a
}

func TestCheckAttachments(t *testing.T) {
	t.Parallel()
	pdf := []byte("%PDF-1.7 hello")
	three := []byte{0, 0, 0}
	wrong := func(path, msg string) *apperror.FieldError { return &apperror.FieldError{Path: path, Message: msg} }
	for _, c := range []struct {
		name  string
		items []AttachmentInput
		email bool
		want  []apperror.FieldError // the invalid fields, in order; messages checked when given
	}{
		{"inline and URL", []AttachmentInput{inlineInput("a.pdf", pdf), withInput(urlInput("logo.png", "https://cdn.acme.example/logo.png"), func(a *AttachmentInput) { a.ContentID = new("logo") })}, true, nil},
		{"an empty file", []AttachmentInput{inlineInput("empty.txt", nil), inlineInput("empty.bin", []byte{})}, true, nil},
		{"not email", []AttachmentInput{inlineInput("a.pdf", pdf)}, false,
			[]apperror.FieldError{{Path: "attachments", Message: "attachments are for email: send to an email address, or with channel email"}}},
		{"no filename", []AttachmentInput{{HasContent: true, Content: pdf}, inlineInput("", pdf)}, true,
			[]apperror.FieldError{{Path: "attachments[0].filename", Message: "is required"}, {Path: "attachments[1].filename", Message: "is required"}}},
		{"neither content nor path", []AttachmentInput{{Filename: new("a.pdf")}}, true,
			[]apperror.FieldError{{Path: "attachments[0].content", Message: "content (base64) or path (an http(s) URL) is required"}}},
		{"both", []AttachmentInput{withInput(inlineInput("a.pdf", pdf), func(a *AttachmentInput) { a.Path = new("https://x.example/a.pdf") })}, true,
			[]apperror.FieldError{{Path: "attachments[0]", Message: "send either content or path, not both"}}},
		{"not base64", []AttachmentInput{inlineInput("a", three), {Filename: new("b"), HasContent: true, ContentProblem: "is not standard base64 (at character 3)"}}, true,
			[]apperror.FieldError{{Path: "attachments[1].content", Message: "is not standard base64 (at character 3)"}}},
		{"content not a string", []AttachmentInput{{Filename: new("a"), HasContent: true, ContentProblem: "must be a base64 string"}}, true,
			[]apperror.FieldError{{Path: "attachments[0].content", Message: "must be a base64 string"}}},
		// The decoder leaves a field of the wrong type as "": it is not reported as missing too.
		{"filename not a string", []AttachmentInput{withInput(inlineInput("", three), func(a *AttachmentInput) { a.WrongType = wrong("filename", "must be a string, not number") })}, true,
			[]apperror.FieldError{{Path: "attachments[0].filename", Message: "must be a string, not number"}}},
		{"path not a string", []AttachmentInput{{Filename: new("a"), WrongType: wrong("path", "must be a string, not number")}}, true,
			[]apperror.FieldError{{Path: "attachments[0].path", Message: "must be a string, not number"}}},
		{"content_type not a string, on the third item", []AttachmentInput{inlineInput("a", three), inlineInput("b", three),
			withInput(inlineInput("c", three), func(a *AttachmentInput) { a.WrongType = wrong("content_type", "must be a string, not bool") })}, true,
			[]apperror.FieldError{{Path: "attachments[2].content_type", Message: "must be a string, not bool"}}},
		{"item not an object", []AttachmentInput{{WrongType: wrong("", "must be an object")}, inlineInput("b", three)}, true,
			[]apperror.FieldError{{Path: "attachments[0]", Message: "must be an object"}}},
		{"item not an object, whatever else it has", []AttachmentInput{{Filename: new("a"), HasContent: true, Path: new("x"), WrongType: wrong("", "must be an object")}}, true,
			[]apperror.FieldError{{Path: "attachments[0]", Message: "must be an object"}}},
		{"path not a URL", []AttachmentInput{urlInput("a", "/etc/passwd"), urlInput("b", "ftp://x.example/b"), urlInput("c", "https://"), urlInput("d", "http://x.example/%zz")}, true,
			[]apperror.FieldError{{Path: "attachments[0].path", Message: "must be an http(s) URL"}, {Path: "attachments[1].path"}, {Path: "attachments[2].path"}, {Path: "attachments[3].path"}}},
		{"header injection", []AttachmentInput{withInput(inlineInput("a\r\nBcc: x@y.example", three), func(a *AttachmentInput) {
			a.ContentType, a.ContentID = new("text/plain\r\nX: y"), new("a b")
		})}, true, []apperror.FieldError{
			{Path: "attachments[0].filename", Message: "must be up to 255 characters, without control characters"},
			{Path: "attachments[0].content_type", Message: "must be a MIME type such as application/pdf"},
			{Path: "attachments[0].content_id", Message: "must be 1 to 255 printable ASCII characters without spaces or angle brackets (it is referenced as cid:<content_id>)"}}},
		{"long filename", []AttachmentInput{inlineInput(strings.Repeat("é", 255), three), inlineInput(strings.Repeat("é", 256), three)}, true,
			[]apperror.FieldError{{Path: "attachments[1].filename"}}},
		{"bad content type", []AttachmentInput{withInput(inlineInput("a", three), func(a *AttachmentInput) { a.ContentType = new("pdf") })}, true,
			[]apperror.FieldError{{Path: "attachments[0].content_type"}}},
		{"empty content id", []AttachmentInput{withInput(inlineInput("a", three), func(a *AttachmentInput) { a.ContentID = new("") })}, true,
			[]apperror.FieldError{{Path: "attachments[0].content_id"}}},
		{"content id with angle brackets, or too long", []AttachmentInput{
			withInput(inlineInput("a", three), func(a *AttachmentInput) { a.ContentID = new("<logo>") }),
			withInput(inlineInput("b", three), func(a *AttachmentInput) { a.ContentID = new(strings.Repeat("x", 256)) }),
			withInput(inlineInput("c", three), func(a *AttachmentInput) { a.ContentID = new(strings.Repeat("x", 255)) })}, true,
			[]apperror.FieldError{{Path: "attachments[0].content_id"}, {Path: "attachments[1].content_id"}}},
		{"50 items", slices.Repeat([]AttachmentInput{inlineInput("a", three)}, 50), true, nil},
		{"51 items", slices.Repeat([]AttachmentInput{inlineInput("a", three)}, 51), true,
			[]apperror.FieldError{{Path: "attachments", Message: "at most 50 attachments, not 51"}}},
		{"every problem at once", []AttachmentInput{{HasContent: true, ContentProblem: "is not standard base64 (at character 0)"}, {Filename: new("b")}, urlInput("c", "ftp://x")}, false,
			[]apperror.FieldError{{Path: "attachments"}, {Path: "attachments[0].filename"}, {Path: "attachments[0].content"}, {Path: "attachments[1].content"}, {Path: "attachments[2].path"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			atts, errs := checkAttachments(c.items, c.email)
			ok := len(errs) == len(c.want)
			for i := 0; ok && i < len(errs); i++ {
				ok = errs[i].Path == c.want[i].Path && (c.want[i].Message == "" || errs[i].Message == c.want[i].Message)
			}
			if !ok {
				t.Fatalf("invalid fields %v, want %v", errs, c.want)
			}
			if len(errs) == 0 && len(atts) != len(c.items) {
				t.Fatalf("%d valid attachments came back as %d", len(c.items), len(atts))
			}
			if len(errs) != 0 && atts != nil {
				t.Fatalf("invalid attachments came back to store: %v", atts)
			}
		})
	}
}

func TestCheckAttachmentsKeepsWhatWasSent(t *testing.T) {
	t.Parallel()
	content := []byte("%PDF-1.7 \x00\xff binary")
	items := []AttachmentInput{inlineInput("Invoice.PDF", content),
		withInput(urlInput("logo", "https://cdn.acme.example/logo"), func(a *AttachmentInput) { a.ContentType, a.ContentID = new("image/png"), new("logo@acme") }),
		inlineInput("notes", []byte("n"))}
	atts, errs := checkAttachments(items, true)
	if len(errs) != 0 || len(atts) != 3 {
		t.Fatalf("checkAttachments = %v, %v", atts, errs)
	}
	if a := atts[0]; a.filename != "Invoice.PDF" || !bytes.Equal(a.content, content) || a.url != nil ||
		a.contentType != "application/pdf" || a.contentID != nil {
		t.Errorf("inline attachment %+v", a)
	}
	if &atts[0].content[0] != &content[0] {
		t.Errorf("the content was copied, not kept")
	}
	if a := atts[1]; a.content != nil || a.url == nil || *a.url != "https://cdn.acme.example/logo" || a.contentType != "image/png" ||
		a.contentID == nil || *a.contentID != "logo@acme" {
		t.Errorf("URL attachment %+v", a)
	}
	if a := atts[2]; a.contentType != defaultAttachmentCT {
		t.Errorf("content type of a file without extension %q", a.contentType)
	}
	if a, _ := checkAttachments([]AttachmentInput{inlineInput("data", nil)}, true); a[0].content == nil {
		t.Errorf("an empty file is read as a URL attachment")
	}
}

func TestAttachmentsOverTheTotal(t *testing.T) {
	t.Parallel()
	half := make([]byte, maxAttachmentBytes/2)
	exact := []AttachmentInput{inlineInput("a", half), inlineInput("b", half)}
	if _, errs := checkAttachments(exact, true); len(errs) != 0 {
		t.Fatalf("exactly 40 MB refused: %v", errs)
	}
	over := []AttachmentInput{inlineInput("a", half), inlineInput("b", half), inlineInput("c", []byte{0, 0, 0})}
	_, errs := checkAttachments(over, true)
	if len(errs) != 1 || errs[0].Path != "attachments" || errs[0].Message != "at most 41943040 bytes (40 MB) of content in total, not 41943043" {
		t.Fatalf("40 MB and 3 bytes: %v", errs)
	}
}

// The transport gets each stored attachment, in order, with its bytes or its URL.
func TestAttachmentsReachTheTransport(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	subject := "Invoice"
	for _, m := range []db.RecordMessageParams{
		{ID: "msg_email", Project: "acme", Sender: "main", Direction: "outbound", Channel: "email", MessageType: "text",
			Status: "queued", Recipient: "ada@example.com", Subject: &subject, Options: []byte(`{}`), CreatedAt: now,
			ConversationID: "conv_email", ContactIdentifier: "ada@example.com", ContactChannels: []string{"email"}},
		{ID: "msg_sms", Project: "acme", Sender: "main", Direction: "outbound", Channel: "sms", MessageType: "text",
			Status: "queued", Recipient: "+15005550100", Options: []byte(`{}`), CreatedAt: now,
			ConversationID: "conv_sms", ContactIdentifier: "+15005550100", ContactChannels: []string{"sms"}},
	} {
		results := db.Planned(pool).RecordMessage(ctx, []db.RecordMessageParams{m})
		results.QueryRow(func(_ int, _ db.RecordMessageRow, err error) {
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	items := []AttachmentInput{inlineInput("invoice.pdf", []byte("pdf bytes")),
		withInput(urlInput("logo.png", "https://cdn.acme.example/logo.png"), func(a *AttachmentInput) { a.ContentID = new("logo") })}
	atts, errs := checkAttachments(items, true)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return storeAttachments(ctx, tx, "msg_email", atts, now) }); err != nil {
		t.Fatal(err)
	}

	got, err := outboundAttachments(ctx, db.Planned(pool), db.Message{ID: "msg_email", Channel: "email"})
	if err != nil {
		t.Fatal(err)
	}
	want := []transport.Attachment{
		{Filename: "invoice.pdf", ContentType: "application/pdf", Content: []byte("pdf bytes")},
		{Filename: "logo.png", ContentType: "image/png", ContentID: "logo", URL: "https://cdn.acme.example/logo.png"},
	}
	if len(got) != len(want) {
		t.Fatalf("transport attachments %+v", got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Filename != w.Filename || g.ContentType != w.ContentType || g.ContentID != w.ContentID || g.URL != w.URL || !bytes.Equal(g.Content, w.Content) {
			t.Errorf("attachment %d = %+v, want %+v", i, g, w)
		}
	}
	rows, err := db.Planned(pool).ListMessageAttachments(ctx, "msg_email")
	if err != nil || len(rows) != 2 || rows[0].Size != int64(len("pdf bytes")) || rows[1].Size != 0 || !strings.HasPrefix(rows[0].ID, "att_") {
		t.Errorf("listed %+v, %v", rows, err)
	}
	if none, err := outboundAttachments(ctx, db.Planned(pool), db.Message{ID: "msg_sms", Channel: "sms"}); err != nil || none != nil {
		t.Errorf("an sms has attachments %v, %v", none, err)
	}
}
