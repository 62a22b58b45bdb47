package message

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Bounds of a send's email attachments (spec: Limits, field and operation bounds). The 40 MB
// are counted on the decoded content, in MiB; a URL attachment's size is known only when the
// transport fetches it.
const (
	maxAttachments      = 50
	maxAttachmentBytes  = 40 << 20
	maxFilenameLength   = 255
	maxContentIDLength  = 255
	defaultAttachmentCT = "application/octet-stream"
)

// AttachmentInput is one item of a send's attachments as the client sent it, before
// validation (the wire adapters in httpapi decode and fill it): inline content, or a path (URL)
// the transport fetches. A nil field was not given.
type AttachmentInput struct {
	// Filename is the file's name as the recipient sees it; required.
	Filename *string
	// Path is the http(s) URL of a file the transport fetches; exclusive with content.
	Path *string
	// ContentType is the file's MIME type; when not given it is guessed from Filename.
	ContentType *string
	// ContentID names an inline part, referenced from the HTML body as cid:<ContentID>.
	ContentID *string

	// HasContent says inline content was given (even an empty file, or a value that is not
	// base64: see ContentProblem); exclusive with Path.
	HasContent bool
	// Content is the decoded bytes of the inline content, held once: validation keeps this
	// slice, it does not copy it.
	Content []byte
	// ContentProblem, when not "", says why the given content is not base64 content (with
	// HasContent set); it is reported with the content's path.
	ContentProblem string

	// WrongType is the first field given with the wrong JSON type, by its path within the item
	// ("" for the item itself, which then has no other field), and what it should have been; it
	// is reported with the item's index, and a missing field of that name is not reported again.
	WrongType *apperror.FieldError
}

// attachment is a valid attachment of a send, ready to store.
type attachment struct {
	filename    string
	contentType string
	contentID   *string
	content     []byte // nil for a URL attachment
	url         *string
}

// checkAttachments validates a send's attachments, listing every invalid field by its path, and
// returns them ready to store. email says whether the send goes out as an email.
func checkAttachments(items []AttachmentInput, email bool) ([]attachment, []apperror.FieldError) {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	if len(items) == 0 {
		return nil, nil
	}
	if !email {
		bad("attachments", "attachments are for email: send to an email address, or with channel email")
	}
	if len(items) > maxAttachments {
		bad("attachments", fmt.Sprintf("at most %d attachments, not %d", maxAttachments, len(items)))
	}
	out := make([]attachment, 0, len(items))
	total := 0
	for i, a := range items {
		at := func(field string) string {
			if field == "" {
				return fmt.Sprintf("attachments[%d]", i)
			}
			return fmt.Sprintf("attachments[%d].%s", i, field)
		}
		wrong := ""
		if a.WrongType != nil {
			wrong = a.WrongType.Path
			bad(at(wrong), a.WrongType.Message)
			if wrong == "" {
				continue
			}
		}
		v := attachment{}
		switch {
		case a.Filename == nil || *a.Filename == "":
			if wrong != "filename" {
				bad(at("filename"), "is required")
			}
		case len([]rune(*a.Filename)) > maxFilenameLength || hasControl(*a.Filename):
			bad(at("filename"), fmt.Sprintf("must be up to %d characters, without control characters", maxFilenameLength))
		default:
			v.filename = *a.Filename
		}
		switch {
		case a.HasContent && a.Path != nil:
			bad(at(""), "send either content or path, not both")
		case !a.HasContent && a.Path == nil:
			if wrong != "content" && wrong != "path" {
				bad(at("content"), "content (base64) or path (an http(s) URL) is required")
			}
		case a.HasContent:
			if a.ContentProblem != "" {
				bad(at("content"), a.ContentProblem)
			}
			v.content = a.Content
			if v.content == nil {
				v.content = []byte{} // an empty file is inline content, not a URL
			}
			total += len(a.Content)
		default:
			if u, err := url.Parse(*a.Path); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
				bad(at("path"), "must be an http(s) URL")
			}
			v.url = a.Path
		}
		if a.ContentType != nil {
			if mt, _, err := mime.ParseMediaType(*a.ContentType); err != nil || !strings.Contains(mt, "/") || hasControl(*a.ContentType) {
				bad(at("content_type"), "must be a MIME type such as application/pdf")
			}
			v.contentType = *a.ContentType
		} else {
			v.contentType = guessContentType(v.filename)
		}
		if a.ContentID != nil {
			id := *a.ContentID
			if id == "" || len(id) > maxContentIDLength || strings.ContainsFunc(id, func(r rune) bool {
				return r <= ' ' || r == '<' || r == '>' || r > unicode.MaxASCII
			}) {
				bad(at("content_id"), fmt.Sprintf("must be 1 to %d printable ASCII characters without spaces or angle brackets (it is referenced as cid:<content_id>)", maxContentIDLength))
			}
			v.contentID = a.ContentID
		}
		out = append(out, v)
	}
	if total > maxAttachmentBytes {
		bad("attachments", fmt.Sprintf("at most %d bytes (40 MB) of content in total, not %d", maxAttachmentBytes, total))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// guessContentType is the MIME type of a file by its extension, for attachments sent without
// content_type.
func guessContentType(filename string) string {
	if t := mime.TypeByExtension(strings.ToLower(path.Ext(filename))); t != "" {
		return t
	}
	return defaultAttachmentCT
}

func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

// storeAttachments writes a send's attachments in its acceptance transaction, in their order.
func storeAttachments(ctx context.Context, tx pgx.Tx, messageID string, atts []attachment, now time.Time) error {
	if len(atts) == 0 {
		return nil
	}
	rows := make([]db.InsertMessageAttachmentsParams, len(atts))
	for i, a := range atts {
		id, err := newID("att_")
		if err != nil {
			return err
		}
		ct := a.contentType
		rows[i] = db.InsertMessageAttachmentsParams{ID: id, MessageID: messageID, Position: int32(i), Filename: a.filename,
			ContentType: &ct, ContentID: a.contentID, Size: int64(len(a.content)), Content: a.content, Path: a.url, CreatedAt: now}
	}
	if _, err := db.Planned(tx).InsertMessageAttachments(ctx, rows); err != nil {
		return fmt.Errorf("insert attachments of message %s: %w", messageID, err)
	}
	return nil
}

// outboundAttachments reads what the transport needs of an email's attachments; messages on
// other channels have none, and cost no query.
func outboundAttachments(ctx context.Context, q *db.Queries, m db.Message) ([]transport.Attachment, error) {
	if m.Channel != "email" {
		return nil, nil
	}
	rows, err := q.MessageAttachmentsToSend(ctx, m.ID)
	if err != nil {
		return nil, fmt.Errorf("read attachments of message %s: %w", m.ID, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]transport.Attachment, len(rows))
	for i, r := range rows {
		out[i] = transport.Attachment{Filename: r.Filename, ContentType: deref(r.ContentType), ContentID: deref(r.ContentID),
			Content: r.Content, URL: deref(r.Path)}
	}
	return out, nil
}

// Attachments returns the attachments of the key's message id, in order and without their
// content; another project's or mode's message is not found.
func (s *Service) Attachments(ctx context.Context, key apikey.Key, id string) ([]db.ListMessageAttachmentsRow, error) {
	if _, err := s.Get(ctx, key, id); err != nil {
		return nil, err
	}
	rows, err := db.Planned(s.pool).ListMessageAttachments(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list attachments of message %s: %w", id, err)
	}
	return rows, nil
}

// Media returns the file message id carries (a WhatsApp image received, kept when it arrived):
// its name, type and bytes; 404 when it carries none.
func (s *Service) Media(ctx context.Context, key apikey.Key, id string) (filename, contentType string, data []byte, err error) {
	if _, err := s.Get(ctx, key, id); err != nil {
		return "", "", nil, err
	}
	row, err := db.Planned(s.pool).MessageMedia(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nil, apperror.NotFoundf("Message %s carries no file.", id)
	}
	if err != nil {
		return "", "", nil, fmt.Errorf("read the file of message %s: %w", id, err)
	}
	return row.Filename, deref(row.ContentType), row.Content, nil
}

// SetMediaBase makes received media point at the installation (publicURL): an inbound message
// whose file was kept shows content.mediaUrl <publicURL>/v1/messages/<id>/media, which works
// after the provider's own link expires.
func (s *Service) SetMediaBase(publicURL string) { s.mediaBase = strings.TrimRight(publicURL, "/") }
