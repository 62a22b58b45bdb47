package message

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// decodeAttachments reads body's attachments as the API decodes a send.
func decodeAttachments(t *testing.T, body string) []Attachment {
	t.Helper()
	var in struct {
		Attachments []Attachment `json:"attachments"`
	}
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return in.Attachments
}

func TestCheckAttachments(t *testing.T) {
	t.Parallel()
	pdf := base64.StdEncoding.EncodeToString([]byte("%PDF-1.7 hello"))
	for _, c := range []struct {
		name  string
		body  string
		email bool
		paths []string // the invalid fields, in order
	}{
		{"inline and URL", `{"attachments":[{"filename":"a.pdf","content":"` + pdf + `"},{"filename":"logo.png","path":"https://cdn.acme.example/logo.png","content_id":"logo"}]}`, true, nil},
		{"wrapped base64 and an escaped slash", `{"attachments":[{"filename":"a.bin","content":"AAAA\nAA\/A"}]}`, true, nil},
		{"not email", `{"attachments":[{"filename":"a.pdf","content":"` + pdf + `"}]}`, false, []string{"attachments"}},
		{"no filename", `{"attachments":[{"content":"` + pdf + `"}]}`, true, []string{"attachments[0].filename"}},
		{"neither content nor path", `{"attachments":[{"filename":"a.pdf"}]}`, true, []string{"attachments[0].content"}},
		{"both", `{"attachments":[{"filename":"a.pdf","content":"` + pdf + `","path":"https://x.example/a.pdf"}]}`, true, []string{"attachments[0]"}},
		{"not base64", `{"attachments":[{"filename":"a","content":"AAAA"},{"filename":"b","content":"not base64!"}]}`, true, []string{"attachments[1].content"}},
		{"content not a string", `{"attachments":[{"filename":"a","content":42}]}`, true, []string{"attachments[0].content"}},
		{"filename not a string", `{"attachments":[{"filename":7,"content":"AAAA"}]}`, true, []string{"attachments[0].filename"}},
		{"item not an object", `{"attachments":["a.pdf",{"filename":"b","content":"AAAA"}]}`, true, []string{"attachments[0]"}},
		{"path not a URL", `{"attachments":[{"filename":"a","path":"/etc/passwd"}]}`, true, []string{"attachments[0].path"}},
		{"header injection", `{"attachments":[{"filename":"a\r\nBcc: x@y.example","content":"AAAA","content_type":"text/plain\r\nX: y","content_id":"a b"}]}`, true,
			[]string{"attachments[0].filename", "attachments[0].content_type", "attachments[0].content_id"}},
		{"bad content type", `{"attachments":[{"filename":"a","content":"AAAA","content_type":"pdf"}]}`, true, []string{"attachments[0].content_type"}},
		{"empty content id", `{"attachments":[{"filename":"a","content":"AAAA","content_id":""}]}`, true, []string{"attachments[0].content_id"}},
		{"51 items", `{"attachments":[` + strings.Repeat(`{"filename":"a","content":"AAAA"},`, 50) + `{"filename":"a","content":"AAAA"}]}`, true, []string{"attachments"}},
		{"every problem at once", `{"attachments":[{"content":"@@"},{"filename":"b"},{"filename":"c","path":"ftp://x"}]}`, false,
			[]string{"attachments", "attachments[0].filename", "attachments[0].content", "attachments[1].content", "attachments[2].path"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			atts, errs := checkAttachments(decodeAttachments(t, c.body), c.email)
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Path)
			}
			if !slices.Equal(paths, c.paths) {
				t.Fatalf("invalid fields %v (%v), want %v", paths, errs, c.paths)
			}
			if len(errs) == 0 && len(atts) == 0 {
				t.Fatalf("valid attachments came back empty")
			}
		})
	}
}

func TestCheckAttachmentsKeepsWhatWasSent(t *testing.T) {
	t.Parallel()
	content := []byte("%PDF-1.7 \x00\xff binary")
	body := `{"attachments":[{"filename":"Invoice.PDF","content":"` + base64.StdEncoding.EncodeToString(content) + `"},` +
		`{"filename":"logo","path":"https://cdn.acme.example/logo","content_type":"image/png","content_id":"logo@acme"}]}`
	atts, errs := checkAttachments(decodeAttachments(t, body), true)
	if len(errs) != 0 || len(atts) != 2 {
		t.Fatalf("checkAttachments = %v, %v", atts, errs)
	}
	if a := atts[0]; a.filename != "Invoice.PDF" || !bytes.Equal(a.content, content) || a.url != nil ||
		a.contentType != "application/pdf" || a.contentID != nil {
		t.Errorf("inline attachment %+v", a)
	}
	if a := atts[1]; a.content != nil || a.url == nil || *a.url != "https://cdn.acme.example/logo" || a.contentType != "image/png" ||
		a.contentID == nil || *a.contentID != "logo@acme" {
		t.Errorf("URL attachment %+v", a)
	}
	if a, _ := checkAttachments(decodeAttachments(t, `{"attachments":[{"filename":"data","content":""}]}`), true); a[0].content == nil {
		t.Errorf("an empty file is read as a URL attachment")
	}
}

func TestAttachmentsOverTheTotal(t *testing.T) {
	t.Parallel()
	half := base64.StdEncoding.EncodeToString(make([]byte, maxAttachmentBytes/2))
	exact := `{"attachments":[{"filename":"a","content":"` + half + `"},{"filename":"b","content":"` + half + `"}]}`
	if _, errs := checkAttachments(decodeAttachments(t, exact), true); len(errs) != 0 {
		t.Fatalf("exactly 40 MB refused: %v", errs)
	}
	over := `{"attachments":[{"filename":"a","content":"` + half + `"},{"filename":"b","content":"` + half + `"},{"filename":"c","content":"AAAA"}]}`
	_, errs := checkAttachments(decodeAttachments(t, over), true)
	if len(errs) != 1 || errs[0].Path != "attachments" {
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
		if _, err := db.New(pool).RecordMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	body := `{"attachments":[{"filename":"invoice.pdf","content":"` + base64.StdEncoding.EncodeToString([]byte("pdf bytes")) + `"},` +
		`{"filename":"logo.png","path":"https://cdn.acme.example/logo.png","content_id":"logo"}]}`
	atts, errs := checkAttachments(decodeAttachments(t, body), true)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return storeAttachments(ctx, tx, "msg_email", atts, now) }); err != nil {
		t.Fatal(err)
	}

	got, err := outboundAttachments(ctx, db.New(pool), db.Message{ID: "msg_email", Channel: "email"})
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
	rows, err := db.New(pool).ListMessageAttachments(ctx, "msg_email")
	if err != nil || len(rows) != 2 || rows[0].Size != int64(len("pdf bytes")) || rows[1].Size != 0 || !strings.HasPrefix(rows[0].ID, "att_") {
		t.Errorf("listed %+v, %v", rows, err)
	}
	if none, err := outboundAttachments(ctx, db.New(pool), db.Message{ID: "msg_sms", Channel: "sms"}); err != nil || none != nil {
		t.Errorf("an sms has attachments %v, %v", none, err)
	}
}
