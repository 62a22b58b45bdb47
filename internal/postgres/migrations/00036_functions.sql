-- +goose Up
-- Functions (docs/functions.md): a Function resource holds a function's settings and triggers;
-- what grows lives here, keyed by the resource's uid so that a function deleted and made again
-- under the same name never sees the old one's rows.

-- The draft of a function made through the API: its code as the next deploy will build it.
CREATE TABLE function_drafts (
    function_uid text        PRIMARY KEY,
    project       text        NOT NULL,
    function_name text        NOT NULL,
    files         jsonb       NOT NULL,
    entrypoint    text        NOT NULL,
    dependencies  jsonb       NOT NULL,
    updated_at    timestamptz NOT NULL
);

-- Deployments: immutable builds of a draft, a manifest's source or a Git commit. One per function
-- is active at a time; the builder claims pending ones with SKIP LOCKED under a lease.
CREATE TABLE function_deployments (
    id              text        PRIMARY KEY,
    project         text        NOT NULL,
    function_uid text        NOT NULL,
    function_name   text        NOT NULL,
    version         int         NOT NULL,
    status          text        NOT NULL CHECK (status IN ('pending', 'bundling', 'uploading', 'publishing', 'active', 'failed', 'superseded')),
    source          text        NOT NULL CHECK (source IN ('upload', 'manifest', 'git', 'rollback')),
    git_commit      text,
    git_message     text,
    rolled_back_to  int,
    files           jsonb       NOT NULL,
    entrypoint      text        NOT NULL,
    dependencies    jsonb       NOT NULL,
    source_bytes    int         NOT NULL,
    source_digest   text        NOT NULL,
    runtime         text        NOT NULL,
    bundle          bytea,
    bundle_sha256   text,
    bundle_bytes    int,
    build_logs      text,
    package_lock    text,
    manifest        jsonb,
    error_message   text,
    attempts        int         NOT NULL DEFAULT 0,
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL,
    deployed_at     timestamptz,
    UNIQUE (function_uid, version)
);
CREATE UNIQUE INDEX function_deployments_active ON function_deployments (function_uid) WHERE status = 'active';
CREATE INDEX function_deployments_due ON function_deployments (lease_until) WHERE status IN ('pending', 'bundling', 'uploading', 'publishing');
CREATE INDEX function_deployments_of ON function_deployments (project, function_uid, version DESC);

-- Triggers' schedule: a row per trigger of a Function's spec, made by the API at once and by the
-- controller for manifests. Cron rows are claimed with SKIP LOCKED when next_run_at is due, so one
-- worker fires each tick.
CREATE TABLE function_triggers (
    id            text        PRIMARY KEY,
    project       text        NOT NULL,
    function_uid text        NOT NULL,
    function_name text        NOT NULL,
    event_type    text        NOT NULL,
    sender        text,
    cron          text,
    active        boolean     NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    last_run_at   timestamptz,
    next_run_at   timestamptz
);
CREATE INDEX function_triggers_due ON function_triggers (next_run_at) WHERE cron IS NOT NULL AND active;
CREATE INDEX function_triggers_of ON function_triggers (function_uid);

-- Runs of functions on events and schedules: a queue, claimed with SKIP LOCKED under a lease that
-- outlives the function's timeout, so a worker that dies mid-run leaves it to run again.
CREATE TABLE function_runs (
    id              text        PRIMARY KEY,
    project         text        NOT NULL,
    function_uid text        NOT NULL,
    function_name   text        NOT NULL,
    trigger_id      text,
    event_id        text        NOT NULL,
    event_type      text        NOT NULL,
    event           jsonb       NOT NULL,
    status          text        NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts        int         NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    error           text,
    deployment_id   text,
    duration_ms     int,
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz
);
CREATE INDEX function_runs_due ON function_runs (next_attempt_at) WHERE status = 'pending';
CREATE INDEX function_runs_of ON function_runs (function_uid, created_at);

-- What runs printed, line by line; trimmed to a cap per function by the worker.
CREATE TABLE function_logs (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project       text        NOT NULL,
    function_uid text        NOT NULL,
    deployment_id text,
    invocation_id text,
    at            timestamptz NOT NULL,
    stream        text        NOT NULL,
    message       text        NOT NULL
);
CREATE INDEX function_logs_of ON function_logs (function_uid, at, id);

-- A function's Git link (at most one); its webhook secret lives in a Kubernetes Secret.
CREATE TABLE function_git_links (
    id              text        PRIMARY KEY,
    project         text        NOT NULL,
    function_uid text        NOT NULL UNIQUE,
    function_name   text        NOT NULL,
    owner           text        NOT NULL,
    repo            text        NOT NULL,
    branch          text        NOT NULL,
    root_dir        text,
    auto_deploy     boolean     NOT NULL,
    connection      text        NOT NULL,
    last_status     text CHECK (last_status IN ('deploying', 'deployed', 'failed')),
    last_error      text,
    last_commit_sha text,
    last_commit_msg text,
    last_deploy_at  timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- +goose Down
DROP TABLE function_git_links;
DROP TABLE function_logs;
DROP TABLE function_runs;
DROP TABLE function_triggers;
DROP TABLE function_deployments;
DROP TABLE function_drafts;
