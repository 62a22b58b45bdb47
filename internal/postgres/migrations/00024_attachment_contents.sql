-- +goose Up
-- The content of a received file kept once however many messages carry it: a mail to several
-- senders (a listener's one DATA, up to its recipient limit) stores each of its files once, the
-- attachment rows of its messages pointing at it (content_ref, with content NULL). Rows have no
-- project: the messages pointing at one may be of several projects, each reading it only
-- through its own message.
CREATE TABLE attachment_contents (
    id         text        PRIMARY KEY,
    content    bytea       NOT NULL,
    created_at timestamptz NOT NULL
);

ALTER TABLE message_attachments ADD COLUMN content_ref text REFERENCES attachment_contents (id);

-- What a delete of a content checks for pointers to it.
CREATE INDEX message_attachments_content_ref ON message_attachments (content_ref) WHERE content_ref IS NOT NULL;

-- +goose Down
DROP INDEX message_attachments_content_ref;
ALTER TABLE message_attachments DROP COLUMN content_ref;
DROP TABLE attachment_contents;
