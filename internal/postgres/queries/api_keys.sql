-- name: CreateAPIKey :one
INSERT INTO api_keys (id, project, name, environment, key_prefix, key_hash, permissions, created_at)
VALUES (@id, @project, @name, @environment, @key_prefix, @key_hash, @permissions, @created_at)
RETURNING *;

-- name: GetAPIKeyByHash :one
SELECT * FROM api_keys WHERE key_hash = @key_hash;

-- name: TouchAPIKey :exec
-- Moves last_used_at forward only, so a late job never writes an older time.
UPDATE api_keys
SET last_used_at = @used_at::timestamptz
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < @used_at);

-- name: RevokeAPIKey :one
-- Revoking twice keeps the first time.
UPDATE api_keys SET revoked_at = coalesce(revoked_at, @revoked_at::timestamptz)
WHERE id = @id AND project = @project
RETURNING *;

-- name: NotifyAPIKeyRevoked :exec
-- Delivered at commit; every api replica then forgets the key.
SELECT pg_notify('switchboard_api_key_revoked', @key_hash_hex::text);

-- name: ListAPIKeys :many
SELECT * FROM api_keys
WHERE project = @project
ORDER BY created_at, id;

-- name: RevokeProjectAPIKeys :many
UPDATE api_keys SET revoked_at = @revoked_at::timestamptz
WHERE project = @project AND revoked_at IS NULL
RETURNING key_hash;
