-- +goose Up
-- The webhook delivery log (docs/webhooks.md#the-delivery-log).
--
-- A replay is one more attempt of a finished delivery, with its event id: attempt_limit is how
-- many attempts the delivery may have (5 on its schedule, one more per replay), replays counts
-- them, and an attempt says whether a replay made it.
ALTER TABLE webhook_deliveries
    ADD COLUMN attempt_limit int     NOT NULL DEFAULT 5,
    ADD COLUMN replays       int     NOT NULL DEFAULT 0,
    -- erased: an erasure took the event's data (docs/data-lifecycle.md); it cannot be replayed.
    ADD COLUMN erased        boolean NOT NULL DEFAULT false;
ALTER TABLE webhook_delivery_attempts ADD COLUMN replay boolean NOT NULL DEFAULT false;

-- Failed deliveries are few: the log's "failed" filter and a replay of an endpoint's failures in
-- a time range read them through this index instead of every delivery of the project.
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (project, endpoint_kind, endpoint_name, created_at)
    WHERE status = 'failed';

-- Each endpoint's health, kept by the workers as they record attempts: when it last answered
-- 2xx and since when it has failed. failing_since is the first failed attempt after the last
-- success (NULL while the last attempt succeeded); an endpoint failing for too long is disabled.
CREATE TABLE webhook_endpoints (
    project              text        NOT NULL,
    endpoint_kind        text        NOT NULL,
    endpoint_name        text        NOT NULL,
    last_attempt_at      timestamptz NOT NULL,
    last_success_at      timestamptz,
    last_failure_at      timestamptz,
    failing_since        timestamptz,
    consecutive_failures int         NOT NULL DEFAULT 0,
    PRIMARY KEY (project, endpoint_kind, endpoint_name)
);
CREATE INDEX webhook_endpoints_failing ON webhook_endpoints (failing_since) WHERE failing_since IS NOT NULL;

-- Attempts and successes per endpoint and hour: an endpoint's success rate over the last day is
-- 24 rows, whatever its traffic.
CREATE TABLE webhook_endpoint_hours (
    project       text        NOT NULL,
    endpoint_kind text        NOT NULL,
    endpoint_name text        NOT NULL,
    hour          timestamptz NOT NULL,
    attempts      int         NOT NULL,
    succeeded     int         NOT NULL,
    PRIMARY KEY (project, endpoint_kind, endpoint_name, hour)
);

-- +goose Down
DROP TABLE webhook_endpoint_hours;
DROP TABLE webhook_endpoints;
DROP INDEX webhook_deliveries_failed;
ALTER TABLE webhook_delivery_attempts DROP COLUMN replay;
ALTER TABLE webhook_deliveries DROP COLUMN erased, DROP COLUMN replays, DROP COLUMN attempt_limit;
