-- +goose Up
-- Broadcasts (v2: campaigns) and their recipients (docs/broadcasts.md). The counters on a
-- broadcast are changed in the same transactions as its recipients' statuses, so they always
-- add up to total_contacts.
CREATE TABLE broadcasts (
    id                    text        PRIMARY KEY,
    project               text        NOT NULL,
    test_mode             boolean     NOT NULL,
    name                  text        NOT NULL,
    channel               text        NOT NULL,
    message_type          text        NOT NULL,
    text                  text,
    content               jsonb,
    email_subject         text,
    email_html_body       text,
    sender_id             text,
    metadata              jsonb,
    status                text        NOT NULL CHECK (status IN ('draft', 'pending_review', 'approved', 'rejected', 'escalated',
                              'rejected_final', 'scheduled', 'sending', 'paused', 'completed', 'cancelled', 'failed')),
    idempotency_key       text,
    scheduled_at          timestamptz,
    started_at            timestamptz,
    completed_at          timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    total_contacts        integer     NOT NULL DEFAULT 0,
    pending_count         integer     NOT NULL DEFAULT 0,
    sending_count         integer     NOT NULL DEFAULT 0,
    delivered_count       integer     NOT NULL DEFAULT 0,
    failed_count          integer     NOT NULL DEFAULT 0,
    skipped_count         integer     NOT NULL DEFAULT 0,
    estimated_cost_micros bigint,
    reserved_micros       bigint,
    actual_cost_micros    bigint,
    review_attempts       integer     NOT NULL DEFAULT 0,
    review_result         jsonb
);

CREATE INDEX broadcasts_project ON broadcasts (project, test_mode, created_at, id);
CREATE UNIQUE INDEX broadcasts_idempotency ON broadcasts (project, test_mode, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE broadcast_contacts (
    id                        text        PRIMARY KEY,
    broadcast_id              text        NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
    recipient                 text        NOT NULL,
    recipient_type            text        NOT NULL CHECK (recipient_type IN ('phone', 'email', 'chat')),
    status                    text        NOT NULL CHECK (status IN ('pending', 'queued', 'sending', 'delivered', 'failed', 'skipped')),
    template_variables        jsonb,
    template_header_variables jsonb,
    template_button_variables jsonb,
    message_id                text,
    cost_micros               bigint,
    error_code                text,
    error_message             text,
    processed_at              timestamptz,
    created_at                timestamptz NOT NULL
);

-- A recipient is in a broadcast once, whichever request added it.
CREATE UNIQUE INDEX broadcast_contacts_recipient ON broadcast_contacts (broadcast_id, recipient);
CREATE INDEX broadcast_contacts_page ON broadcast_contacts (broadcast_id, created_at, id);

-- +goose Down
DROP TABLE broadcast_contacts;
DROP TABLE broadcasts;
