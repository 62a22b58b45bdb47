package metatest

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The Resumable Upload API (https://developers.facebook.com/docs/graph-api/guides/upload):
// POST /{app-id}/uploads opens a session for a file of a given length and type; POST
// /upload:{session} with "Authorization: OAuth {token}" and a file_offset header sends bytes from
// that offset, and answers the file's handle {"h": …} once all have come; GET /upload:{session}
// answers the offset to resume from. A business profile takes a handle as
// profile_picture_handle; the picture is then served, without a token, at profile_picture_url.

// picturesPath is where profile pictures are served, as pps.whatsapp.net serves them.
const picturesPath = "/pps/"

// uploadTypes are the file types a session may be opened for.
var uploadTypes = []string{"application/pdf", "image/jpeg", "image/jpg", "image/png", "video/mp4"}

type uploadSession struct {
	length int
	mime   string
	data   []byte
}

// startUpload answers POST /{app-id}/uploads?file_length=…&file_type=…[&file_name=…].
func (s *Server) startUpload(w http.ResponseWriter, r *http.Request) *apiError {
	q := r.URL.Query()
	length, err := strconv.Atoi(q.Get("file_length"))
	switch {
	case q.Get("file_length") == "":
		return badParam("The parameter file_length is required.")
	case err != nil || length <= 0 || length > maxUpload:
		return badValue("Param file_length must be a positive number of bytes of at most %d.", maxUpload)
	case q.Get("file_type") == "":
		return badParam("The parameter file_type is required.")
	case !slices.Contains(uploadTypes, q.Get("file_type")):
		return badParam("Param file_type must be one of {%s}.", strings.Join(uploadTypes, ", "))
	}
	// Meta's session ids carry a signature as a query of their own.
	id := "upload:" + randomHex(24) + "?sig=" + randomHex(8)
	s.mu.Lock()
	s.sessions[strings.SplitN(id, "?", 2)[0]] = &uploadSession{length: length, mime: q.Get("file_type")}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": id})
	return nil
}

// uploadPart answers POST /upload:{session}: the bytes from file_offset on.
func (s *Server) uploadPart(w http.ResponseWriter, r *http.Request, id string) *apiError {
	if h := r.Header.Get("Authorization"); !strings.HasPrefix(h, "OAuth ") {
		return &apiError{status: http.StatusBadRequest, code: 1, title: "An upload step takes its access token as 'Authorization: OAuth {token}'."}
	}
	offset, err := strconv.Atoi(r.Header.Get("file_offset"))
	if err != nil {
		return badParam("The header file_offset is required.")
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpload))
	if err != nil {
		return badParam("The file is larger than %d bytes.", maxUpload)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	switch {
	case offset != len(sess.data):
		return badValue("file_offset %d does not match the %d bytes received; resume from there.", offset, len(sess.data))
	case len(sess.data)+len(data) > sess.length:
		return badValue("The upload is longer than the file_length of its session (%d bytes).", sess.length)
	}
	sess.data = append(sess.data, data...)
	if len(sess.data) < sess.length {
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "file_offset": len(sess.data)})
		return nil
	}
	handle := "4::" + randomHex(16) + ":" + sess.mime + ":e:" + randomHex(8)
	s.handles[handle] = media{mime: sess.mime, data: sess.data}
	writeJSON(w, http.StatusOK, map[string]any{"h": handle})
	return nil
}

// uploadOffset answers GET /upload:{session}.
func (s *Server) uploadOffset(w http.ResponseWriter, id string) {
	s.mu.Lock()
	n := len(s.sessions[id].data)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "file_offset": n})
}

// setPicture takes an uploaded handle as a profile picture and returns the picture's URL.
func (s *Server) setPicture(handle string) (string, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.handles[handle]
	switch {
	case !ok:
		return "", badParam("Param profile_picture_handle is not the handle of an uploaded file.")
	case f.mime != "image/jpeg" && f.mime != "image/jpg" && f.mime != "image/png":
		return "", badParam("A profile picture must be a JPEG or PNG image.")
	}
	ext := ".jpg"
	if f.mime == "image/png" {
		ext = ".png"
	}
	path := picturesPath + randomHex(12) + ext
	s.pictures[path] = f
	return s.URL + path, nil
}

// picture serves a profile picture, to anyone.
func (s *Server) picture(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.pictures[r.URL.Path]
	s.mu.Unlock()
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.mime)
	_, _ = w.Write(f.data)
}

// Picture is the profile picture at url (served by this server), and its type.
func (s *Server) Picture(url string) (data []byte, mimeType string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.pictures[strings.TrimPrefix(url, s.URL)]
	return f.data, f.mime, ok
}

// cdnPath is where attachments contacts send on Messenger and Instagram are served, as Meta's
// CDN serves them: to anyone with the signed URL.
const cdnPath = "/cdn/"

// AttachmentURL registers a file a contact sends on Messenger or Instagram and returns the CDN
// URL a webhook names it by.
func (s *Server) AttachmentURL(mimeType string, data []byte) string {
	path := cdnPath + randomHex(12)
	s.mu.Lock()
	s.pictures[path] = media{mime: mimeType, data: data}
	s.mu.Unlock()
	return s.URL + path + "?oh=" + randomHex(8)
}
