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
current AS (
    SELECT r.* FROM r JOIN webhook_deliveries d ON d.id = r.id AND d.attempts = r.attempt AND d.status = 'pending'
    WHERE d.created_at >= @created_from::timestamptz AND d.created_at < @created_to::timestamptz
),
logged AS (
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, url, status_code, latency_ms, error, response_body)
    SELECT id, attempt, started_at, url, nullif(status_code, 0), latency_ms, nullif(error, ''),
           CASE WHEN status_code <> 0 THEN response_body END
    FROM current WHERE made
    ON CONFLICT DO NOTHING
)
UPDATE webhook_deliveries d
SET status = c.status,
    next_attempt_at = CASE WHEN c.status = 'pending' THEN c.next_attempt_at END,
    attempts = CASE WHEN c.made THEN d.attempts ELSE d.attempts - 1 END,
    finished_at = CASE WHEN c.status <> 'pending' THEN c.finished_at END,
    last_error = CASE WHEN c.made OR c.status <> 'pending' THEN nullif(c.error, '') ELSE d.last_error END
FROM current c
WHERE d.id = c.id AND d.created_at >= @created_from::timestamptz AND d.created_at < @created_to::timestamptz;

-- name: GetWebhookDelivery :one
SELECT * FROM webhook_deliveries WHERE id = @id AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);

-- name: ListWebhookAttempts :many
-- The attempts come after their delivery was made: the partitions before it are not read.
SELECT * FROM webhook_delivery_attempts WHERE delivery_id = @delivery_id AND started_at >= switchboard_id_from(@delivery_id)
ORDER BY attempt;
