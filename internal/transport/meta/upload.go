package meta

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// UploadTypes are the MIME types the Resumable Upload API takes.
var UploadTypes = []string{"application/pdf", "image/jpeg", "image/jpg", "image/png", "video/mp4"}

// uploadSession is what an upload session id may be: "upload:" and Meta's opaque id, with a
// "?sig=…" query of its own.
var uploadSession = regexp.MustCompile(`^upload:[A-Za-z0-9+/=_-]{1,1000}(\?[A-Za-z0-9+/=_&%.-]{0,1000})?$`)

// UploadFile uploads a file through the Resumable Upload API and returns its handle, which
// endpoints that take an uploaded file (a business profile picture, a template header sample)
// name. It opens a session for the Provider's app (POST /{app-id}/uploads with the file's name,
// length and type) and sends the bytes in one step from offset 0 (POST /{upload-session-id}
// with "Authorization: OAuth" and file_offset). An empty token is the Provider's.
func (t *Transport) UploadFile(ctx context.Context, token, fileName, mimeType string, data []byte) (string, error) {
	const op = "upload file"
	switch {
	case t.cfg.AppID == "":
		return "", invalid("An upload through the Resumable Upload API needs the Provider's app id (spec.meta.appId).")
	case len(data) == 0:
		return "", invalid("An upload needs a file.")
	case len(data) > MaxMediaBytes:
		return "", invalid("The file has %d bytes; Meta takes at most %d.", len(data), MaxMediaBytes)
	case !slices.Contains(UploadTypes, mimeType):
		return "", invalid("Meta's Resumable Upload API takes %s, not %q.", strings.Join(UploadTypes, ", "), mimeType)
	}
	tok := t.token(token)
	var session struct {
		ID string `json:"id"`
	}
	q := url.Values{"file_name": {fileName}, "file_length": {strconv.Itoa(len(data))}, "file_type": {mimeType}}
	if err := t.call(ctx, request{op: op, method: http.MethodPost, path: []string{t.cfg.AppID, "uploads"}, query: q, token: tok}, &session); err != nil {
		return "", err
	}
	if !uploadSession.MatchString(session.ID) {
		return "", acceptedUnreadable(op)
	}
	// The session id is a path segment with its own query: it goes into the URL as Meta gave it.
	path, query, _ := strings.Cut(session.ID, "?")
	u := t.endpoint(path)
	u.RawQuery = query
	var out struct {
		Handle string `json:"h"`
	}
	err := t.send(ctx, request{op: op, method: http.MethodPost, raw: data, contentType: "application/octet-stream",
		token: tok, oauth: true, header: http.Header{"File_offset": {"0"}}}, u, &out)
	if err != nil {
		return "", err
	}
	if out.Handle == "" {
		return "", acceptedUnreadable(op)
	}
	return out.Handle, nil
}

// SetProfilePicture makes the file of an upload handle (UploadFile) the phone number's profile
// picture: POST /{phone-number-id}/whatsapp_business_profile {profile_picture_handle}. An empty
// token is the Provider's.
func (t *Transport) SetProfilePicture(ctx context.Context, token, phoneNumberID, handle string) error {
	if handle == "" {
		return invalid("A profile picture needs an upload handle.")
	}
	return t.callForSuccess(ctx, request{op: "set profile picture", method: http.MethodPost,
		path: []string{phoneNumberID, "whatsapp_business_profile"}, token: t.token(token),
		body: obj{"messaging_product": "whatsapp", "profile_picture_handle": handle}})
}

// ProfilePictureTypes are the image types WhatsApp takes as a profile picture.
var ProfilePictureTypes = []string{"image/jpeg", "image/png"}
