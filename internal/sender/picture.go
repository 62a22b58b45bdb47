package sender

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // decodes the JPEG pictures checked
	_ "image/png"  // and the PNG ones
	"io"
	"net/http"
	"net/url"

	"k8s.io/client-go/util/retry"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Bounds of a WhatsApp profile picture (Meta: JPEG or PNG, at most 5 MB, at least 192×192).
const (
	maxPictureBytes = 5 << 20
	minPictureSide  = 192
)

// PictureTypes are the MIME types a profile picture may have.
var PictureTypes = []string{"image/jpeg", "image/png"}

// PictureInput is a profile picture change: the URL of the image and its type.
type PictureInput struct {
	ImageURL *string `json:"imageUrl"`
	MimeType *string `json:"mimeType"`
}

// Pictures writes a profile picture at the provider; ok is false when the sender's WhatsApp
// has no provider that keeps one (the sandbox).
type Pictures interface {
	WriteProfilePicture(ctx context.Context, snd *v1alpha1.Sender, image []byte, mimeType string) (ok bool, err error)
}

// WithPictures makes s set profile pictures at the provider, fetching the image a client names
// with fetch (a client under the deliveries' address rules), and returns s.
func (s *Service) WithPictures(p Pictures, fetch *http.Client) *Service {
	s.pictures, s.fetch = p, fetch
	return s
}

// UpdateProfilePicture fetches the image at in.ImageURL, checks it is the JPEG or PNG in.MimeType
// says, of at most 5 MB and at least 192 pixels a side, and makes it the sender's WhatsApp
// profile picture. Through Meta the picture is uploaded and Meta's URL of it is what the profile
// shows; on the sandbox the profile keeps the URL given.
func (s *Service) UpdateProfilePicture(ctx context.Context, project, id string, in PictureInput) (v1alpha1.BusinessProfile, error) {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	var u *url.URL
	if in.ImageURL == nil || *in.ImageURL == "" {
		bad("imageUrl", "is required")
	} else if p, err := url.Parse(*in.ImageURL); err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") || len(*in.ImageURL) > 2048 {
		bad("imageUrl", "must be an http(s) URL of up to 2048 characters")
	} else {
		u = p
	}
	if in.MimeType == nil || (*in.MimeType != "image/jpeg" && *in.MimeType != "image/png") {
		bad("mimeType", "must be image/jpeg or image/png")
	}
	if len(errs) > 0 {
		return v1alpha1.BusinessProfile{}, apperror.InvalidFields(errs...)
	}
	snd, err := s.get(ctx, project, id)
	if err != nil {
		return v1alpha1.BusinessProfile{}, err
	}
	if snd.Spec.WhatsApp == nil {
		return v1alpha1.BusinessProfile{}, noBusinessAccount()
	}
	img, err := s.fetchPicture(ctx, u, *in.MimeType)
	if err != nil {
		return v1alpha1.BusinessProfile{}, err
	}
	atProvider := false
	if s.pictures != nil {
		if atProvider, err = s.pictures.WriteProfilePicture(ctx, snd, img, *in.MimeType); err != nil {
			return v1alpha1.BusinessProfile{}, providerError(err)
		}
	}
	if atProvider {
		// Meta's URL of the picture is signed and expires: it is read, never kept.
		return s.Profile(ctx, project, id)
	}
	var out v1alpha1.BusinessProfile
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		snd, err := s.getLive(ctx, project, id)
		if err != nil {
			return err
		}
		if snd.Spec.WhatsApp == nil {
			return noBusinessAccount()
		}
		if snd.Spec.WhatsApp.Profile == nil {
			snd.Spec.WhatsApp.Profile = &v1alpha1.BusinessProfile{}
		}
		snd.Spec.WhatsApp.Profile.ProfilePictureURL = u.String()
		if err := s.write(ctx, snd); err != nil {
			return err
		}
		out = *snd.Spec.WhatsApp.Profile
		return nil
	})
	return out, err
}

// fetchPicture downloads the picture and checks it; what is wrong with it is a 400 on imageUrl.
func (s *Service) fetchPicture(ctx context.Context, u *url.URL, mimeType string) ([]byte, error) {
	bad := func(format string, args ...any) error {
		return apperror.InvalidFields(apperror.FieldError{Path: "imageUrl", Message: fmt.Sprintf(format, args...)})
	}
	hc := s.fetch
	if hc == nil {
		return nil, errors.New("sender: no client to fetch profile pictures with")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, bad("must be an http(s) URL")
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The cause is not repeated: it may name an address the rules refuse.
		return nil, bad("could not be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, bad("could not be fetched: the server answered HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxPictureBytes+1))
	switch {
	case err != nil:
		return nil, bad("could not be fetched: the download broke off")
	case len(data) > maxPictureBytes:
		return nil, bad("is larger than 5 MB, WhatsApp's limit for a profile picture")
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	switch {
	case err != nil:
		return nil, bad("is not a JPEG or PNG image")
	case "image/"+format != mimeType:
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "mimeType", Message: fmt.Sprintf("the image is image/%s, not %s", format, mimeType)})
	case cfg.Width < minPictureSide || cfg.Height < minPictureSide:
		return nil, bad("is %d×%d pixels; WhatsApp needs at least %d×%d", cfg.Width, cfg.Height, minPictureSide, minPictureSide)
	}
	return data, nil
}
