-- +goose Up
-- Messages, both directions. test_mode keeps sandbox traffic apart from live traffic: a key sees
-- only the messages of its own mode.
CREATE TABLE messages (
    id                  text        PRIMARY KEY,
    project             text        NOT NULL,
    test_mode           boolean     NOT NULL,
    sender              text        NOT NULL DEFAULT '',
    direction           text        NOT NULL CHECK (direction IN ('outbound', 'inbound')),
    channel             text        NOT NULL,
    message_type        text        NOT NULL,
    status              text        NOT NULL CHECK (status IN ('queued', 'sending', 'sent', 'delivered', 'read', 'failed', 'received')),
    recipient           text        NOT NULL,
    originator          text        NOT NULL DEFAULT '',
    body                text,
    content             jsonb,
    subject             text,
    metadata            jsonb,
    provider_message_id text,
    error_code          text,
    error_message       text,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);

CREATE INDEX messages_listing ON messages (project, test_mode, created_at DESC, id DESC);
CREATE INDEX messages_sender ON messages (project, sender, created_at DESC);

-- A send's idempotency key answers a retry with the original message instead of a second send.
CREATE TABLE message_idempotency_keys (
    project    text        NOT NULL,
    test_mode  boolean     NOT NULL,
    key        text        NOT NULL,
    message_id text        NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (project, test_mode, key)
);

-- +goose Down
DROP TABLE message_idempotency_keys;
DROP TABLE messages;
