-- +goose Up
-- Contacts, their channels, conversations (threads between a sender and a contact), inbound and
-- fallback columns on messages, and email attachments. Like messages, each row belongs to one
-- mode: a test key sees only test contacts and conversations, a live key only live ones.

CREATE TABLE contacts (
    id              text        PRIMARY KEY,
    project         text        NOT NULL,
    test_mode       boolean     NOT NULL,
    display_name    text,
    profile_name    text,
    default_channel text,
    metadata        jsonb       NOT NULL DEFAULT '{}',
    tags            text[]      NOT NULL DEFAULT '{}',
    verified        boolean     NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

CREATE INDEX contacts_listing ON contacts (project, test_mode, created_at DESC, id DESC);
CREATE INDEX contacts_tags ON contacts USING gin (tags);

-- A contact's addresses, one per channel and identifier. An identifier belongs to at most one
-- contact of a project on a channel (duplicate_identifier). The delivery counters feed the
-- channel's metrics: the average delivery time is total_delivery_ms / delivered_count.
CREATE TABLE contact_channels (
    id                text        PRIMARY KEY,
    contact_id        text        NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    project           text        NOT NULL,
    test_mode         boolean     NOT NULL,
    channel           text        NOT NULL,
    identifier        text        NOT NULL,
    is_primary        boolean     NOT NULL DEFAULT false,
    verified          boolean     NOT NULL DEFAULT false,
    country_code      text,
    label             text,
    metadata          jsonb       NOT NULL DEFAULT '{}',
    last_inbound_at   timestamptz,
    success_count     bigint      NOT NULL DEFAULT 0,
    failure_count     bigint      NOT NULL DEFAULT 0,
    total_attempts    bigint      NOT NULL DEFAULT 0,
    delivered_count   bigint      NOT NULL DEFAULT 0,
    total_delivery_ms bigint      NOT NULL DEFAULT 0,
    last_success_at   timestamptz,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    UNIQUE (project, test_mode, channel, identifier)
);

CREATE INDEX contact_channels_contact ON contact_channels (contact_id, created_at);

-- A conversation is the thread between one sender and one contact address, across the channels
-- they used. Its id is derived from (project, mode, sender, address), so a send knows its
-- conversation without reading it. whatsapp_window_until is the end of the WhatsApp 24-hour
-- window the contact's last inbound message opened.
CREATE TABLE conversations (
    id                    text        PRIMARY KEY,
    project               text        NOT NULL,
    test_mode             boolean     NOT NULL,
    sender                text        NOT NULL,
    contact_identifier    text        NOT NULL,
    -- The sender's address the thread last used (v2 names a conversation's sender by it).
    address               text        NOT NULL DEFAULT '',
    contact_id            text        REFERENCES contacts (id) ON DELETE SET NULL,
    channels              text[]      NOT NULL DEFAULT '{}',
    message_count         bigint      NOT NULL DEFAULT 0,
    unread_count          bigint      NOT NULL DEFAULT 0,
    inbound_count         bigint      NOT NULL DEFAULT 0,
    last_message_id       text        NOT NULL,
    last_message_at       timestamptz NOT NULL,
    last_message_channel  text        NOT NULL,
    last_message_direction text       NOT NULL,
    last_message_text     text,
    profile_name          text,
    referral              jsonb,
    whatsapp_window_until timestamptz,
    typing_until          timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL
);

CREATE INDEX conversations_listing ON conversations (project, test_mode, last_message_at DESC, id DESC);
CREATE INDEX conversations_contact ON conversations (contact_id);

ALTER TABLE messages
    ADD COLUMN conversation_id    text,
    -- Channels tried before a fallback (whatsapp, then sms), in order; empty until one happens.
    ADD COLUMN attempted_channels text[] NOT NULL DEFAULT '{}',
    -- The API generation that accepted the send: v2 checks more before a fallback.
    ADD COLUMN api_version        text   NOT NULL DEFAULT 'v1',
    ADD COLUMN provider_timestamp timestamptz,
    -- The provider's own code when errorCode translates it (v2 errorDetails.providerCode).
    ADD COLUMN error_provider_code text;

CREATE INDEX messages_conversation ON messages (conversation_id, created_at DESC, id DESC);
CREATE INDEX messages_provider_id ON messages (provider_message_id) WHERE provider_message_id IS NOT NULL;
-- Sandbox messages with a simulated step to come: only those in flight are in it.
CREATE INDEX messages_sandbox_in_flight ON messages (updated_at)
    WHERE provider_message_id LIKE 'sbx\_%' AND (status = 'sent' OR (status = 'delivered' AND channel = 'whatsapp'));

-- A send claims its idempotency key first, before it stores the message (which it does last,
-- with its conversation, so the conversation's row stays locked only until the commit): the key
-- may point at the message until the transaction ends.
ALTER TABLE message_idempotency_keys
    ALTER CONSTRAINT message_idempotency_keys_message_id_fkey DEFERRABLE INITIALLY DEFERRED;

-- Email attachments of a send: inline content (decoded) or a URL the transport fetches.
CREATE TABLE message_attachments (
    id           text        PRIMARY KEY,
    message_id   text        NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    position     integer     NOT NULL,
    filename     text        NOT NULL,
    content_type text,
    content_id   text,
    size         bigint      NOT NULL DEFAULT 0,
    content      bytea,
    path         text,
    created_at   timestamptz NOT NULL
);

CREATE INDEX message_attachments_message ON message_attachments (message_id, position);

-- +goose Down
DROP TABLE message_attachments;
ALTER TABLE message_idempotency_keys
    ALTER CONSTRAINT message_idempotency_keys_message_id_fkey NOT DEFERRABLE;
DROP INDEX messages_sandbox_in_flight;
DROP INDEX messages_provider_id;
DROP INDEX messages_conversation;
ALTER TABLE messages DROP COLUMN conversation_id, DROP COLUMN attempted_channels, DROP COLUMN api_version,
    DROP COLUMN provider_timestamp, DROP COLUMN error_provider_code;
DROP TABLE conversations;
DROP TABLE contact_channels;
DROP TABLE contacts;
