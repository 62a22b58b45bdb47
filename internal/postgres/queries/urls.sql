-- name: InsertVerifiedURL :one
INSERT INTO verified_urls (id, project, test_mode, url, host, domain, status, created_at, updated_at)
VALUES (@id, @project, @test_mode, @url, @host, @domain, 'pending', @now, @now)
ON CONFLICT (project, test_mode, url) DO NOTHING
RETURNING *;

-- name: VerifiedURLByURL :one
SELECT * FROM verified_urls WHERE project = @project AND test_mode = @test_mode AND url = @url;

-- name: GetVerifiedURL :one
SELECT * FROM verified_urls WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: VerifiedURLByID :one
SELECT * FROM verified_urls WHERE id = @id;

-- name: ListVerifiedURLs :many
SELECT * FROM verified_urls
WHERE project = @project AND test_mode = @test_mode
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time), sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: DecideVerifiedURL :one
-- Records a verdict on a URL that still waits for one (pending, or escalated for an operator).
UPDATE verified_urls SET status = @status, approval_type = sqlc.narg(approval_type), reason = sqlc.narg(reason),
    decided_by = sqlc.narg(decided_by), checked_at = @now::timestamptz, updated_at = @now::timestamptz
WHERE id = @id AND status = ANY(@from_statuses::text[])
RETURNING *;

-- name: EscalateVerifiedURL :one
UPDATE verified_urls SET status = 'escalated', escalation_reason = @escalation_reason, updated_at = @now::timestamptz
WHERE id = @id AND status = 'rejected'
RETURNING *;

-- name: PendingVerifiedURLs :many
-- URLs whose lookup could not be made, to look up again.
SELECT * FROM verified_urls WHERE status = 'pending' AND updated_at < @before ORDER BY updated_at LIMIT @max_rows;

-- name: EscalatedVerifiedURLs :many
SELECT * FROM verified_urls WHERE status = 'escalated' ORDER BY updated_at LIMIT @max_rows;

-- name: URLVerdict :one
SELECT * FROM url_verdicts WHERE url = @url AND expires_at > @now;

-- name: PutURLVerdict :exec
INSERT INTO url_verdicts (url, threats, checked_at, expires_at) VALUES (@url, @threats, @now, @expires_at)
ON CONFLICT (url) DO UPDATE SET threats = excluded.threats, checked_at = excluded.checked_at, expires_at = excluded.expires_at;
