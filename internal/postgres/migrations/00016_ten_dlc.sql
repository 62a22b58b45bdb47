-- +goose Up
-- 10DLC registration (docs/10dlc.md): a project's brands, their campaigns, and the phone numbers
-- assigned to a campaign, per mode (test keys register with the sandbox). What the client sent
-- is kept as it came (details); the columns are what Switchboard and the registrar decide.
CREATE TABLE ten_dlc_brands (
    id              text        PRIMARY KEY,
    project         text        NOT NULL,
    test_mode       boolean     NOT NULL,
    status          text        NOT NULL CHECK (status IN ('draft', 'pending', 'verified', 'unverified', 'rejected', 'failed')),
    details         jsonb       NOT NULL,
    identity_status text,
    brand_score     integer,
    failure_reason  text,
    -- The registrar's reference for the brand (Twilio: the BrandRegistration's BN sid) and
    -- what else it made on the way (Twilio: the Trust Hub bundles).
    provider_ref    text,
    provider_data   jsonb,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    submitted_at    timestamptz,
    verified_at     timestamptz
);

CREATE INDEX ten_dlc_brands_project ON ten_dlc_brands (project, test_mode, created_at, id);

CREATE TABLE ten_dlc_campaigns (
    id                      text        PRIMARY KEY,
    project                 text        NOT NULL,
    test_mode               boolean     NOT NULL,
    brand_id                text        NOT NULL REFERENCES ten_dlc_brands (id),
    status                  text        NOT NULL CHECK (status IN ('draft', 'pending', 'approved', 'rejected')),
    details                 jsonb       NOT NULL,
    daily_limit             integer,
    failure_reason          text,
    monthly_fee_cents       integer,
    registration_cost_cents integer,
    provider_ref            text,
    provider_data           jsonb,
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL,
    submitted_at            timestamptz,
    approved_at             timestamptz
);

CREATE INDEX ten_dlc_campaigns_project ON ten_dlc_campaigns (project, test_mode, created_at, id);
-- The send path asks whether a project has an approved campaign.
CREATE INDEX ten_dlc_campaigns_approved ON ten_dlc_campaigns (project, test_mode) WHERE status = 'approved';

CREATE TABLE ten_dlc_assignments (
    id              text        PRIMARY KEY,
    campaign_id     text        NOT NULL REFERENCES ten_dlc_campaigns (id) ON DELETE CASCADE,
    project         text        NOT NULL,
    test_mode       boolean     NOT NULL,
    phone_number_id text        NOT NULL,
    phone_number    text        NOT NULL,
    status          text        NOT NULL CHECK (status IN ('pending', 'active', 'failed')),
    failure_reason  text,
    provider_ref    text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    assigned_at     timestamptz
);

-- A number sends under one campaign at a time.
CREATE UNIQUE INDEX ten_dlc_assignments_number ON ten_dlc_assignments (project, test_mode, phone_number) WHERE status <> 'failed';
CREATE INDEX ten_dlc_assignments_campaign ON ten_dlc_assignments (campaign_id, created_at, id);

-- +goose Down
DROP TABLE ten_dlc_assignments;
DROP TABLE ten_dlc_campaigns;
DROP TABLE ten_dlc_brands;
