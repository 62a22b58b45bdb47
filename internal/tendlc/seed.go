package tendlc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// SeedApproved gives a project a verified brand and an approved campaign in a mode, as the
// sandbox would after a registration, unless it has an approved campaign already. `switchboard
// dev` seeds project default's test mode with it, so a developer's first test sends to +1
// numbers are not refused; live registrations are never seeded.
func SeedApproved(ctx context.Context, pool *pgxpool.Pool, project string, testMode bool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		// One seeding at a time per project and mode (two replicas starting together).
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('ten_dlc_seed:' || $1))", project); err != nil {
			return err
		}
		has, err := q.HasApprovedTenDLCCampaign(ctx, db.HasApprovedTenDLCCampaignParams{Project: project, TestMode: testMode})
		if err != nil || has {
			return err
		}
		now := time.Now().UTC()
		suffix := "live_" + project
		if testMode {
			suffix = "test_" + project
		}
		brand, _ := json.Marshal(BrandDetails{DisplayName: project, CompanyName: project, EntityType: "PRIVATE_PROFIT", EIN: "00-0000000",
			Vertical: "TECHNOLOGY", Email: "registrations@" + project + ".example", Phone: "+15005550006", Street: "1 Seeded Way",
			City: "San Francisco", State: "CA", PostalCode: "94105", Country: "US"})
		b, err := q.InsertTenDLCBrand(ctx, db.InsertTenDLCBrandParams{ID: "brand_seed_" + suffix, Project: project, TestMode: testMode,
			Status: BrandDraft, Details: brand, Now: now})
		if err != nil {
			return fmt.Errorf("seed brand: %w", err)
		}
		score, ref := int32(75), "seeded"
		verified := "VERIFIED"
		if _, err := q.SetTenDLCBrandState(ctx, db.SetTenDLCBrandStateParams{ID: b.ID, Status: BrandVerified, IdentityStatus: &verified,
			BrandScore: &score, ProviderRef: &ref, SubmittedAt: &now, Now: now}); err != nil {
			return fmt.Errorf("seed brand: %w", err)
		}
		campaign, _ := json.Marshal(CampaignDetails{Name: "Seeded campaign", UseCase: "MIXED", SubUseCases: []string{"ACCOUNT_NOTIFICATION", "CUSTOMER_CARE"},
			Description:     "Seeded by Switchboard so that a new installation's first test sends to +1 numbers go.",
			SampleMessages:  []string{"Your order 1234 has shipped and arrives on Friday.", "Your verification code is 123456."},
			MessageFlow:     "Customers opt in on the project's sign-up form and can reply STOP at any time.",
			SubscriberOptIn: true, SubscriberOptOut: true, SubscriberHelp: true, HelpMessage: "Reply STOP to stop, HELP for help."})
		reg, monthly := fees("MIXED")
		c, err := q.InsertTenDLCCampaign(ctx, db.InsertTenDLCCampaignParams{ID: "cmp_seed_" + suffix, Project: project, TestMode: testMode,
			BrandID: b.ID, Status: CampaignDraft, Details: campaign, MonthlyFeeCents: &monthly, RegistrationCostCents: &reg, Now: now})
		if err != nil {
			return fmt.Errorf("seed campaign: %w", err)
		}
		limit := int32(200000)
		_, err = q.SetTenDLCCampaignState(ctx, db.SetTenDLCCampaignStateParams{ID: c.ID, Status: CampaignApproved, DailyLimit: &limit,
			ProviderRef: &ref, SubmittedAt: &now, Now: now})
		return err
	})
}
