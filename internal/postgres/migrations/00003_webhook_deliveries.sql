-- +goose Up
-- One row per delivery of one event to one endpoint; its id is the event id the receiver sees
-- (separate deliveries of one event have different ids, as the spec says). The body is rendered
-- at each attempt from these fields, so the envelope's timestamp is the dispatch time.
CREATE TABLE webhook_deliveries (
    id            text        PRIMARY KEY,
    project       text        NOT NULL,
    event         text        NOT NULL,
    endpoint_kind text        NOT NULL CHECK (endpoint_kind IN ('sender', 'project_v1', 'project_v2')),
    endpoint_name text        NOT NULL,
    data          jsonb       NOT NULL,
    address_from  text        NOT NULL DEFAULT '',
    address_to    text        NOT NULL DEFAULT '',
    transport     text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled')),
    attempts      int         NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL,
    finished_at   timestamptz,
    last_error    text
);

CREATE INDEX webhook_deliveries_project_created_at ON webhook_deliveries (project, created_at, id);

-- Every attempt, for the delivery log: what was sent where, and what came back.
CREATE TABLE webhook_delivery_attempts (
    delivery_id   text        NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt       int         NOT NULL,
    started_at    timestamptz NOT NULL,
    url           text        NOT NULL,
    status_code   int,
    latency_ms    int         NOT NULL,
    error         text,
    response_body text,
    PRIMARY KEY (delivery_id, attempt)
);

-- +goose Down
DROP TABLE webhook_delivery_attempts;
DROP TABLE webhook_deliveries;
