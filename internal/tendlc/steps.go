package tendlc

import (
	"context"
	"fmt"
)

// Step is one call of what is left to register a project for +1 SMS, in order (the v2 body of
// 403 ten_dlc_required): an API call, or an operator's action when Method is empty.
type Step struct {
	Method      string         `json:"method,omitempty"`
	Path        string         `json:"path,omitempty"`
	Body        map[string]any `json:"body,omitempty"`
	Description string         `json:"description"`
}

// Remaining returns the steps left before the project can send SMS to +1 numbers in a mode,
// from where its registrations stand: business verification, a brand registered, a campaign
// approved, and the sender's number (senderID, when the send had one) assigned to it.
func (s *Service) Remaining(ctx context.Context, project string, testMode bool, senderID string) ([]Step, error) {
	var steps []Step
	kyb, err := s.businessVerified(ctx, project)
	if err != nil {
		return nil, err
	}
	if !kyb {
		steps = append(steps, Step{Description: "Business verification of the project: an operator sets spec.verification to business_approved on its Project resource. Brands are registered only for verified businesses."})
	}
	brands, err := s.Brands(ctx, project, testMode, Page{Limit: 100})
	if err != nil {
		return nil, err
	}
	campaigns, err := s.Campaigns(ctx, project, testMode, "", Page{Limit: 100})
	if err != nil {
		return nil, err
	}
	brand := best(brands, func(b Brand) int { return rank(b.Status, BrandVerified, BrandUnverified, BrandPending, BrandDraft) })
	campaign := best(campaigns, func(c Campaign) int { return rank(c.Status, CampaignApproved, CampaignPending, CampaignDraft) })

	brandID := "{brandId}"
	switch {
	case brand == nil:
		steps = append(steps,
			Step{Method: "POST", Path: "/v1/10dlc/brands", Body: map[string]any{
				"displayName": "", "companyName": "", "entityType": "PRIVATE_PROFIT", "ein": "XX-XXXXXXX", "vertical": "",
				"email": "", "phone": "", "street": "", "city": "", "state": "", "postalCode": "", "country": "US"},
				Description: "Register the business that sends as a brand (a draft until submitted)."},
			Step{Method: "POST", Path: "/v1/10dlc/brands/{brandId}/submit", Description: "Submit the brand for verification."},
			Step{Method: "POST", Path: "/v1/10dlc/brands/{brandId}/sync", Description: "Wait until the brand is verified (the registry decides; sync asks at once)."})
	case brand.Status == BrandDraft:
		brandID = brand.ID
		steps = append(steps,
			Step{Method: "POST", Path: "/v1/10dlc/brands/" + brand.ID + "/submit", Description: "Submit the draft brand for verification."},
			Step{Method: "POST", Path: "/v1/10dlc/brands/" + brand.ID + "/sync", Description: "Wait until the brand is verified."})
	case brand.Status == BrandPending:
		brandID = brand.ID
		steps = append(steps, Step{Method: "POST", Path: "/v1/10dlc/brands/" + brand.ID + "/sync", Description: "Wait until the brand's verification is decided."})
	default:
		brandID = brand.ID
	}

	campaignID := "{campaignId}"
	if campaign != nil && (campaign.BrandID == brandID || brand == nil) {
		campaignID = campaign.ID
	}
	switch {
	case campaignID == "{campaignId}":
		steps = append(steps,
			Step{Method: "POST", Path: "/v1/10dlc/campaigns", Body: map[string]any{
				"brandId": brandID, "name": "", "description": "", "useCase": "ACCOUNT_NOTIFICATION", "sampleMessages": []string{},
				"messageFlow": "", "affiliateMarketing": false, "ageGated": false, "directLending": false, "embeddedLink": false,
				"embeddedPhone": false, "numberPooling": false, "subscriberHelp": true, "subscriberOptIn": true, "subscriberOptOut": true},
				Description: "Describe what the project sends as a campaign of the brand (GET /v1/10dlc/brands/use-cases lists the use cases)."},
			Step{Method: "POST", Path: "/v1/10dlc/campaigns/{campaignId}/submit", Description: "Submit the campaign for the carriers' review."},
			Step{Method: "POST", Path: "/v1/10dlc/campaigns/{campaignId}/sync", Description: "Wait until the campaign is approved."})
	case campaign.Status == CampaignDraft:
		steps = append(steps,
			Step{Method: "POST", Path: "/v1/10dlc/campaigns/" + campaign.ID + "/submit", Description: "Submit the draft campaign for the carriers' review."},
			Step{Method: "POST", Path: "/v1/10dlc/campaigns/" + campaign.ID + "/sync", Description: "Wait until the campaign is approved."})
	case campaign.Status == CampaignPending:
		steps = append(steps, Step{Method: "POST", Path: "/v1/10dlc/campaigns/" + campaign.ID + "/sync", Description: "Wait until the carriers' review approves the campaign."})
	}
	if senderID != "" {
		steps = append(steps, Step{Method: "POST", Path: fmt.Sprintf("/v1/10dlc/campaigns/%s/phone-numbers", campaignID),
			Body:        map[string]any{"phoneNumberId": senderID},
			Description: "Assign the sender's number to the approved campaign, so the carriers accept its messages."})
	}
	return steps, nil
}

// rank is the position of status in order (earlier is better), or -1 when absent: rejected and
// failed registrations lead nowhere.
func rank(status string, order ...string) int {
	for i, o := range order {
		if o == status {
			return i
		}
	}
	return -1
}

// best is the item of the best rank (the oldest among equals), nil when none ranks.
func best[T any](items []T, rankOf func(T) int) *T {
	var out *T
	top := -1
	for i := range items {
		r := rankOf(items[i])
		if r < 0 {
			continue
		}
		if out == nil || r < top {
			out, top = &items[i], r
		}
	}
	return out
}
