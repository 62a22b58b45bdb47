-- +goose Up
-- Money, in micro-dollars (1e-6 USD). A project's balance is one row, moved in the transaction
-- that charges or credits it (conditionally: a charge that would pass the credit limit moves
-- nothing), and every movement is a ledger entry, so the balance is always the sum of its
-- entries.
CREATE TABLE balances (
    project        text        PRIMARY KEY,
    balance_micros bigint      NOT NULL,
    spent_micros   bigint      NOT NULL DEFAULT 0 CHECK (spent_micros >= 0),
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);

CREATE TABLE ledger_entries (
    id            bigserial   PRIMARY KEY,
    project       text        NOT NULL,
    -- credit: money added (the operator, the Free plan's starting credit); charge: a message
    -- paid for; refund: a charge returned (a message the risk review refused).
    kind          text        NOT NULL CHECK (kind IN ('credit', 'charge', 'refund')),
    amount_micros bigint      NOT NULL CHECK (amount_micros >= 0),
    message_id    text,
    note          text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL
);

CREATE INDEX ledger_entries_project ON ledger_entries (project, created_at DESC);
-- A message is charged once and refunded once.
CREATE UNIQUE INDEX ledger_entries_message ON ledger_entries (message_id, kind) WHERE message_id IS NOT NULL;

ALTER TABLE messages
    ADD COLUMN cost_micros          bigint,
    ADD COLUMN cost_provider_micros bigint,
    -- What the send took from the balance (v2 charged); 0 for test traffic and refunded sends.
    ADD COLUMN charged_micros       bigint;

-- +goose Down
ALTER TABLE messages DROP COLUMN cost_micros, DROP COLUMN cost_provider_micros, DROP COLUMN charged_micros;
DROP TABLE ledger_entries;
DROP TABLE balances;
