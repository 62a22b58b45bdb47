-- +goose Up
-- A project's sending suspended after repeated risk refusals, per mode (test traffic's refusals
-- suspend only test traffic). Lifted by an operator; the row stays as history.
CREATE TABLE sending_suspensions (
    id         bigserial   PRIMARY KEY,
    project    text        NOT NULL,
    test_mode  boolean     NOT NULL,
    reason     text        NOT NULL,
    since      timestamptz NOT NULL,
    lifted_at  timestamptz,
    lifted_by  text
);

-- One suspension in force per project and mode.
CREATE UNIQUE INDEX sending_suspensions_open ON sending_suspensions (project, test_mode) WHERE lifted_at IS NULL;

-- Each send risk review refused or blocked: repeated ones within the policy's window suspend.
CREATE TABLE risk_refusals (
    project    text        NOT NULL,
    test_mode  boolean     NOT NULL,
    message_id text        NOT NULL PRIMARY KEY,
    at         timestamptz NOT NULL
);

CREATE INDEX risk_refusals_project ON risk_refusals (project, test_mode, at);

-- +goose Down
DROP TABLE risk_refusals;
DROP TABLE sending_suspensions;
