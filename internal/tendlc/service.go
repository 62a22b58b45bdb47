// Package tendlc registers a project's A2P 10DLC brands and campaigns and the numbers that send
// under them (docs/10dlc.md), and answers the send path's question: may this project send SMS
// to +1 numbers?
package tendlc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// LiveRegistrars finds the registrar of a project's live registrations: the registration API of
// the Provider that carries its SMS. nil when none can register.
type LiveRegistrars interface {
	Registrar(ctx context.Context, project string) (Registrar, error)
}

// Service keeps the registrations. Test keys register with the sandbox, live keys through the
// project's SMS Provider; each mode has its own records, so a developer registers in the sandbox
// without touching the live ones.
type Service struct {
	pool    *pgxpool.Pool
	reader  client.Reader
	live    LiveRegistrars
	sandbox Registrar
	now     func() time.Time

	// approved caches projects seen with an approved campaign (approvedTTL): the send path asks
	// on every SMS to a +1 number.
	mu       sync.Mutex
	approved map[modeKey]time.Time
}

// approvedTTL is how long a replica trusts that a project has an approved campaign: a deleted
// campaign stops +1 SMS within it.
const approvedTTL = time.Second

type modeKey struct {
	project  string
	testMode bool
}

// NewService returns the registrations over pool; reader reads Projects and Senders.
func NewService(pool *pgxpool.Pool, reader client.Reader, live LiveRegistrars, sandbox Registrar) *Service {
	if sandbox == nil {
		sandbox = Sandbox{Delay: SandboxDelay}
	}
	return &Service{pool: pool, reader: reader, live: live, sandbox: sandbox, now: time.Now, approved: map[modeKey]time.Time{}}
}

// SetClock replaces the clock (tests).
func (s *Service) SetClock(now func() time.Time) { s.now = now }

func (s *Service) registrar(ctx context.Context, project string, testMode bool) (Registrar, error) {
	if testMode {
		return s.sandbox, nil
	}
	var r Registrar
	if s.live != nil {
		var err error
		if r, err = s.live.Registrar(ctx, project); err != nil {
			return nil, err
		}
	}
	if r == nil {
		return nil, apperror.New(apperror.Invalid, "invalid_request",
			"No twilio Provider carries this project's SMS: live 10DLC registrations go through a twilio Provider's registration API (docs/10dlc.md).")
	}
	return r, nil
}

// Page is where a list starts: after the item of this creation time and id.
type Page struct {
	AfterTime time.Time
	AfterID   string
	Limit     int
}

// --- brands ---

// CreateBrand stores a draft brand.
func (s *Service) CreateBrand(ctx context.Context, project string, testMode bool, in BrandInput) (Brand, error) {
	var d BrandDetails
	if errs := in.apply(&d, true); len(errs) > 0 {
		return Brand{}, apperror.InvalidFields(errs...)
	}
	id, err := randid.Prefixed("brand_", 24)
	if err != nil {
		return Brand{}, err
	}
	details, _ := json.Marshal(d)
	row, err := db.Planned(s.pool).InsertTenDLCBrand(ctx, db.InsertTenDLCBrandParams{ID: id, Project: project, TestMode: testMode,
		Status: BrandDraft, Details: details, Now: s.now().UTC()})
	if err != nil {
		return Brand{}, fmt.Errorf("store brand: %w", err)
	}
	return brandOf(row), nil
}

// Brands lists a project's brands of a mode.
func (s *Service) Brands(ctx context.Context, project string, testMode bool, p Page) ([]Brand, error) {
	rows, err := db.Planned(s.pool).TenDLCBrands(ctx, db.TenDLCBrandsParams{Project: project, TestMode: testMode,
		AfterTime: p.AfterTime, AfterID: p.AfterID, MaxRows: int32(p.Limit)})
	if err != nil {
		return nil, fmt.Errorf("list brands: %w", err)
	}
	out := make([]Brand, len(rows))
	for i, r := range rows {
		out[i] = brandOf(r)
	}
	return out, nil
}

// Brand returns one brand.
func (s *Service) Brand(ctx context.Context, project string, testMode bool, id string) (Brand, error) {
	row, err := db.Planned(s.pool).TenDLCBrand(ctx, db.TenDLCBrandParams{ID: id, Project: project, TestMode: testMode})
	if err != nil {
		return Brand{}, notFound(err, "brand", id)
	}
	return brandOf(row), nil
}

// UpdateBrand changes a draft brand.
func (s *Service) UpdateBrand(ctx context.Context, project string, testMode bool, id string, in BrandInput) (Brand, error) {
	var out Brand
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.TenDLCBrandForUpdate(ctx, db.TenDLCBrandForUpdateParams{ID: id, Project: project, TestMode: testMode})
		if err != nil {
			return notFound(err, "brand", id)
		}
		if row.Status != BrandDraft {
			return wrongState("brand", id, row.Status, "only a draft brand can be changed; register a new one")
		}
		b := brandOf(row)
		d := b.BrandDetails
		if errs := in.apply(&d, false); len(errs) > 0 {
			return apperror.InvalidFields(errs...)
		}
		details, _ := json.Marshal(d)
		row, err = q.UpdateTenDLCBrandDetails(ctx, db.UpdateTenDLCBrandDetailsParams{ID: id, Details: details, Now: s.now().UTC()})
		out = brandOf(row)
		return err
	})
	return out, err
}

// DeleteBrand deletes a brand that has no campaigns left.
func (s *Service) DeleteBrand(ctx context.Context, project string, testMode bool, id string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if _, err := q.TenDLCBrandForUpdate(ctx, db.TenDLCBrandForUpdateParams{ID: id, Project: project, TestMode: testMode}); err != nil {
			return notFound(err, "brand", id)
		}
		n, err := q.CountTenDLCBrandCampaigns(ctx, id)
		if err != nil {
			return err
		}
		if n > 0 {
			return apperror.New(apperror.Invalid, "invalid_request",
				fmt.Sprintf("Brand %s has %d campaign(s): delete them first.", id, n))
		}
		return q.DeleteTenDLCBrand(ctx, id)
	})
}

// businessVerified says whether the project's business verification is approved: the registry
// registers only verified businesses' brands.
func (s *Service) businessVerified(ctx context.Context, project string) (bool, error) {
	p, err := kubewrite.ProjectOf(ctx, s.reader, project)
	if err != nil {
		return false, err
	}
	if p == nil {
		return false, nil
	}
	v := p.Spec.Verification
	return v == v1alpha1.VerificationBusinessApproved || v == v1alpha1.VerificationTenDLCBrand, nil
}

// kybRequired is the answer to registering a brand before business verification.
func kybRequired() error {
	return apperror.New(apperror.Forbidden, "kyb_required",
		"Registering a 10DLC brand needs the project's business verification: an operator approves it by setting spec.verification to business_approved on the Project.")
}

// SubmitBrand registers a draft brand; it is pending until the registrar decides.
func (s *Service) SubmitBrand(ctx context.Context, project string, testMode bool, id string) (Brand, error) {
	ok, err := s.businessVerified(ctx, project)
	if err != nil {
		return Brand{}, err
	}
	reg, err := s.registrar(ctx, project, testMode)
	if err != nil {
		return Brand{}, err
	}
	var out Brand
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.TenDLCBrandForUpdate(ctx, db.TenDLCBrandForUpdateParams{ID: id, Project: project, TestMode: testMode})
		if err != nil {
			return notFound(err, "brand", id)
		}
		if row.Status != BrandDraft {
			return wrongState("brand", id, row.Status, "only a draft brand is submitted")
		}
		if !ok {
			return kybRequired()
		}
		b := brandOf(row)
		if errs := b.complete(); len(errs) > 0 {
			return apperror.InvalidFields(errs...)
		}
		now := s.now().UTC()
		b.SubmittedAt = &now
		sub, err := reg.SubmitBrand(ctx, b)
		if err != nil {
			return err
		}
		row, err = q.SetTenDLCBrandState(ctx, db.SetTenDLCBrandStateParams{ID: id, Status: BrandPending, ProviderRef: &sub.Ref,
			ProviderData: sub.Data, SubmittedAt: &now, Now: now})
		out = brandOf(row)
		return err
	})
	return out, err
}

// SyncBrand asks the registrar where a pending brand stands and records its answer.
func (s *Service) SyncBrand(ctx context.Context, project string, testMode bool, id string) (Brand, error) {
	b, err := s.Brand(ctx, project, testMode, id)
	if err != nil || b.Status != BrandPending {
		return b, err
	}
	reg, err := s.registrar(ctx, project, testMode)
	if err != nil {
		return Brand{}, err
	}
	v, err := reg.BrandVerdict(ctx, b)
	if err != nil {
		return Brand{}, err
	}
	if v.Status == BrandPending {
		return b, nil
	}
	row, err := db.Planned(s.pool).SetTenDLCBrandState(ctx, db.SetTenDLCBrandStateParams{ID: id, Status: v.Status,
		IdentityStatus: strPtr(v.IdentityStatus), BrandScore: v.Score, FailureReason: strPtr(v.FailureReason), Now: s.now().UTC()})
	if err != nil {
		return Brand{}, fmt.Errorf("record brand verdict: %w", err)
	}
	return brandOf(row), nil
}

// --- campaigns ---

// CreateCampaign stores a draft campaign of one of the project's brands.
func (s *Service) CreateCampaign(ctx context.Context, project string, testMode bool, in CampaignInput) (Campaign, error) {
	var d CampaignDetails
	errs := in.apply(&d, true)
	if in.BrandID == nil || *in.BrandID == "" {
		errs = append([]apperror.FieldError{{Path: "brandId", Message: "is required"}}, errs...)
	} else if _, err := s.Brand(ctx, project, testMode, *in.BrandID); err != nil {
		if apperror.As(err) == nil {
			return Campaign{}, err
		}
		errs = append([]apperror.FieldError{{Path: "brandId", Message: "is not a brand of this project" + modeNote(testMode)}}, errs...)
	}
	if len(errs) > 0 {
		return Campaign{}, apperror.InvalidFields(errs...)
	}
	id, err := randid.Prefixed("cmp_", 24)
	if err != nil {
		return Campaign{}, err
	}
	reg, monthly := fees(d.UseCase)
	details, _ := json.Marshal(d)
	row, err := db.Planned(s.pool).InsertTenDLCCampaign(ctx, db.InsertTenDLCCampaignParams{ID: id, Project: project, TestMode: testMode,
		BrandID: *in.BrandID, Status: CampaignDraft, Details: details, MonthlyFeeCents: &monthly, RegistrationCostCents: &reg, Now: s.now().UTC()})
	if err != nil {
		return Campaign{}, fmt.Errorf("store campaign: %w", err)
	}
	return campaignOf(row), nil
}

func modeNote(testMode bool) string {
	if testMode {
		return " (a test key sees the brands registered with test keys)"
	}
	return " (a live key sees the brands registered with live keys)"
}

// Campaigns lists a project's campaigns of a mode, one brand's when brandID is not empty.
func (s *Service) Campaigns(ctx context.Context, project string, testMode bool, brandID string, p Page) ([]Campaign, error) {
	rows, err := db.Planned(s.pool).TenDLCCampaigns(ctx, db.TenDLCCampaignsParams{Project: project, TestMode: testMode, BrandID: brandID,
		AfterTime: p.AfterTime, AfterID: p.AfterID, MaxRows: int32(p.Limit)})
	if err != nil {
		return nil, fmt.Errorf("list campaigns: %w", err)
	}
	out := make([]Campaign, len(rows))
	for i, r := range rows {
		out[i] = campaignOf(r)
	}
	return out, nil
}

// Campaign returns one campaign.
func (s *Service) Campaign(ctx context.Context, project string, testMode bool, id string) (Campaign, error) {
	row, err := db.Planned(s.pool).TenDLCCampaign(ctx, db.TenDLCCampaignParams{ID: id, Project: project, TestMode: testMode})
	if err != nil {
		return Campaign{}, notFound(err, "campaign", id)
	}
	return campaignOf(row), nil
}

// UpdateCampaign changes a draft campaign.
func (s *Service) UpdateCampaign(ctx context.Context, project string, testMode bool, id string, in CampaignInput) (Campaign, error) {
	var out Campaign
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.TenDLCCampaignForUpdate(ctx, db.TenDLCCampaignForUpdateParams{ID: id, Project: project, TestMode: testMode})
		if err != nil {
			return notFound(err, "campaign", id)
		}
		if row.Status != CampaignDraft {
			return wrongState("campaign", id, row.Status, "only a draft campaign can be changed; register a new one")
		}
		if in.BrandID != nil && *in.BrandID != row.BrandID {
			return apperror.InvalidFields(apperror.FieldError{Path: "brandId", Message: "cannot be changed: create the campaign under the other brand"})
		}
		c := campaignOf(row)
		d := c.CampaignDetails
		if errs := in.apply(&d, false); len(errs) > 0 {
			return apperror.InvalidFields(errs...)
		}
		reg, monthly := fees(d.UseCase)
		details, _ := json.Marshal(d)
		row, err = q.UpdateTenDLCCampaignDetails(ctx, db.UpdateTenDLCCampaignDetailsParams{ID: id, Details: details,
			MonthlyFeeCents: &monthly, RegistrationCostCents: &reg, Now: s.now().UTC()})
		out = campaignOf(row)
		return err
	})
	return out, err
}

// DeleteCampaign deletes a campaign, deregistering it at the registrar when it was submitted; its
// numbers no longer send under it.
func (s *Service) DeleteCampaign(ctx context.Context, project string, testMode bool, id string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.TenDLCCampaignForUpdate(ctx, db.TenDLCCampaignForUpdateParams{ID: id, Project: project, TestMode: testMode})
		if err != nil {
			return notFound(err, "campaign", id)
		}
		if row.ProviderRef != nil {
			reg, err := s.registrar(ctx, project, testMode)
			if err != nil {
				return err
			}
			if err := reg.DeleteCampaign(ctx, campaignOf(row)); err != nil {
				return err
			}
		}
		return q.DeleteTenDLCCampaign(ctx, id)
	})
	if err == nil {
		s.forget(project, testMode)
	}
	return err
}

// SubmitCampaign submits a draft campaign of a registered brand for the carriers' review.
func (s *Service) SubmitCampaign(ctx context.Context, project string, testMode bool, id string) (Campaign, error) {
	reg, err := s.registrar(ctx, project, testMode)
	if err != nil {
		return Campaign{}, err
	}
	var out Campaign
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.TenDLCCampaignForUpdate(ctx, db.TenDLCCampaignForUpdateParams{ID: id, Project: project, TestMode: testMode})
		if err != nil {
			return notFound(err, "campaign", id)
		}
		if row.Status != CampaignDraft {
			return wrongState("campaign", id, row.Status, "only a draft campaign is submitted")
		}
		brow, err := q.TenDLCBrand(ctx, db.TenDLCBrandParams{ID: row.BrandID, Project: project, TestMode: testMode})
		if err != nil {
			return fmt.Errorf("read brand %s: %w", row.BrandID, err)
		}
		if !registered(brow.Status) {
			return apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf(
				"Brand %s is %s: a campaign is submitted once its brand is verified (or registered unverified).", row.BrandID, brow.Status))
		}
		c := campaignOf(row)
		if errs := c.complete(); len(errs) > 0 {
			return apperror.InvalidFields(errs...)
		}
		now := s.now().UTC()
		c.SubmittedAt = &now
		sub, err := reg.SubmitCampaign(ctx, brandOf(brow), c)
		if err != nil {
			return err
		}
		row, err = q.SetTenDLCCampaignState(ctx, db.SetTenDLCCampaignStateParams{ID: id, Status: CampaignPending, ProviderRef: &sub.Ref,
			ProviderData: sub.Data, SubmittedAt: &now, Now: now})
		out = campaignOf(row)
		return err
	})
	return out, err
}

// SyncCampaign asks the registrar where a pending campaign's review stands and records it.
func (s *Service) SyncCampaign(ctx context.Context, project string, testMode bool, id string) (Campaign, error) {
	c, err := s.Campaign(ctx, project, testMode, id)
	if err != nil || c.Status != CampaignPending {
		return c, err
	}
	reg, err := s.registrar(ctx, project, testMode)
	if err != nil {
		return Campaign{}, err
	}
	v, err := reg.CampaignVerdict(ctx, c)
	if err != nil {
		return Campaign{}, err
	}
	if v.Status == CampaignPending {
		return c, nil
	}
	row, err := db.Planned(s.pool).SetTenDLCCampaignState(ctx, db.SetTenDLCCampaignStateParams{ID: id, Status: v.Status,
		DailyLimit: v.DailyLimit, FailureReason: strPtr(v.FailureReason), Now: s.now().UTC()})
	if err != nil {
		return Campaign{}, fmt.Errorf("record campaign verdict: %w", err)
	}
	return campaignOf(row), nil
}

// --- the send path ---

// Approved says whether the project has an approved campaign in a mode: SMS to +1 numbers
// needs one.
func (s *Service) Approved(ctx context.Context, project string, testMode bool) (bool, error) {
	k := modeKey{project, testMode}
	now := s.now()
	s.mu.Lock()
	seen, ok := s.approved[k]
	s.mu.Unlock()
	if ok && now.Sub(seen) < approvedTTL {
		return true, nil
	}
	yes, err := db.Planned(s.pool).HasApprovedTenDLCCampaign(ctx, db.HasApprovedTenDLCCampaignParams{Project: project, TestMode: testMode})
	if err != nil {
		return false, fmt.Errorf("read 10DLC campaigns of %s: %w", project, err)
	}
	s.mu.Lock()
	if yes {
		s.approved[k] = now
	} else {
		delete(s.approved, k)
	}
	s.mu.Unlock()
	return yes, nil
}

func (s *Service) forget(project string, testMode bool) {
	s.mu.Lock()
	delete(s.approved, modeKey{project, testMode})
	s.mu.Unlock()
}

// --- helpers ---

func brandOf(r db.TenDlcBrand) Brand {
	b := Brand{ID: r.ID, Status: r.Status, IdentityStatus: r.IdentityStatus, BrandScore: r.BrandScore, FailureReason: r.FailureReason,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), SubmittedAt: utc(r.SubmittedAt), VerifiedAt: utc(r.VerifiedAt),
		Project: r.Project, TestMode: r.TestMode, ProviderData: r.ProviderData}
	_ = json.Unmarshal(r.Details, &b.BrandDetails)
	if r.ProviderRef != nil {
		b.ProviderRef = *r.ProviderRef
	}
	return b
}

func campaignOf(r db.TenDlcCampaign) Campaign {
	c := Campaign{ID: r.ID, BrandID: r.BrandID, Status: r.Status, DailyLimit: r.DailyLimit, FailureReason: r.FailureReason,
		MonthlyFeeCents: r.MonthlyFeeCents, RegistrationCostCents: r.RegistrationCostCents, CreatedAt: r.CreatedAt.UTC(),
		UpdatedAt: r.UpdatedAt.UTC(), SubmittedAt: utc(r.SubmittedAt), ApprovedAt: utc(r.ApprovedAt),
		Project: r.Project, TestMode: r.TestMode, ProviderData: r.ProviderData}
	_ = json.Unmarshal(r.Details, &c.CampaignDetails)
	if c.SampleMessages == nil {
		c.SampleMessages = []string{}
	}
	if r.ProviderRef != nil {
		c.ProviderRef = *r.ProviderRef
	}
	return c
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func notFound(err error, kind, id string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return apperror.NotFoundf("No %s %s in this project.", kind, id)
	}
	return fmt.Errorf("read %s %s: %w", kind, id, err)
}

func wrongState(kind, id, status, rule string) error {
	return apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("%s %s is %s: %s.", upperFirst(kind), id, status, rule))
}

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
