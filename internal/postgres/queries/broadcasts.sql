-- name: InsertBroadcast :one
INSERT INTO broadcasts (id, project, test_mode, name, channel, message_type, text, content, email_subject, email_html_body,
    sender_id, metadata, status, idempotency_key, scheduled_at, created_at, updated_at)
VALUES (@id, @project, @test_mode, @name, @channel, @message_type, @text, @content, @email_subject, @email_html_body,
    @sender_id, @metadata, 'draft', @idempotency_key, @scheduled_at, @now, @now)
ON CONFLICT (project, test_mode, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING *;

-- name: BroadcastByIdempotencyKey :one
SELECT * FROM broadcasts WHERE project = @project AND test_mode = @test_mode AND idempotency_key = @idempotency_key;

-- name: Broadcast :one
SELECT * FROM broadcasts WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: BroadcastForUpdate :one
SELECT * FROM broadcasts WHERE id = @id AND project = @project AND test_mode = @test_mode FOR UPDATE;

-- name: Broadcasts :many
-- A project's broadcasts of a mode, oldest first from after a position; one status's when
-- status is not empty.
SELECT * FROM broadcasts
WHERE project = @project AND test_mode = @test_mode AND (@status::text = '' OR status = @status)
    AND (created_at, id) > (@after_time::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: UpdateBroadcastDraft :one
UPDATE broadcasts SET name = @name, text = @text, content = @content, email_subject = @email_subject,
    email_html_body = @email_html_body, metadata = @metadata, updated_at = @now
WHERE id = @id
RETURNING *;

-- name: DeleteBroadcast :exec
DELETE FROM broadcasts WHERE id = @id;

-- name: AddBroadcastContacts :many
-- Adds recipients; one already in the broadcast is not added again (and not returned). Their
-- creation times are a microsecond apart, so they list in the order they were given.
INSERT INTO broadcast_contacts (id, broadcast_id, recipient, recipient_type, status, template_variables,
    template_header_variables, template_button_variables, created_at)
SELECT unnest(@ids::text[]), @broadcast_id, unnest(@recipients::text[]), unnest(@recipient_types::text[]), 'pending',
    unnest(@template_variables::jsonb[]), unnest(@template_header_variables::jsonb[]), unnest(@template_button_variables::jsonb[]),
    unnest(@created_at::timestamptz[])
ON CONFLICT (broadcast_id, recipient) DO NOTHING
RETURNING id;

-- name: CountBroadcastContacts :exec
-- Sets a draft's contact counts from its recipients (all pending until it is sent).
UPDATE broadcasts SET total_contacts = n, pending_count = n, updated_at = @now
FROM (SELECT count(*)::integer AS n FROM broadcast_contacts WHERE broadcast_id = @id) c
WHERE broadcasts.id = @id;

-- name: BroadcastContacts :many
SELECT * FROM broadcast_contacts
WHERE broadcast_id = @broadcast_id AND (@status::text = '' OR status = @status)
    AND (created_at, id) > (@after_time::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: DeleteBroadcastContact :one
DELETE FROM broadcast_contacts WHERE id = @id AND broadcast_id = @broadcast_id RETURNING id;

-- name: SetBroadcastStatus :one
-- Moves a broadcast to a status (with the review it had, when it had one).
UPDATE broadcasts SET status = @status, review_attempts = review_attempts + @add_attempts::integer,
    review_result = COALESCE(@review_result, review_result), scheduled_at = COALESCE(@scheduled_at, scheduled_at),
    completed_at = CASE WHEN @status IN ('completed', 'cancelled', 'failed') THEN @now ELSE completed_at END,
    updated_at = @now
WHERE id = @id
RETURNING *;

-- name: SkipPendingBroadcastContacts :one
-- A cancelled broadcast's recipients not yet handed to the send path are skipped.
WITH skipped AS (
    UPDATE broadcast_contacts SET status = 'skipped', processed_at = @now
    WHERE broadcast_id = @id AND status = 'pending'
    RETURNING 1
)
UPDATE broadcasts SET skipped_count = skipped_count + (SELECT count(*) FROM skipped)::integer,
    pending_count = pending_count - (SELECT count(*) FROM skipped)::integer, updated_at = @now
WHERE broadcasts.id = @id
RETURNING *;

-- name: ReschedulePendingBroadcast :one
UPDATE broadcasts SET scheduled_at = @scheduled_at, updated_at = @now WHERE id = @id RETURNING *;

-- name: BroadcastByID :one
SELECT * FROM broadcasts WHERE id = @id;

-- name: LockBroadcast :one
SELECT * FROM broadcasts WHERE id = @id FOR UPDATE;

-- name: BroadcastsAwaitingOperator :many
-- Broadcasts waiting for an operator: held by review, or escalated; every project's when project
-- is empty.
SELECT * FROM broadcasts
WHERE status IN ('pending_review', 'escalated') AND (@project::text = '' OR project = @project)
ORDER BY updated_at
LIMIT @max_rows;

-- name: BroadcastRecipientTexts :many
-- What pricing a broadcast needs of each recipient still to send to.
SELECT recipient, template_variables FROM broadcast_contacts WHERE broadcast_id = @broadcast_id AND status = 'pending';

-- name: SetBroadcastEstimate :exec
UPDATE broadcasts SET estimated_cost_micros = @estimated_cost_micros WHERE id = @id;
