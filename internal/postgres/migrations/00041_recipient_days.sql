-- +goose NO TRANSACTION
-- +goose Up
-- The UTC days on which an address of a project received an inbound message, so that a message
-- list filtered by recipient (GET /v1/messages?to=) reads only the days that hold its messages:
-- an outbound message's days are its conversation's (conversations.message_days, found by the
-- contact's address), an inbound one's are here. A row is one address and one day, written
-- once (ON CONFLICT DO NOTHING locks no existing row, so inbound messages to a busy number do not
-- queue behind each other). kept_days says from when these lists are complete: messages from
-- before this migration are found by reading back through the spans (docs/data-lifecycle.md).
-- Each statement may be run again: this file runs outside a transaction, for the index built
-- CONCURRENTLY on a conversations table that may already be large.
CREATE TABLE IF NOT EXISTS inbound_days (
    project   text    NOT NULL,
    test_mode boolean NOT NULL,
    recipient text    NOT NULL,
    day       date    NOT NULL,
    PRIMARY KEY (project, test_mode, recipient, day)
);

CREATE TABLE IF NOT EXISTS kept_days (
    name      text        PRIMARY KEY,
    kept_from timestamptz NOT NULL
);
INSERT INTO kept_days (name, kept_from) VALUES ('recipients', now()) ON CONFLICT DO NOTHING;

-- An index left invalid by an interrupted build is dropped and built again.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = 'conversations_contact_identifier' AND NOT i.indisvalid) THEN
        DROP INDEX conversations_contact_identifier;
    END IF;
END $$;
-- +goose StatementEnd
CREATE INDEX CONCURRENTLY IF NOT EXISTS conversations_contact_identifier
    ON conversations (project, test_mode, contact_identifier);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS conversations_contact_identifier;
DROP TABLE IF EXISTS kept_days;
DROP TABLE IF EXISTS inbound_days;
