-- name: InsertMessageAttachments :copyfrom
-- A send's attachments, in its acceptance transaction: one COPY, however many there are.
INSERT INTO message_attachments (id, message_id, position, filename, content_type, content_id, size, content, path, created_at)
VALUES (@id, @message_id, @position, @filename, @content_type, @content_id, @size, @content, @path, @created_at);

-- name: ListMessageAttachments :many
-- What GET /v1/messages/{id}/attachments shows: everything but the content, which it does not read.
SELECT id, position, filename, content_type, content_id, size, path, created_at
FROM message_attachments
WHERE message_id = @message_id
ORDER BY position;

-- name: MessageAttachmentsToSend :many
-- What the transport needs of an email's attachments, in order.
SELECT filename, content_type, content_id, content, path
FROM message_attachments
WHERE message_id = @message_id
ORDER BY position;

-- name: MessageMedia :one
-- The file a message carries (its first attachment): what GET /v1/messages/{id}/media serves.
SELECT filename, content_type, content
FROM message_attachments
WHERE message_id = @message_id AND content IS NOT NULL
ORDER BY position
LIMIT 1;
