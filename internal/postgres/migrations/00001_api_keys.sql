-- +goose Up
-- API keys are stored only as a SHA-256 hash of the whole key: a key carries at least 128 random
-- bits, so a fast hash cannot be brute-forced, and lookups stay one index probe per request.
CREATE TABLE api_keys (
    id           text        PRIMARY KEY,
    project      text        NOT NULL,
    name         text        NOT NULL,
    environment  text        NOT NULL CHECK (environment IN ('live', 'test')),
    key_prefix   text        NOT NULL,
    key_hash     bytea       NOT NULL UNIQUE,
    permissions  text[]      NOT NULL DEFAULT '{*}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX api_keys_project_created_at ON api_keys (project, created_at, id);

-- +goose Down
DROP TABLE api_keys;
