-- name: UpsertFunctionDraft :exec
INSERT INTO function_drafts (function_uid, project, function_name, files, entrypoint, dependencies, updated_at)
VALUES (@function_uid, @project, @function_name, @files, @entrypoint, @dependencies, @now)
ON CONFLICT (function_uid) DO UPDATE SET files = EXCLUDED.files, entrypoint = EXCLUDED.entrypoint,
    dependencies = EXCLUDED.dependencies, updated_at = EXCLUDED.updated_at;

-- name: FunctionDraft :one
SELECT * FROM function_drafts WHERE function_uid = @function_uid;

-- name: LockFunction :exec
-- Serialises the writes of one function's versions (deploys, rollbacks) for the transaction.
SELECT pg_advisory_xact_lock(hashtextextended(@function_uid::text, 7));

-- name: NextFunctionVersion :one
SELECT (coalesce(max(version), 0) + 1)::int FROM function_deployments WHERE function_uid = @function_uid;

-- name: InsertFunctionDeployment :one
INSERT INTO function_deployments (id, project, function_uid, function_name, version, status, source, git_commit,
    git_message, rolled_back_to, files, entrypoint, dependencies, package_lock, source_bytes, source_digest, runtime,
    created_at, lease_until)
VALUES (@id, @project, @function_uid, @function_name, @version, 'pending', @source, @git_commit, @git_message,
    @rolled_back_to, @files, @entrypoint, @dependencies, @package_lock, @source_bytes, @source_digest, @runtime, @now, @now)
RETURNING id, project, function_uid, function_name, version, status, source, git_commit, rolled_back_to,
    source_bytes, bundle_bytes, build_logs, error_message, created_at, deployed_at;

-- name: FunctionDeploymentOf :one
-- A deployment as the API shows it (no source, no bundle).
SELECT id, project, function_uid, function_name, version, status, source, git_commit, rolled_back_to,
    source_bytes, bundle_bytes, build_logs, error_message, created_at, deployed_at
FROM function_deployments WHERE id = @id AND project = @project;

-- name: FunctionDeploymentSource :one
SELECT * FROM function_deployments WHERE id = @id AND function_uid = @function_uid;

-- name: FunctionDeploymentsOf :many
-- A function's deployments, newest first.
SELECT id, project, function_uid, function_name, version, status, source, git_commit, rolled_back_to,
    source_bytes, bundle_bytes, build_logs, error_message, created_at, deployed_at
FROM function_deployments WHERE function_uid = @function_uid
ORDER BY version DESC LIMIT @max;

-- name: UnfinishedFunctionDeployment :one
-- The newest deployment of a function that is still being built, if any.
SELECT id, project, function_uid, function_name, version, status, source, git_commit, rolled_back_to,
    source_bytes, bundle_bytes, build_logs, error_message, created_at, deployed_at
FROM function_deployments
WHERE function_uid = @function_uid AND status IN ('pending', 'bundling', 'uploading', 'publishing')
ORDER BY version DESC LIMIT 1;

-- name: ClaimFunctionDeployment :one
-- Takes the oldest deployment due for a build: pending, or one whose builder's lease ran out.
WITH due AS (
    SELECT d.id FROM function_deployments d
    WHERE d.status IN ('pending', 'bundling', 'uploading', 'publishing') AND d.lease_until <= @now::timestamptz
    ORDER BY d.lease_until
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE function_deployments d SET status = 'bundling', attempts = d.attempts + 1, lease_until = @lease_until::timestamptz
FROM due WHERE d.id = due.id
RETURNING d.*;

-- name: SetFunctionDeploymentStep :exec
UPDATE function_deployments SET status = @status, lease_until = @lease_until::timestamptz
WHERE id = @id AND status IN ('bundling', 'uploading', 'publishing');

-- name: FailFunctionDeployment :exec
UPDATE function_deployments SET status = 'failed', error_message = @error_message, build_logs = @build_logs,
    lease_until = NULL
WHERE id = @id AND status IN ('pending', 'bundling', 'uploading', 'publishing');

-- name: SupersedeFunctionDeployments :many
-- The deployments a new active one replaces.
UPDATE function_deployments SET status = 'superseded'
WHERE function_uid = @function_uid AND status = 'active' AND id <> @id
RETURNING id;

-- name: ActivateFunctionDeployment :execrows
UPDATE function_deployments SET status = 'active', bundle = @bundle, bundle_sha256 = @bundle_sha256,
    bundle_bytes = @bundle_bytes, build_logs = @build_logs, package_lock = @package_lock, manifest = @manifest, deployed_at = @now::timestamptz, lease_until = NULL
WHERE id = @id AND status IN ('bundling', 'uploading', 'publishing');

-- name: ActiveFunctionDeployment :one
SELECT id, version, bundle_sha256, deployed_at FROM function_deployments WHERE function_uid = @function_uid AND status = 'active';

-- name: FunctionBundle :one
SELECT id, function_uid, bundle, bundle_sha256 FROM function_deployments WHERE id = @id AND bundle IS NOT NULL;

-- name: FunctionBundleByDigest :one
-- A bundle of the project's by its digest, as the kubernetes runtime's pods fetch it.
SELECT bundle FROM function_deployments WHERE project = @project AND bundle_sha256 = @bundle_sha256 AND bundle IS NOT NULL LIMIT 1;

-- name: DeployedSourceDigest :one
-- Whether a function already has a deployment (built or being built) of this source.
SELECT id FROM function_deployments
WHERE function_uid = @function_uid AND source_digest = @source_digest AND status NOT IN ('failed', 'superseded')
ORDER BY version DESC LIMIT 1;

-- name: UpsertFunctionTrigger :one
-- A trigger of a function's spec. A cron trigger's next run is set when it is made or turned on.
INSERT INTO function_triggers (id, project, function_uid, function_name, event_type, sender, cron, active,
    created_at, updated_at, next_run_at)
VALUES (@id, @project, @function_uid, @function_name, @event_type, @sender, @cron, @active, @now, @now, @next_run_at)
ON CONFLICT (id) DO UPDATE SET
    active = EXCLUDED.active,
    updated_at = CASE WHEN function_triggers.active = EXCLUDED.active THEN function_triggers.updated_at ELSE EXCLUDED.updated_at END,
    next_run_at = CASE WHEN function_triggers.active AND EXCLUDED.active THEN function_triggers.next_run_at ELSE EXCLUDED.next_run_at END
RETURNING *;

-- name: FunctionTriggersOf :many
SELECT * FROM function_triggers WHERE function_uid = @function_uid ORDER BY created_at, id;

-- name: FunctionTriggerOf :one
SELECT * FROM function_triggers WHERE id = @id AND project = @project;

-- name: DeleteFunctionTriggersExcept :exec
DELETE FROM function_triggers WHERE function_uid = @function_uid AND NOT (id = ANY (@keep::text[]));

-- name: DueCronTriggers :many
-- Cron triggers whose tick is due, locked for the caller's transaction; another worker skips them.
SELECT * FROM function_triggers
WHERE cron IS NOT NULL AND active AND next_run_at <= @now::timestamptz
ORDER BY next_run_at LIMIT @max
FOR UPDATE SKIP LOCKED;

-- name: AdvanceCronTrigger :exec
UPDATE function_triggers SET last_run_at = @last_run_at::timestamptz, next_run_at = sqlc.narg(next_run_at)::timestamptz WHERE id = @id;

-- name: InsertFunctionRuns :exec
INSERT INTO function_runs (id, project, function_uid, function_name, trigger_id, event_id, event_type, event, status,
    next_attempt_at, created_at)
SELECT unnest(@ids::text[]), @project, unnest(@function_uids::text[]), unnest(@function_names::text[]),
    nullif(unnest(@trigger_ids::text[]), ''), unnest(@event_ids::text[]), unnest(@event_types::text[]),
    unnest(@events::jsonb[]), 'pending', @now::timestamptz, @now::timestamptz;

-- name: ClaimFunctionRuns :many
-- Takes due runs for an attempt each, leased until @lease_until (the worker extends the lease
-- while a run lasts; a worker that dies leaves the run due again when it ends).
WITH due AS (
    SELECT r.id FROM function_runs r
    WHERE r.status = 'pending' AND r.next_attempt_at <= @now::timestamptz
    ORDER BY r.next_attempt_at
    LIMIT @max
    FOR UPDATE SKIP LOCKED
)
UPDATE function_runs r SET attempts = r.attempts + 1, next_attempt_at = @lease_until::timestamptz
FROM due WHERE r.id = due.id
RETURNING r.*;

-- name: ExtendFunctionRunLeases :exec
UPDATE function_runs SET next_attempt_at = @lease_until::timestamptz
WHERE id = ANY (@ids::text[]) AND status = 'pending';

-- name: FinishFunctionRun :exec
-- Records an attempt: succeeded, failed for good, or pending again at next_attempt_at. An attempt
-- whose lease another worker has taken over since (attempts moved on) changes nothing.
UPDATE function_runs SET status = @status, next_attempt_at = @next_attempt_at::timestamptz, error = @error,
    deployment_id = @deployment_id, duration_ms = @duration_ms,
    finished_at = CASE WHEN @status = 'pending' THEN NULL ELSE @now::timestamptz END
WHERE id = @id AND attempts = @attempts AND status = 'pending';

-- name: FunctionRunOf :one
SELECT * FROM function_runs WHERE id = @id;

-- name: InsertFunctionLogs :exec
INSERT INTO function_logs (project, function_uid, deployment_id, invocation_id, at, stream, message)
SELECT @project, @function_uid, nullif(@deployment_id::text, ''), nullif(unnest(@invocation_ids::text[]), ''),
    unnest(@ats::timestamptz[]), unnest(@streams::text[]), unnest(@messages::text[]);

-- name: FunctionLogsPage :many
-- A function's log lines in a window, oldest first, after a position; every include pattern
-- (ILIKE) must match and no exclude pattern may.
SELECT id, at, stream, message, invocation_id FROM function_logs
WHERE function_uid = @function_uid AND at >= @from_at::timestamptz AND at <= @to_at::timestamptz
  AND (at, id) > (@after_at::timestamptz, @after_id::bigint)
  AND message ILIKE ALL (@include::text[])
  AND NOT (message ILIKE ANY (@exclude::text[]))
ORDER BY at, id
LIMIT @max;

-- name: TrimFunctionLogs :execrows
-- Removes lines older than @before, and those past the @keep newest of each function.
DELETE FROM function_logs l
WHERE l.at < @before::timestamptz
   OR l.id < (SELECT k.id FROM function_logs k WHERE k.function_uid = l.function_uid ORDER BY k.id DESC OFFSET @keep LIMIT 1);

-- name: InsertFunctionGitLink :one
INSERT INTO function_git_links (id, project, function_uid, function_name, owner, repo, branch, root_dir, auto_deploy,
    connection, created_at, updated_at)
VALUES (@id, @project, @function_uid, @function_name, @owner, @repo, @branch, @root_dir, @auto_deploy, @connection,
    @now, @now)
ON CONFLICT (function_uid) DO NOTHING
RETURNING *;

-- name: FunctionGitLinkOf :one
SELECT * FROM function_git_links WHERE function_uid = @function_uid;

-- name: UpdateFunctionGitLink :one
UPDATE function_git_links SET branch = @branch, root_dir = @root_dir, auto_deploy = @auto_deploy, updated_at = @now
WHERE function_uid = @function_uid
RETURNING *;

-- name: SetFunctionGitLinkRun :exec
UPDATE function_git_links SET last_status = @last_status, last_error = @last_error,
    last_commit_sha = coalesce(@last_commit_sha, last_commit_sha), last_commit_msg = coalesce(@last_commit_msg, last_commit_msg),
    last_deploy_at = @now::timestamptz, updated_at = @now::timestamptz
WHERE function_uid = @function_uid;

-- name: DeleteFunctionGitLink :execrows
DELETE FROM function_git_links WHERE function_uid = @function_uid;

-- name: DeleteFunctionRows :exec
-- Everything a deleted function leaves in Postgres.
WITH a AS (DELETE FROM function_drafts WHERE function_drafts.function_uid = @function_uid),
     b AS (DELETE FROM function_deployments WHERE function_deployments.function_uid = @function_uid),
     c AS (DELETE FROM function_triggers WHERE function_triggers.function_uid = @function_uid),
     d AS (DELETE FROM function_runs WHERE function_runs.function_uid = @function_uid),
     e AS (DELETE FROM function_logs WHERE function_logs.function_uid = @function_uid)
DELETE FROM function_git_links WHERE function_git_links.function_uid = @function_uid;

-- name: HasSourceDigest :one
-- Whether a function ever had a deployment of this source (a manifest's source is deployed once).
SELECT EXISTS (SELECT 1 FROM function_deployments WHERE function_uid = @function_uid AND source_digest = @source_digest);

-- name: FunctionGitLinkByID :one
SELECT * FROM function_git_links WHERE id = @id;

-- name: SetFunctionDeploymentSource :exec
-- A Git deployment's source, once its builder fetched the commit.
UPDATE function_deployments SET files = @files, entrypoint = @entrypoint, dependencies = @dependencies,
    source_bytes = @source_bytes, git_commit = @git_commit, git_message = @git_message
WHERE id = @id;

-- name: FunctionDraftDependencies :one
-- A draft's dependencies alone: what the function's view shows (its files can be 900 KB).
SELECT dependencies FROM function_drafts WHERE function_uid = @function_uid;

-- name: ActiveFunctionManifest :one
SELECT id, manifest FROM function_deployments WHERE function_uid = @function_uid AND status = 'active';
