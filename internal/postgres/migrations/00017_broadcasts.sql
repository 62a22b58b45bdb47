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
    -- One counter per recipient status: pending (not handed to the send path yet), queued
    -- (accepted, waiting for its transport), sending (the provider took it; no receipt yet),
    -- delivered, failed, skipped (cancelled before it went).
    pending_count         integer     NOT NULL DEFAULT 0,
    queued_count          integer     NOT NULL DEFAULT 0,
    sending_count         integer     NOT NULL DEFAULT 0,
    delivered_count       integer     NOT NULL DEFAULT 0,
    failed_count          integer     NOT NULL DEFAULT 0,
    skipped_count         integer     NOT NULL DEFAULT 0,
    estimated_cost_micros bigint,
    reserved_micros       bigint,
    actual_cost_micros    bigint,
    review_attempts       integer     NOT NULL DEFAULT 0,
    review_result         jsonb,
    -- A paused broadcast goes on by itself at this time (a daily ceiling's reset) or, when it
    -- is null, once the balance pays for its next recipients; pause_reason says which.
    paused_until          timestamptz,
    pause_reason          text
);

CREATE INDEX broadcasts_project ON broadcasts (project, test_mode, created_at, id);
-- The fan-out's scan: broadcasts to start or to go on with.
CREATE INDEX broadcasts_active ON broadcasts (status, updated_at) WHERE status IN ('approved', 'scheduled', 'sending', 'paused');
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
-- The fan-out takes a broadcast's pending recipients in the order they were added.
CREATE INDEX broadcast_contacts_pending ON broadcast_contacts (broadcast_id, created_at, id) WHERE status = 'pending';

-- Changes to broadcasts' counters not yet folded into them. Every move of a broadcast message
-- adds one in the move's own transaction, without touching the broadcast's row (which 100,000
-- messages moving at once would queue on); the fan-out folds them into the broadcast often, and
-- reads add what is not folded yet, so the counters are exact at every moment.
CREATE TABLE broadcast_deltas (
    id           bigserial PRIMARY KEY,
    broadcast_id text      NOT NULL,
    pending      integer   NOT NULL DEFAULT 0,
    queued       integer   NOT NULL DEFAULT 0,
    sending      integer   NOT NULL DEFAULT 0,
    delivered    integer   NOT NULL DEFAULT 0,
    failed       integer   NOT NULL DEFAULT 0,
    skipped      integer   NOT NULL DEFAULT 0,
    cost_micros  bigint    NOT NULL DEFAULT 0,
    released     bigint    NOT NULL DEFAULT 0
);
CREATE INDEX broadcast_deltas_broadcast ON broadcast_deltas (broadcast_id);

-- Live broadcast (marketing) emails a project sent in a month: email is billed in blocks of
-- 1,000 of them, charged as the count crosses each boundary (docs/limits.md).
CREATE TABLE marketing_emails (
    project text    NOT NULL,
    month   date    NOT NULL,
    sent    bigint  NOT NULL,
    PRIMARY KEY (project, month)
);

-- The pace of sends from one address through one Provider (its messagesPerSecond): the time
-- the next broadcast message from it may be dispatched. Broadcasts sharing an address share it.
CREATE TABLE broadcast_paces (
    key     text        PRIMARY KEY,
    next_at timestamptz NOT NULL
);

-- A broadcast's message names its recipient, so that its status moves the recipient's.
ALTER TABLE messages ADD COLUMN broadcast_contact_id text;

-- A broadcast reserves its estimate when it starts sending and releases it as its messages are
-- charged (and what is left when it ends).
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check CHECK (kind IN ('credit', 'charge', 'refund', 'reserve', 'release'));

-- +goose Down
DROP TABLE marketing_emails;
DROP TABLE broadcast_deltas;
DROP TABLE broadcast_paces;
DELETE FROM ledger_entries WHERE kind IN ('reserve', 'release');
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check CHECK (kind IN ('credit', 'charge', 'refund'));
ALTER TABLE messages DROP COLUMN broadcast_contact_id;
DROP TABLE broadcast_contacts;
DROP TABLE broadcasts;
