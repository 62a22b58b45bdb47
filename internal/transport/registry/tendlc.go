package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/tendlc"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// Registrar implements tendlc.LiveRegistrars: a project's live 10DLC registrations go through the
// registration APIs of the twilio Provider that carries its SMS (its own default, else the
// installation's). nil when no usable twilio Provider serves it.
func (r *Registry) Registrar(ctx context.Context, project string) (tendlc.Registrar, error) {
	p, _, err := r.providerIn(ctx, project, v1alpha1.ChannelSMS, "")
	if err != nil {
		return nil, err
	}
	if p == nil || p.Spec.Type != v1alpha1.ProviderTwilio {
		return nil, nil
	}
	if f := unusable(p); f != nil {
		return nil, apperror.New(apperror.Unavailable, "provider_not_ready", f.Message)
	}
	t, err := r.twilioOf(ctx, p)
	if err != nil {
		var f *transport.Failure
		if errors.As(err, &f) {
			return nil, apperror.New(apperror.Unavailable, "provider_not_ready", f.Message)
		}
		return nil, err
	}
	return twilioRegistrar{t: t, provider: p.Namespace + "/" + p.Name}, nil
}

// twilioRegistrar registers through Twilio's Trust Hub and A2P 10DLC APIs.
type twilioRegistrar struct {
	t        *twilio.Transport
	provider string
}

// refused turns what Twilio said of a registration into the caller's error: Twilio's refusal of
// what was asked is the client's to fix (400 with Twilio's words); the rest is the provider's.
func (tr twilioRegistrar) refused(what string, err error) error {
	var re *twilio.RegistrationError
	if errors.As(err, &re) && re.Status >= 400 && re.Status < 500 && re.Status != http.StatusUnauthorized && re.Status != http.StatusForbidden {
		return apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Twilio refused the %s (error %d): %s", what, re.Code, re.Message))
	}
	// The provider refused our credentials or could not answer: the registration is unchanged
	// and can be retried once the Provider works.
	if f := transport.AsFailure(err); f != nil {
		return apperror.New(apperror.Unavailable, "provider_unavailable", fmt.Sprintf("The %s through Provider %s failed: %s", what, tr.provider, f.Message))
	}
	var tmp *transport.Temporary
	if errors.As(err, &tmp) {
		return apperror.New(apperror.Unavailable, "provider_unavailable", fmt.Sprintf("Provider %s could not be reached for the %s; try again.", tr.provider, what))
	}
	return fmt.Errorf("%s through Provider %s: %w", what, tr.provider, err)
}

func (tr twilioRegistrar) SubmitBrand(ctx context.Context, b tendlc.Brand) (tendlc.Submitted, error) {
	ref, err := tr.t.RegisterBrand(ctx, twilio.BrandRegistration{ID: b.ID, DisplayName: b.DisplayName, CompanyName: b.CompanyName,
		EntityType: b.EntityType, EIN: b.EIN, Vertical: b.Vertical, Email: b.Email, Phone: b.Phone, Street: b.Street, City: b.City,
		State: b.State, PostalCode: b.PostalCode, Country: b.Country, Website: b.Website, FirstName: b.FirstName, LastName: b.LastName,
		StockExchange: b.StockExchange, StockSymbol: b.StockSymbol})
	if err != nil {
		return tendlc.Submitted{}, tr.refused("brand registration", err)
	}
	data, _ := json.Marshal(ref)
	return tendlc.Submitted{Ref: ref.BrandSid, Data: data}, nil
}

func (tr twilioRegistrar) BrandVerdict(ctx context.Context, b tendlc.Brand) (tendlc.BrandVerdict, error) {
	st, err := tr.t.BrandStatus(ctx, b.ProviderRef)
	if err != nil {
		return tendlc.BrandVerdict{}, tr.refused("brand status", err)
	}
	v := tendlc.BrandVerdict{IdentityStatus: st.IdentityStatus, FailureReason: st.FailureReason}
	if st.Score != nil {
		s := int32(*st.Score)
		v.Score = &s
	}
	switch strings.ToUpper(st.Status) {
	case "APPROVED":
		// Approved is registered; the identity check says how far it was verified.
		v.Status = tendlc.BrandUnverified
		if st.IdentityStatus == "VERIFIED" || st.IdentityStatus == "VETTED_VERIFIED" {
			v.Status = tendlc.BrandVerified
		}
	case "FAILED":
		v.Status = tendlc.BrandRejected
	case "SUSPENDED", "DELETED":
		v.Status = tendlc.BrandFailed
		if v.FailureReason == "" {
			v.FailureReason = "Twilio reports the brand registration " + strings.ToLower(st.Status) + "."
		}
	default: // PENDING, IN_REVIEW
		v.Status = tendlc.BrandPending
	}
	return v, nil
}

func brandRefOf(b tendlc.Brand) (twilio.BrandRef, error) {
	var ref twilio.BrandRef
	if err := json.Unmarshal(b.ProviderData, &ref); err != nil || ref.BrandSid == "" {
		return ref, fmt.Errorf("brand %s has no Twilio registration", b.ID)
	}
	return ref, nil
}

func (tr twilioRegistrar) SubmitCampaign(ctx context.Context, b tendlc.Brand, c tendlc.Campaign) (tendlc.Submitted, error) {
	bref, err := brandRefOf(b)
	if err != nil {
		return tendlc.Submitted{}, err
	}
	ref, err := tr.t.RegisterCampaign(ctx, twilio.CampaignRegistration{ID: c.ID, BrandSid: bref.BrandSid, Description: c.Description,
		MessageFlow: c.MessageFlow, UseCase: c.UseCase, SampleMessages: c.SampleMessages, HasEmbeddedLinks: c.EmbeddedLink,
		HasEmbeddedPhone: c.EmbeddedPhone, SubscriberOptIn: c.SubscriberOptIn, AgeGated: c.AgeGated, DirectLending: c.DirectLending,
		HelpMessage: c.HelpMessage, OptInKeywords: c.OptInKeywords, OptOutKeywords: c.OptOutKeywords})
	if err != nil {
		return tendlc.Submitted{}, tr.refused("campaign registration", err)
	}
	data, _ := json.Marshal(ref)
	return tendlc.Submitted{Ref: ref.CampaignSid, Data: data}, nil
}

func campaignRefOf(c tendlc.Campaign) (twilio.CampaignRef, error) {
	var ref twilio.CampaignRef
	if err := json.Unmarshal(c.ProviderData, &ref); err != nil || ref.CampaignSid == "" || ref.MessagingServiceSid == "" {
		return ref, fmt.Errorf("campaign %s has no Twilio registration", c.ID)
	}
	return ref, nil
}

func (tr twilioRegistrar) CampaignVerdict(ctx context.Context, c tendlc.Campaign) (tendlc.CampaignVerdict, error) {
	ref, err := campaignRefOf(c)
	if err != nil {
		return tendlc.CampaignVerdict{}, err
	}
	st, err := tr.t.CampaignStatus(ctx, ref)
	if err != nil {
		return tendlc.CampaignVerdict{}, tr.refused("campaign status", err)
	}
	v := tendlc.CampaignVerdict{Status: tendlc.CampaignPending, FailureReason: st.FailureReason}
	switch strings.ToUpper(st.Status) {
	case "VERIFIED":
		v.Status = tendlc.CampaignApproved
	case "FAILED", "SUSPENDED", "EXPIRED":
		v.Status = tendlc.CampaignRejected
		if v.FailureReason == "" {
			v.FailureReason = "Twilio reports the campaign " + strings.ToLower(st.Status) + "."
		}
	}
	return v, nil
}

func (tr twilioRegistrar) DeleteCampaign(ctx context.Context, c tendlc.Campaign) error {
	ref, err := campaignRefOf(c)
	if err != nil {
		return err
	}
	if err := tr.t.DeleteCampaign(ctx, ref); err != nil {
		return tr.refused("campaign deletion", err)
	}
	return nil
}

func (tr twilioRegistrar) AssignNumber(ctx context.Context, c tendlc.Campaign, number string) (string, error) {
	ref, err := campaignRefOf(c)
	if err != nil {
		return "", err
	}
	pn, err := tr.t.AssignNumber(ctx, ref.MessagingServiceSid, number)
	if err != nil {
		return "", tr.refused("number assignment", err)
	}
	return pn, nil
}

func (tr twilioRegistrar) UnassignNumber(ctx context.Context, c tendlc.Campaign, ref string) error {
	cref, err := campaignRefOf(c)
	if err != nil {
		return err
	}
	if err := tr.t.UnassignNumber(ctx, cref.MessagingServiceSid, ref); err != nil {
		return tr.refused("number removal", err)
	}
	return nil
}
