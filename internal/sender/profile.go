package sender

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"k8s.io/client-go/util/retry"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Verticals are the business categories of a WhatsApp profile.
var Verticals = []string{"UNDEFINED", "OTHER", "AUTO", "BEAUTY", "APPAREL", "EDU", "ENTERTAIN", "EVENT_PLAN", "FINANCE",
	"GROCERY", "GOVT", "HOTEL", "HEALTH", "NONPROFIT", "PROF_SERVICES", "RETAIL", "TRAVEL", "RESTAURANT", "NOT_A_BIZ"}

// ProfileInput is a business profile update; nil fields are left as they are.
type ProfileInput struct {
	About       *string   `json:"about"`
	Address     *string   `json:"address"`
	Description *string   `json:"description"`
	Email       *string   `json:"email"`
	Websites    *[]string `json:"websites"`
	Vertical    *string   `json:"vertical"`
}

// Profiles reads and writes a sender's WhatsApp business profile at its provider (the
// transport registry: the Graph API); ok is false when the sender's WhatsApp has no provider
// that keeps one (the sandbox), and the resource's copy is the profile.
type Profiles interface {
	ReadProfile(ctx context.Context, snd *v1alpha1.Sender) (p v1alpha1.BusinessProfile, ok bool, err error)
	WriteProfile(ctx context.Context, snd *v1alpha1.Sender, p v1alpha1.BusinessProfile) (ok bool, err error)
}

// WithProfiles makes s read and write profiles at the provider, and returns s.
func (s *Service) WithProfiles(p Profiles) *Service {
	s.profiles = p
	return s
}

// providerError is the answer when the provider would not read or write the profile.
func providerError(err error) error {
	e := apperror.New(apperror.Unavailable, "provider_unavailable", "WhatsApp did not take the business profile request; try again.")
	return errors.Join(e, err)
}

func noBusinessAccount() error {
	return apperror.InvalidFields(apperror.FieldError{Path: "", Message: "this sender has no connected WhatsApp business account; connect one (an invitation) first"})
}

// Profile returns the sender's WhatsApp business profile.
func (s *Service) Profile(ctx context.Context, project, id string) (v1alpha1.BusinessProfile, error) {
	snd, err := s.get(ctx, project, id)
	if err != nil {
		return v1alpha1.BusinessProfile{}, err
	}
	if snd.Spec.WhatsApp == nil {
		return v1alpha1.BusinessProfile{}, noBusinessAccount()
	}
	if s.profiles != nil {
		p, ok, err := s.profiles.ReadProfile(ctx, snd)
		if err != nil {
			return v1alpha1.BusinessProfile{}, providerError(err)
		}
		if ok {
			return p, nil
		}
	}
	if p := snd.Spec.WhatsApp.Profile; p != nil {
		return *p, nil
	}
	return v1alpha1.BusinessProfile{}, nil
}

// UpdateProfile changes the fields of the profile that in sets.
func (s *Service) UpdateProfile(ctx context.Context, project, id string, in ProfileInput) (v1alpha1.BusinessProfile, error) {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	maxLen := func(path string, v *string, n int) {
		if v != nil && len([]rune(*v)) > n {
			bad(path, fmt.Sprintf("must be up to %d characters", n))
		}
	}
	maxLen("about", in.About, 139)
	maxLen("address", in.Address, 256)
	maxLen("description", in.Description, 512)
	if in.Email != nil && *in.Email != "" && !addr.IsEmail(*in.Email) {
		bad("email", "must be an email address")
	}
	if in.Websites != nil {
		if len(*in.Websites) > 2 {
			bad("websites", "must hold at most 2 URLs")
		}
		for i, w := range *in.Websites {
			if u, err := url.Parse(w); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || len(w) > 256 {
				bad(fmt.Sprintf("websites[%d]", i), "must be an http(s) URL of up to 256 characters")
			}
		}
	}
	if in.Vertical != nil && !slices.Contains(Verticals, *in.Vertical) {
		bad("vertical", "must be one of "+fmt.Sprint(Verticals))
	}
	if len(errs) > 0 {
		return v1alpha1.BusinessProfile{}, apperror.InvalidFields(errs...)
	}

	var out v1alpha1.BusinessProfile
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		snd, err := s.getLive(ctx, project, id)
		if err != nil {
			return err
		}
		if snd.Spec.WhatsApp == nil {
			return noBusinessAccount()
		}
		p := snd.Spec.WhatsApp.Profile
		if p == nil {
			p = &v1alpha1.BusinessProfile{}
		}
		set := func(dst *string, v *string) {
			if v != nil {
				*dst = *v
			}
		}
		set(&p.About, in.About)
		set(&p.Address, in.Address)
		set(&p.Description, in.Description)
		set(&p.Email, in.Email)
		set(&p.Vertical, in.Vertical)
		if in.Websites != nil {
			p.Websites = *in.Websites
		}
		if s.profiles != nil {
			// WhatsApp shows it: written there first; the resource keeps the copy.
			if _, err := s.profiles.WriteProfile(ctx, snd, *p); err != nil {
				return providerError(err)
			}
		}
		snd.Spec.WhatsApp.Profile = p
		if err := s.write(ctx, snd); err != nil {
			return err
		}
		out = *snd.Spec.WhatsApp.Profile
		return nil
	})
	return out, err
}
