-- name: InsertMessageAttachments :copyfrom
-- A send's attachments, in its acceptance transaction: one COPY, however many there are. A
-- received file's row may point at its content (content_ref) instead of holding it.
INSERT INTO message_attachments (id, message_id, position, filename, content_type, content_id, size, content, content_ref, path, created_at)
VALUES (@id, @message_id, @position, @filename, @content_type, @content_id, @size, @content, @content_ref, @path, @created_at);

-- name: InsertAttachmentContents :copyfrom
-- The contents of files several received messages carry, each stored once, in the messages'
-- transaction.
INSERT INTO attachment_contents (id, content, created_at)
VALUES (@id, @content, @created_at);

-- name: ListMessageAttachments :many
-- What GET /v1/messages/{id}/attachments shows: everything but the content, which it does not read.
-- A message's files lie in its day: its id's time bounds them (as every lookup below). A content
-- shared by messages received together was written with the first of them, in the same
-- transaction: within the minute the bounds allow.
SELECT id, position, filename, content_type, content_id, size, path, created_at
FROM message_attachments
WHERE message_id = @message_id
  AND created_at >= switchboard_id_from(@message_id) AND created_at < switchboard_id_to(@message_id)
ORDER BY position;

-- name: MessageAttachmentsToSend :many
-- What the transport needs of an email's attachments, in order.
SELECT a.filename, a.content_type, a.content_id, COALESCE(a.content, c.content) AS content, a.path
FROM message_attachments a
LEFT JOIN attachment_contents c ON c.id = a.content_ref
  AND c.created_at >= switchboard_id_from(@message_id) AND c.created_at < switchboard_id_to(@message_id)
WHERE a.message_id = @message_id
  AND a.created_at >= switchboard_id_from(@message_id) AND a.created_at < switchboard_id_to(@message_id)
ORDER BY a.position;

-- name: MessageMedia :one
-- The file a message carries (its first attachment): what GET /v1/messages/{id}/media serves.
SELECT a.filename, a.content_type, COALESCE(a.content, c.content) AS content
FROM message_attachments a
LEFT JOIN attachment_contents c ON c.id = a.content_ref
  AND c.created_at >= switchboard_id_from(@message_id) AND c.created_at < switchboard_id_to(@message_id)
WHERE a.message_id = @message_id AND (a.content IS NOT NULL OR a.content_ref IS NOT NULL)
  AND a.created_at >= switchboard_id_from(@message_id) AND a.created_at < switchboard_id_to(@message_id)
ORDER BY a.position
LIMIT 1;
