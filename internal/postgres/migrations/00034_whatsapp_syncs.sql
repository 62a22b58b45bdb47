-- +goose Up
-- The syncs of a WhatsApp coexistence number's Business app data (docs/whatsapp-sync.md): its
-- contacts and its chat history, each started once (Meta allows one of each).
CREATE TABLE whatsapp_syncs (
    project      text        NOT NULL,
    sender       text        NOT NULL,
    -- Test keys' syncs go through the sandbox (docs/whatsapp-sync.md) and use up nothing of live's.
    test_mode    boolean     NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('contacts', 'history')),
    status       text        NOT NULL CHECK (status IN ('pending', 'syncing', 'completed', 'rejected')),
    request_id   text,
    items        integer     NOT NULL DEFAULT 0,
    requested_at timestamptz NOT NULL,
    completed_at timestamptz,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (project, sender, test_mode, kind)
);

-- +goose Down
DROP TABLE whatsapp_syncs;
