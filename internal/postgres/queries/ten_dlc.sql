-- name: InsertTenDLCBrand :one
INSERT INTO ten_dlc_brands (id, project, test_mode, status, details, created_at, updated_at)
VALUES (@id, @project, @test_mode, @status, @details, @now, @now)
RETURNING *;

-- name: TenDLCBrand :one
SELECT * FROM ten_dlc_brands WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: TenDLCBrandForUpdate :one
SELECT * FROM ten_dlc_brands WHERE id = @id AND project = @project AND test_mode = @test_mode FOR UPDATE;

-- name: TenDLCBrands :many
-- A project's brands of a mode in creation order, from after a position.
SELECT * FROM ten_dlc_brands
WHERE project = @project AND test_mode = @test_mode AND (created_at, id) > (@after_time::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: UpdateTenDLCBrandDetails :one
UPDATE ten_dlc_brands SET details = @details, updated_at = @now WHERE id = @id RETURNING *;

-- name: SetTenDLCBrandState :one
-- What the registrar said of a brand.
UPDATE ten_dlc_brands SET status = @status, identity_status = @identity_status, brand_score = @brand_score,
    failure_reason = @failure_reason, provider_ref = COALESCE(@provider_ref, provider_ref),
    provider_data = COALESCE(@provider_data, provider_data), submitted_at = COALESCE(submitted_at, @submitted_at),
    verified_at = CASE WHEN @status IN ('verified', 'unverified') THEN COALESCE(verified_at, @now) ELSE verified_at END,
    updated_at = @now
WHERE id = @id
RETURNING *;

-- name: DeleteTenDLCBrand :exec
DELETE FROM ten_dlc_brands WHERE id = @id;

-- name: CountTenDLCBrandCampaigns :one
SELECT count(*) FROM ten_dlc_campaigns WHERE brand_id = @brand_id;

-- name: InsertTenDLCCampaign :one
INSERT INTO ten_dlc_campaigns (id, project, test_mode, brand_id, status, details, monthly_fee_cents, registration_cost_cents, created_at, updated_at)
VALUES (@id, @project, @test_mode, @brand_id, @status, @details, @monthly_fee_cents, @registration_cost_cents, @now, @now)
RETURNING *;

-- name: TenDLCCampaign :one
SELECT * FROM ten_dlc_campaigns WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: TenDLCCampaignForUpdate :one
SELECT * FROM ten_dlc_campaigns WHERE id = @id AND project = @project AND test_mode = @test_mode FOR UPDATE;

-- name: TenDLCCampaigns :many
-- A project's campaigns of a mode in creation order, from after a position; one brand's when
-- brand_id is not empty.
SELECT * FROM ten_dlc_campaigns
WHERE project = @project AND test_mode = @test_mode AND (@brand_id::text = '' OR brand_id = @brand_id)
    AND (created_at, id) > (@after_time::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: UpdateTenDLCCampaignDetails :one
UPDATE ten_dlc_campaigns SET details = @details, monthly_fee_cents = @monthly_fee_cents,
    registration_cost_cents = @registration_cost_cents, updated_at = @now
WHERE id = @id RETURNING *;

-- name: SetTenDLCCampaignState :one
-- What the registrar said of a campaign.
UPDATE ten_dlc_campaigns SET status = @status, daily_limit = @daily_limit, failure_reason = @failure_reason,
    provider_ref = COALESCE(@provider_ref, provider_ref), provider_data = COALESCE(@provider_data, provider_data),
    submitted_at = COALESCE(submitted_at, @submitted_at),
    approved_at = CASE WHEN @status = 'approved' THEN COALESCE(approved_at, @now) ELSE approved_at END,
    updated_at = @now
WHERE id = @id
RETURNING *;

-- name: DeleteTenDLCCampaign :exec
DELETE FROM ten_dlc_campaigns WHERE id = @id;

-- name: HasApprovedTenDLCCampaign :one
-- Whether a project may send SMS to +1 numbers in a mode.
SELECT EXISTS (SELECT 1 FROM ten_dlc_campaigns WHERE project = @project AND test_mode = @test_mode AND status = 'approved');

-- name: PendingTenDLC :many
-- Brands and campaigns waiting for their registrar's verdict, longest waiting first: what the
-- syncer asks about.
SELECT 'brand'::text AS kind, id, project, test_mode FROM ten_dlc_brands WHERE status = 'pending'
UNION ALL
SELECT 'campaign'::text AS kind, id, project, test_mode FROM ten_dlc_campaigns WHERE status = 'pending'
ORDER BY id
LIMIT @max_rows;

-- name: InsertTenDLCAssignment :one
INSERT INTO ten_dlc_assignments (id, campaign_id, project, test_mode, phone_number_id, phone_number, status, failure_reason,
    provider_ref, created_at, updated_at, assigned_at)
VALUES (@id, @campaign_id, @project, @test_mode, @phone_number_id, @phone_number, @status, @failure_reason,
    @provider_ref, @now, @now, @assigned_at)
RETURNING *;

-- name: TenDLCAssignments :many
SELECT * FROM ten_dlc_assignments
WHERE campaign_id = @campaign_id AND (created_at, id) > (@after_time::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: TenDLCAssignment :one
SELECT * FROM ten_dlc_assignments WHERE id = @id AND campaign_id = @campaign_id;

-- name: TenDLCAssignmentOfNumber :one
-- The campaign a number sends under, if any.
SELECT * FROM ten_dlc_assignments
WHERE project = @project AND test_mode = @test_mode AND phone_number = @phone_number AND status <> 'failed';

-- name: DeleteTenDLCAssignment :exec
DELETE FROM ten_dlc_assignments WHERE id = @id;
