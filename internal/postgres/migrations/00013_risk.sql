-- +goose Up
-- Risk review of sends. A held message stays queued with risk_hold set until an operator
-- decides (or its review window closes); one approved is marked risk_reviewed, so its dispatch
-- does not review it again.
ALTER TABLE messages
    ADD COLUMN risk_hold     boolean NOT NULL DEFAULT false,
    ADD COLUMN risk_reviewed boolean NOT NULL DEFAULT false;

CREATE TABLE risk_holds (
    message_id text        PRIMARY KEY,
    project    text        NOT NULL,
    test_mode  boolean     NOT NULL,
    rule       text        NOT NULL,
    reason     text        NOT NULL,
    held_at    timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    decided_at timestamptz,
    decision   text CHECK (decision IN ('approved', 'refused', 'expired')),
    decided_by text
);

CREATE INDEX risk_holds_open ON risk_holds (expires_at) WHERE decided_at IS NULL;
CREATE INDEX risk_holds_project ON risk_holds (project, held_at) WHERE decided_at IS NULL;

-- +goose Down
DROP TABLE risk_holds;
ALTER TABLE messages DROP COLUMN risk_hold, DROP COLUMN risk_reviewed;
