package tendlc

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestSandboxDecidesAfterItsDelay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	sbx := Sandbox{Delay: 2 * time.Second, Now: func() time.Time { return now }}
	at := func(d time.Duration) *time.Time { x := now.Add(-d); return &x }
	ctx := context.Background()
	for _, c := range []struct {
		name string
		b    Brand
		want string
	}{
		{"not yet", Brand{BrandDetails: BrandDetails{DisplayName: "Acme"}, SubmittedAt: at(time.Second)}, BrandPending},
		{"not submitted", Brand{BrandDetails: BrandDetails{DisplayName: "Acme"}}, BrandPending},
		{"verified at the delay", Brand{BrandDetails: BrandDetails{DisplayName: "Acme"}, SubmittedAt: at(2 * time.Second)}, BrandVerified},
		{"rejected", Brand{BrandDetails: BrandDetails{DisplayName: "Please Reject"}, SubmittedAt: at(time.Minute)}, BrandRejected},
	} {
		v, err := sbx.BrandVerdict(ctx, c.b)
		if err != nil || v.Status != c.want {
			t.Errorf("%s: %+v %v, want %s", c.name, v, err, c.want)
		}
	}
	v, _ := sbx.CampaignVerdict(ctx, Campaign{CampaignDetails: CampaignDetails{Name: "Orders", UseCase: "LOW_VOLUME"}, SubmittedAt: at(3 * time.Second)})
	if v.Status != CampaignApproved || v.DailyLimit == nil || *v.DailyLimit != 2000 {
		t.Errorf("low-volume campaign = %+v", v)
	}
	v, _ = sbx.CampaignVerdict(ctx, Campaign{CampaignDetails: CampaignDetails{Name: "reject me"}, SubmittedAt: at(3 * time.Second)})
	if v.Status != CampaignRejected || v.FailureReason == "" {
		t.Errorf("rejected campaign = %+v", v)
	}
}

func TestBrandRulesByEntityType(t *testing.T) {
	t.Parallel()
	paths := func(errs []apperror.FieldError) []string {
		out := []string{}
		for _, e := range errs {
			out = append(out, e.Path)
		}
		return out
	}
	for _, c := range []struct {
		d    BrandDetails
		want []string
	}{
		{BrandDetails{EntityType: "SOLE_PROPRIETOR", FirstName: "Ada", LastName: "L"}, []string{}},
		{BrandDetails{EntityType: "SOLE_PROPRIETOR"}, []string{"firstName", "lastName"}},
		{BrandDetails{EntityType: "PRIVATE_PROFIT", FirstName: "Ada", LastName: "L"}, []string{"companyName", "ein"}},
		{BrandDetails{EntityType: "PUBLIC_PROFIT", FirstName: "Ada", LastName: "L", CompanyName: "Acme", EIN: "12-3456789"}, []string{"stockExchange", "stockSymbol"}},
	} {
		if got := paths(c.d.complete()); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.d.EntityType, got, c.want)
		}
	}
	var d BrandDetails
	long := string(make([]byte, 256))
	errs := BrandInput{DisplayName: &long}.apply(&d, false)
	if got := paths(errs); !slices.Equal(got, []string{"displayName"}) || d.DisplayName != "" {
		t.Errorf("an over-long update = %v, applied %q", got, d.DisplayName)
	}
}

func TestApprovedFollowsTheCampaigns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := NewService(pool, nil, nil, nil)
	if ok, err := s.Approved(ctx, "acme", true); ok || err != nil {
		t.Fatalf("before seeding: %v %v", ok, err)
	}
	for range 2 { // seeding twice leaves one campaign
		if err := SeedApproved(ctx, pool, "acme", true); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := s.Approved(ctx, "acme", true); !ok {
		t.Error("not approved after seeding")
	}
	if ok, _ := s.Approved(ctx, "acme", false); ok {
		t.Error("a test-mode campaign approves live sends")
	}
	cs, err := s.Campaigns(ctx, "acme", true, "", Page{Limit: 10})
	if err != nil || len(cs) != 1 || cs[0].Status != CampaignApproved {
		t.Fatalf("campaigns = %+v %v", cs, err)
	}
	// Deleting it ends the approval at once on this replica, though it was cached.
	if err := s.DeleteCampaign(ctx, "acme", true, cs[0].ID); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Approved(ctx, "acme", true); ok {
		t.Error("approved after its campaign was deleted")
	}
}

// BenchmarkApproved is the send path's question for each SMS to a +1 number: answered from the
// cache within a second of the last read (hit), else by an indexed query (miss, as for a
// project without a campaign, which is never cached).
func BenchmarkApproved(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	if err := SeedApproved(ctx, pool, "acme", true); err != nil {
		b.Fatal(err)
	}
	s := NewService(pool, nil, nil, nil)
	b.Run("hit", func(b *testing.B) {
		for b.Loop() {
			if ok, err := s.Approved(ctx, "acme", true); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for b.Loop() {
			if ok, err := s.Approved(ctx, "other", true); ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}
