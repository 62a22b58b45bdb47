-- +goose Up
-- URL verification (docs/urls.md): every URL in a live SMS or email body is verified before the
-- message goes. A project's URLs, per mode (test keys get the sandbox's verdicts), and the
-- installation's cache of threat lookups, so that a broadcast's one link is looked up once.
CREATE TABLE verified_urls (
    id                text        PRIMARY KEY,
    project           text        NOT NULL,
    test_mode         boolean     NOT NULL,
    url               text        NOT NULL,
    host              text        NOT NULL,
    domain            text        NOT NULL,
    status            text        NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'escalated', 'malicious')),
    approval_type     text        CHECK (approval_type IN ('manual', 'auto_web_risk')),
    reason            text,
    escalation_reason text,
    decided_by        text,
    checked_at        timestamptz,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    UNIQUE (project, test_mode, url)
);
CREATE INDEX verified_urls_list ON verified_urls (project, test_mode, created_at DESC, id DESC);
CREATE INDEX verified_urls_pending ON verified_urls (updated_at) WHERE status = 'pending';
CREATE INDEX verified_urls_escalated ON verified_urls (updated_at) WHERE status = 'escalated';

CREATE TABLE url_verdicts (
    url        text        PRIMARY KEY,
    threats    text[]      NOT NULL,
    checked_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE url_verdicts;
DROP TABLE verified_urls;
