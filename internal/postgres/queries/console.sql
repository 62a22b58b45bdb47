-- The operator console's sessions, sign-in links and audit (internal/console).

-- name: InsertConsoleSession :exec
INSERT INTO console_sessions (id_hash, csrf_token, key_id, operator, lang, created_at, last_seen_at, expires_at)
VALUES (@id_hash, @csrf_token, sqlc.narg(key_id), sqlc.narg(operator), @lang, @now, @now, @expires_at);

-- name: TouchConsoleSession :one
-- A live session, seen again now: its idle time starts over. A session idle for longer than
-- @idle_since (not seen since), past its absolute end, or whose API key was revoked since is not found. The
-- key's project, mode and permissions come in the same round trip.
WITH touched AS (
    UPDATE console_sessions SET last_seen_at = @now::timestamptz
    WHERE id_hash = @id_hash AND expires_at > @now::timestamptz
      AND last_seen_at > @idle_since::timestamptz
    RETURNING csrf_token, key_id, operator, lang
)
SELECT t.csrf_token, t.key_id, t.operator, t.lang, k.project, k.environment, k.permissions, k.key_prefix
FROM touched t LEFT JOIN api_keys k ON k.id = t.key_id
WHERE t.key_id IS NULL OR (k.id IS NOT NULL AND k.revoked_at IS NULL);

-- name: DeleteConsoleSession :exec
DELETE FROM console_sessions WHERE id_hash = @id_hash;

-- name: SetConsoleSessionLang :exec
UPDATE console_sessions SET lang = @lang WHERE id_hash = @id_hash;

-- name: PruneConsoleSessions :exec
WITH logins AS (DELETE FROM console_logins WHERE expires_at < @before::timestamptz)
DELETE FROM console_sessions WHERE expires_at < @before::timestamptz;

-- name: InsertConsoleLogin :exec
INSERT INTO console_logins (token_hash, operator, created_at, expires_at) VALUES (@token_hash, @operator, @now, @expires_at);

-- name: UseConsoleLogin :one
-- Takes a sign-in link once: a used or expired one is not found.
UPDATE console_logins SET used_at = @now::timestamptz
WHERE token_hash = @token_hash AND used_at IS NULL AND expires_at > @now::timestamptz
RETURNING operator;

-- name: InsertConsoleAudit :exec
INSERT INTO console_audit (at, actor, project, action, target) VALUES (@at, @actor, @project, @action, @target);

-- name: ListConsoleAudit :many
SELECT * FROM console_audit WHERE project = @project ORDER BY at DESC, id DESC LIMIT @max;
