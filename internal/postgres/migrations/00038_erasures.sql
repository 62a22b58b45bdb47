-- +goose Up
-- Erasure of a person (docs/data-lifecycle.md): a contact deleted through the API or
-- `switchboard contact erase`. The audit record names no personal data: who asked, when, and how
-- many rows of each table were removed or redacted. The addresses being erased are kept in
-- erasure_targets only while the erasure runs (a killed run resumes from them).
CREATE TABLE erasures (
    id           text        PRIMARY KEY,
    project      text        NOT NULL,
    -- NULL: both modes (the operator's command); else the mode of the key that asked.
    test_mode    boolean,
    requested_by text        NOT NULL,
    state        text        NOT NULL CHECK (state IN ('running', 'done')),
    counts       jsonb       NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    finished_at  timestamptz
);
CREATE INDEX erasures_project ON erasures (project, created_at DESC);

CREATE TABLE erasure_targets (
    erasure_id text NOT NULL REFERENCES erasures (id) ON DELETE CASCADE,
    address    text NOT NULL,
    PRIMARY KEY (erasure_id, address)
);

-- The installation's key for the tokens that stand for an erased address where an opt-out or a
-- suppression must outlive it: 32 bytes of Postgres's strong random source (gen_random_uuid).
INSERT INTO switchboard_settings (name, value)
VALUES ('erasure-key', uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))
ON CONFLICT (name) DO NOTHING;

-- The token of an erased address of a project: 'erased:' and a keyed SHA-256. An opt-out or a
-- suppression keeps it instead of the address, so the person stays opted out or suppressed and
-- nobody can read the address back (the key never leaves the database).
-- +goose StatementBegin
CREATE FUNCTION switchboard_erased(project text, address text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT 'erased:' || encode(sha256(s.value || convert_to(project || E'\n' || address, 'UTF8')), 'hex')
    FROM switchboard_settings s WHERE s.name = 'erasure-key'
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION switchboard_erased(text, text);
DELETE FROM switchboard_settings WHERE name = 'erasure-key';
DROP TABLE erasure_targets;
DROP TABLE erasures;
