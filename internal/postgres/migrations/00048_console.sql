-- +goose Up
-- The operator console (docs/console.md). A session is made by signing in with an API key (it
-- acts as that key: its project, mode and permissions, and ends when the key is revoked) or by an
-- operator's one-time link (every project). Only the session id's hash is kept; the browser holds
-- the id in an HttpOnly cookie, and each form carries the session's CSRF token.
CREATE TABLE console_sessions (
    id_hash      bytea       PRIMARY KEY,
    csrf_token   text        NOT NULL,
    -- key_id is the API key signed in with; NULL for an operator.
    key_id       text,
    operator     text,
    lang         text        NOT NULL DEFAULT 'en',
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    CHECK ((key_id IS NULL) <> (operator IS NULL))
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- One-time sign-in links for installation operators (switchboard console login).
CREATE TABLE console_logins (
    token_hash bytea       PRIMARY KEY,
    operator   text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

-- Every decision taken in the console: who, on which project, what, on what.
CREATE TABLE console_audit (
    id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL,
    actor    text        NOT NULL,
    project  text        NOT NULL,
    action   text        NOT NULL,
    target   text        NOT NULL
);
CREATE INDEX console_audit_project_at ON console_audit (project, at);

-- +goose Down
DROP TABLE console_audit;
DROP TABLE console_logins;
DROP TABLE console_sessions;
