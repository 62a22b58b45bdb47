package tendlc

import (
	"context"
	"strings"
	"time"
)

// Registrar registers brands, campaigns and their numbers with the carriers' registry: the
// sandbox for test keys, a Provider's registration API for live ones. Its answers are what the
// registry said; Switchboard's records follow them.
type Registrar interface {
	// SubmitBrand registers a brand and returns the registrar's reference for it.
	SubmitBrand(ctx context.Context, b Brand) (Submitted, error)
	// BrandVerdict is where the brand's registration stands.
	BrandVerdict(ctx context.Context, b Brand) (BrandVerdict, error)
	// SubmitCampaign registers a campaign of a registered brand.
	SubmitCampaign(ctx context.Context, b Brand, c Campaign) (Submitted, error)
	// CampaignVerdict is where the campaign's review stands.
	CampaignVerdict(ctx context.Context, c Campaign) (CampaignVerdict, error)
	// DeleteCampaign deregisters a submitted campaign.
	DeleteCampaign(ctx context.Context, c Campaign) error
	// AssignNumber puts a number the provider holds under an approved campaign.
	AssignNumber(ctx context.Context, c Campaign, number string) (ref string, err error)
	// UnassignNumber takes a number out of its campaign.
	UnassignNumber(ctx context.Context, c Campaign, ref string) error
}

// Submitted is the registrar's reference to what was submitted, and what else it made on the
// way (kept with the record, opaque to the service).
type Submitted struct {
	Ref  string
	Data []byte
}

// BrandVerdict is a brand's registration state at the registrar.
type BrandVerdict struct {
	Status         string // a Brand status; pending while undecided
	IdentityStatus string // VERIFIED, VETTED_VERIFIED, SELF_DECLARED or UNVERIFIED, when known
	Score          *int32
	FailureReason  string
}

// CampaignVerdict is a campaign's review state at the registrar.
type CampaignVerdict struct {
	Status        string // a Campaign status; pending while undecided
	DailyLimit    *int32
	FailureReason string
}

// Sandbox decides test-mode registrations as the registry would, after a short delay: a brand or
// campaign whose name holds "reject" is rejected, every other one approved. Nothing leaves the
// installation.
type Sandbox struct {
	// Delay is how long after its submission the sandbox decides (the template review's two
	// seconds by default).
	Delay time.Duration
	Now   func() time.Time
}

// SandboxDelay is how long the sandbox takes to decide.
const SandboxDelay = 2 * time.Second

func (s Sandbox) decided(submitted *time.Time) bool {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return submitted != nil && !now().Before(submitted.Add(s.Delay))
}

func (Sandbox) SubmitBrand(_ context.Context, b Brand) (Submitted, error) {
	return Submitted{Ref: "sandbox-" + b.ID}, nil
}

func (s Sandbox) BrandVerdict(_ context.Context, b Brand) (BrandVerdict, error) {
	if !s.decided(b.SubmittedAt) {
		return BrandVerdict{Status: BrandPending}, nil
	}
	if strings.Contains(strings.ToLower(b.DisplayName), "reject") {
		return BrandVerdict{Status: BrandRejected, IdentityStatus: "UNVERIFIED",
			FailureReason: "The sandbox rejects brands whose displayName contains \"reject\"."}, nil
	}
	score := int32(75)
	return BrandVerdict{Status: BrandVerified, IdentityStatus: "VERIFIED", Score: &score}, nil
}

func (Sandbox) SubmitCampaign(_ context.Context, _ Brand, c Campaign) (Submitted, error) {
	return Submitted{Ref: "sandbox-" + c.ID}, nil
}

func (s Sandbox) CampaignVerdict(_ context.Context, c Campaign) (CampaignVerdict, error) {
	if !s.decided(c.SubmittedAt) {
		return CampaignVerdict{Status: CampaignPending}, nil
	}
	if strings.Contains(strings.ToLower(c.Name), "reject") {
		return CampaignVerdict{Status: CampaignRejected,
			FailureReason: "The sandbox rejects campaigns whose name contains \"reject\"."}, nil
	}
	// T-Mobile's daily cap for a brand of the sandbox's score (75), or a low-volume campaign's.
	limit := int32(200000)
	if c.UseCase == "LOW_VOLUME" {
		limit = 2000
	}
	return CampaignVerdict{Status: CampaignApproved, DailyLimit: &limit}, nil
}

func (Sandbox) DeleteCampaign(context.Context, Campaign) error { return nil }

func (Sandbox) AssignNumber(_ context.Context, c Campaign, number string) (string, error) {
	return "sandbox-" + c.ID + "-" + number, nil
}

func (Sandbox) UnassignNumber(context.Context, Campaign, string) error { return nil }
