-- name: InsertWebhookDeliveries :exec
-- The deliveries of a change's events, in its transaction, in one statement: due at once.
INSERT INTO webhook_deliveries (id, project, event, endpoint_kind, endpoint_name, data, address_from, address_to, transport,
                                mode, created_at, next_attempt_at)
SELECT unnest(@ids::text[]), @project, unnest(@events::text[]), unnest(@endpoint_kinds::text[]), unnest(@endpoint_names::text[]),
       unnest(@data::jsonb[]), unnest(@addresses_from::text[]), unnest(@addresses_to::text[]), unnest(@transports::text[]),
       unnest(@modes::text[]), @created_at, @created_at;

-- name: ClaimWebhookDeliveries :many
-- Takes up to max due deliveries for an attempt each: the attempt is counted, and the row is
-- leased (due again at @lease_until, should the worker die before it records the attempt).
-- SKIP LOCKED lets every worker claim at once without waiting on another's rows. Only the
-- partitions since @made_since are read, by the due rows' scan and by the update alike: a
-- statement over a year of daily partitions plans and locks every one of them with its indexes,
-- and the update's join alone prunes nothing at planning.
WITH due AS (
    SELECT w.id, w.created_at FROM webhook_deliveries w
    WHERE w.status = 'pending' AND w.next_attempt_at <= @now::timestamptz AND w.created_at >= @made_since::timestamptz
    ORDER BY w.next_attempt_at
    LIMIT @max
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET attempts = d.attempts + 1, next_attempt_at = @lease_until::timestamptz
FROM due
WHERE d.id = due.id AND d.created_at = due.created_at AND d.created_at >= @made_since::timestamptz
RETURNING d.*;

-- name: FinishWebhookAttempts :exec
-- Records a batch of attempts: the attempt log rows (where an attempt was made) and each
-- delivery's outcome: delivered, failed, cancelled, or pending again at next_attempt_at. A
-- result whose lease another worker has taken over since (attempts moved on) changes nothing.
-- An attempt not made (its receiver was busy) gives its count back. Arrays carry no NULLs: a
-- status code of 0 is no answer (and then no response body), an empty error is none.
WITH r AS (
    SELECT unnest(@ids::text[]) AS id, unnest(@attempts::int[]) AS attempt, unnest(@made::boolean[]) AS made,
           unnest(@statuses::text[]) AS status, unnest(@next_attempts_at::timestamptz[]) AS next_attempt_at,
           unnest(@started_at::timestamptz[]) AS started_at, unnest(@urls::text[]) AS url,
           unnest(@status_codes::int[]) AS status_code, unnest(@latencies_ms::int[]) AS latency_ms,
           unnest(@errors::text[]) AS error, unnest(@response_bodies::text[]) AS response_body,
           unnest(@finished_at::timestamptz[]) AS finished_at
),
-- Each result finds its row by primary key. The LIMIT keeps the lookup a subquery the planner
-- cannot turn around: on a day's partition not analyzed yet, it takes the pending rows for a
-- handful and scans them once for every result (seconds for a batch).
current AS (
    SELECT r.*, d.project, d.endpoint_kind, d.endpoint_name, (d.replays > 0 AND d.attempt_limit = r.attempt) AS replay
    FROM r CROSS JOIN LATERAL (
        SELECT w.project, w.endpoint_kind, w.endpoint_name, w.replays, w.attempt_limit FROM webhook_deliveries w
        WHERE w.id = r.id AND w.created_at >= @created_from::timestamptz AND w.created_at < @created_to::timestamptz
          AND w.attempts = r.attempt AND w.status = 'pending'
        LIMIT 1
    ) d
),
logged AS (
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, url, status_code, latency_ms, error, response_body, replay)
    SELECT id, attempt, started_at, url, nullif(status_code, 0), latency_ms, nullif(error, ''),
           CASE WHEN status_code <> 0 THEN response_body END, replay
    FROM current WHERE made
    ON CONFLICT DO NOTHING
),
-- The endpoints' health, from the attempts made: each endpoint's last success in the batch, and
-- the failures after it (they are the endpoint's consecutive failures now).
made AS (
    SELECT project, endpoint_kind, endpoint_name, started_at, status = 'delivered' AS ok,
           max(started_at) FILTER (WHERE status = 'delivered') OVER (PARTITION BY project, endpoint_kind, endpoint_name) AS last_ok
    FROM current WHERE made
),
hours AS (
    INSERT INTO webhook_endpoint_hours (project, endpoint_kind, endpoint_name, hour, attempts, succeeded)
    SELECT project, endpoint_kind, endpoint_name, date_trunc('hour', started_at, 'UTC'), count(*), count(*) FILTER (WHERE ok)
    FROM made GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4 -- every batch locks rows in one order: no deadlock between workers
    ON CONFLICT (project, endpoint_kind, endpoint_name, hour) DO UPDATE
    SET attempts = webhook_endpoint_hours.attempts + excluded.attempts,
        succeeded = webhook_endpoint_hours.succeeded + excluded.succeeded
),
-- A success newer than every failure recorded starts the count again from the batch's failures
-- after it; otherwise the batch's failures add to the count.
health AS (
    INSERT INTO webhook_endpoints (project, endpoint_kind, endpoint_name, last_attempt_at, last_success_at, last_failure_at,
                                   failing_since, consecutive_failures)
    SELECT project, endpoint_kind, endpoint_name, max(started_at), max(last_ok), max(started_at) FILTER (WHERE NOT ok),
           min(started_at) FILTER (WHERE NOT ok AND (last_ok IS NULL OR started_at > last_ok)),
           count(*) FILTER (WHERE NOT ok AND (last_ok IS NULL OR started_at > last_ok))
    FROM made GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (project, endpoint_kind, endpoint_name) DO UPDATE
    SET last_attempt_at = greatest(webhook_endpoints.last_attempt_at, excluded.last_attempt_at),
        last_success_at = greatest(webhook_endpoints.last_success_at, excluded.last_success_at),
        last_failure_at = greatest(webhook_endpoints.last_failure_at, excluded.last_failure_at),
        consecutive_failures = CASE
            WHEN excluded.last_success_at >= coalesce(webhook_endpoints.last_failure_at, '-infinity') THEN excluded.consecutive_failures
            ELSE webhook_endpoints.consecutive_failures + excluded.consecutive_failures END,
        failing_since = CASE
            WHEN excluded.last_success_at >= coalesce(webhook_endpoints.last_failure_at, '-infinity') THEN excluded.failing_since
            ELSE coalesce(webhook_endpoints.failing_since, excluded.failing_since) END
)
UPDATE webhook_deliveries d
SET status = c.status,
    next_attempt_at = CASE WHEN c.status = 'pending' THEN c.next_attempt_at END,
    attempts = CASE WHEN c.made THEN d.attempts ELSE d.attempts - 1 END,
    finished_at = CASE WHEN c.status <> 'pending' THEN c.finished_at END,
    last_error = CASE WHEN c.made OR c.status <> 'pending' THEN nullif(c.error, '') ELSE d.last_error END
FROM current c
-- The ids again, so that the rows to update are found by key, never by a scan of the partition.
WHERE d.id = ANY(@ids::text[]) AND d.id = c.id AND d.created_at >= @created_from::timestamptz AND d.created_at < @created_to::timestamptz;

-- name: GetWebhookDelivery :one
SELECT * FROM webhook_deliveries WHERE id = @id AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);

-- name: ListWebhookAttempts :many
-- The attempts come after their delivery was made: the partitions before it are not read.
SELECT * FROM webhook_delivery_attempts WHERE delivery_id = @delivery_id AND started_at >= switchboard_id_from(@delivery_id)
ORDER BY attempt;

-- name: ListWebhookDeliveries :many
-- A page of the project's delivery log, newest first, before a position (created_at, id). Only
-- the partitions of [since, until) are read. The deliveries of a mode are the key's: an event of
-- neither mode (a domain's, a template's) is in both.
SELECT * FROM webhook_deliveries
WHERE project = @project
  AND created_at >= @since::timestamptz AND created_at < @until::timestamptz
  AND (created_at, id) < (@before_time::timestamptz, @before_id::text)
  AND mode IN (@mode::text, '')
  AND (sqlc.arg(endpoint_kind)::text = '' OR endpoint_kind = sqlc.arg(endpoint_kind)::text)
  AND (sqlc.arg(endpoint_name)::text = '' OR endpoint_name = sqlc.arg(endpoint_name)::text)
  AND (sqlc.arg(status)::text = '' OR status = sqlc.arg(status)::text)
  AND (sqlc.arg(event)::text = '' OR event = sqlc.arg(event)::text)
  AND (sqlc.arg(message_id)::text = '' OR data ->> 'messageId' = sqlc.arg(message_id)::text)
ORDER BY created_at DESC, id DESC
LIMIT @max;

-- name: ReplayWebhookDelivery :one
-- Makes a finished delivery due again at once for one more attempt, with its event id.
UPDATE webhook_deliveries
SET status = 'pending', next_attempt_at = @now::timestamptz, attempt_limit = attempts + 1, replays = replays + 1,
    finished_at = NULL
WHERE id = @id AND project = @project AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id)
  AND created_at >= @made_since::timestamptz AND status <> 'pending' AND NOT erased
RETURNING *;

-- name: ReplayFailedWebhookDeliveries :many
-- Replays up to @max of an endpoint's failed deliveries made in [since, until) that failed
-- before @failed_before (the replay's start: one that failed again since is not taken twice).
WITH picked AS (
    SELECT id, created_at FROM webhook_deliveries
    WHERE project = sqlc.arg(project)::text AND endpoint_kind = sqlc.arg(endpoint_kind)::text
      AND endpoint_name = sqlc.arg(endpoint_name)::text AND status = 'failed'
      AND created_at >= @since::timestamptz AND created_at < @until::timestamptz
      AND mode IN (@mode::text, '') AND NOT erased AND finished_at < @failed_before::timestamptz
    ORDER BY created_at
    LIMIT @max
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET status = 'pending', next_attempt_at = @failed_before::timestamptz, attempt_limit = d.attempts + 1, replays = d.replays + 1,
    finished_at = NULL
FROM picked
WHERE d.id = picked.id AND d.created_at = picked.created_at
  AND d.created_at >= @since::timestamptz AND d.created_at < @until::timestamptz
RETURNING d.id;

-- name: ListWebhookEndpointHealth :many
-- The project's endpoints as their attempts left them, with their attempts and successes since
-- @since (the last day's hours).
SELECT e.*, coalesce(h.attempts, 0)::bigint AS recent_attempts, coalesce(h.succeeded, 0)::bigint AS recent_succeeded
FROM webhook_endpoints e
LEFT JOIN LATERAL (
    SELECT sum(attempts) AS attempts, sum(succeeded) AS succeeded FROM webhook_endpoint_hours h
    WHERE h.project = e.project AND h.endpoint_kind = e.endpoint_kind AND h.endpoint_name = e.endpoint_name AND h.hour >= @since::timestamptz
) h ON true
WHERE e.project = @project
ORDER BY e.endpoint_kind, e.endpoint_name;

-- name: ListFailingWebhookEndpoints :many
-- Endpoints that have failed every attempt since before @failing_before.
SELECT * FROM webhook_endpoints WHERE failing_since <= @failing_before::timestamptz ORDER BY failing_since LIMIT 1000;

-- name: PruneWebhookEndpointHealth :exec
-- Health older than the deliveries it summed: hours past the deliveries' retention, and the
-- endpoints no attempt has reached since (their webhooks are gone).
WITH hours AS (DELETE FROM webhook_endpoint_hours WHERE hour < @before::timestamptz)
DELETE FROM webhook_endpoints WHERE last_attempt_at < @before::timestamptz;

-- name: ListWebhookAttemptsOf :many
-- The attempts of several deliveries made since @since, in one read (the console's message page).
SELECT * FROM webhook_delivery_attempts WHERE delivery_id = ANY(@delivery_ids::text[]) AND started_at >= @since::timestamptz
ORDER BY delivery_id, attempt;
