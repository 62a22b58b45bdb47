-- +goose Up
-- A message's files (message_attachments) and the contents received messages share
-- (attachment_contents) are partitioned by day with the messages (docs/data-lifecycle.md), so
-- that retention drops them with their messages' days instead of keeping them forever.
-- internal/partition converts both after this migration, online. A file's row, its shared
-- content and its message are written in one transaction with one clock reading, so all three
-- hold the same created_at, the instant the message's id carries.
--
-- A partitioned table cannot be referred to by a key that leaves out its partition column: the
-- reference from a file to its shared content goes, as migration 37 did for the messages.
-- Erasure deletes a content once no other file points at it.
ALTER TABLE message_attachments DROP CONSTRAINT IF EXISTS message_attachments_content_ref_fkey;

-- +goose Down
-- The reference is not made again: once the tables are partitioned it cannot be.
SELECT 1;
