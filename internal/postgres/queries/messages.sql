-- name: InsertMessage :exec
INSERT INTO messages (id, project, test_mode, sender, direction, channel, message_type, status, recipient, originator,
                      body, content, subject, metadata, options, conversation_id, api_version, provider_message_id,
                      provider_timestamp, created_at, updated_at)
VALUES (@id, @project, @test_mode, @sender, @direction, @channel, @message_type, @status, @recipient, @originator,
        @body, @content, @subject, @metadata, @options, @conversation_id, @api_version, sqlc.narg(provider_message_id),
        sqlc.narg(provider_timestamp), @created_at, @created_at);

-- name: ClaimIdempotencyKey :one
-- Returns the message id the key already points to, or the new one when this send claims it.
WITH claimed AS (
    INSERT INTO message_idempotency_keys (project, test_mode, key, message_id, created_at)
    VALUES (@project, @test_mode, @key, @message_id, @created_at)
    ON CONFLICT (project, test_mode, key) DO NOTHING
    RETURNING message_id
)
SELECT message_id FROM claimed
UNION ALL
SELECT message_id FROM message_idempotency_keys
WHERE project = @project AND test_mode = @test_mode AND key = @key AND NOT EXISTS (SELECT 1 FROM claimed);

-- name: GetMessage :one
SELECT * FROM messages WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: GetMessageByID :one
SELECT * FROM messages WHERE id = @id;

-- name: ListMessages :many
SELECT * FROM messages
WHERE project = @project AND test_mode = @test_mode
  AND (sqlc.narg(channel)::text IS NULL OR channel = sqlc.narg(channel))
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(recipient)::text IS NULL OR recipient = sqlc.narg(recipient))
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time)::timestamptz, sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @page_size;

-- name: SetMessageStatus :one
-- Moves a message forward; a late or repeated step is ignored (returns no row).
UPDATE messages
SET status = @status, provider_message_id = coalesce(sqlc.narg(provider_message_id), provider_message_id),
    error_code = sqlc.narg(error_code), error_message = sqlc.narg(error_message),
    error_provider_code = sqlc.narg(error_provider_code), updated_at = @updated_at
WHERE id = @id AND status = ANY(@from_statuses::text[])
RETURNING *;

-- name: SenderActivity :one
-- The sender's traffic of the last 24 hours: one index range per sender.
SELECT
    count(*) FILTER (WHERE m.direction = 'outbound')::bigint AS outbound,
    count(*) FILTER (WHERE m.direction = 'inbound')::bigint AS inbound
FROM messages m
WHERE m.project = @project AND m.sender = @sender AND m.created_at > @since;

-- name: SenderLastMessage :one
SELECT id, created_at FROM messages
WHERE project = @project AND sender = @sender
ORDER BY created_at DESC
LIMIT 1;

-- name: FallBackToSMS :one
-- Moves a queued WhatsApp message that its transport refused to SMS, remembering the channel tried.
UPDATE messages
SET channel = 'sms', originator = @originator, attempted_channels = attempted_channels || channel, updated_at = @updated_at
WHERE id = @id AND status = 'queued' AND channel = 'whatsapp'
RETURNING *;

-- name: GetMessageByProviderID :one
SELECT * FROM messages
WHERE project = @project AND test_mode = @test_mode AND provider_message_id = @provider_message_id
ORDER BY created_at DESC
LIMIT 1;

-- name: MarkInboundRead :one
UPDATE messages SET status = 'read', updated_at = @updated_at
WHERE id = @id AND direction = 'inbound' AND status = 'received'
RETURNING *;
