package httpapi

import (
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// attachmentJSON is an item of GET /v1/messages/{messageId}/attachments (WIRE.md §2).
type attachmentJSON struct {
	ID        string    `json:"id"`
	ContentID *string   `json:"contentId"`
	CreatedAt time.Time `json:"createdAt"`
	// DownloadURL is the URL a URL attachment was sent with; inline content has none.
	DownloadURL *string `json:"downloadUrl"`
	Filename    string  `json:"filename"`
	IsInline    bool    `json:"isInline"`
	MimeType    string  `json:"mimeType"`
	Size        int64   `json:"size"`
}

func attachmentView(a db.ListMessageAttachmentsRow) attachmentJSON {
	v := attachmentJSON{ID: a.ID, ContentID: a.ContentID, CreatedAt: a.CreatedAt.UTC(), DownloadURL: a.Path, Filename: a.Filename,
		IsInline: a.ContentID != nil, MimeType: "application/octet-stream", Size: a.Size}
	if a.ContentType != nil {
		v.MimeType = *a.ContentType
	}
	return v
}

func (s *Server) listMessageAttachments(w http.ResponseWriter, r *http.Request) {
	rows, err := s.messages.Attachments(r.Context(), keyFrom(r.Context()), r.PathValue("messageId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items := make([]attachmentJSON, len(rows))
	for i, a := range rows {
		items[i] = attachmentView(a)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// messageMedia serves the file a message carries: a WhatsApp image or document received,
// kept when it arrived, which content.mediaUrl names.
func (s *Server) messageMedia(w http.ResponseWriter, r *http.Request) {
	name, contentType, data, err := s.messages.Media(r.Context(), keyFrom(r.Context()), r.PathValue("messageId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
