-- name: InsertWebhookDelivery :exec
INSERT INTO webhook_deliveries (id, project, event, endpoint_kind, endpoint_name, data, address_from, address_to, transport, created_at)
VALUES (@id, @project, @event, @endpoint_kind, @endpoint_name, @data, @address_from, @address_to, @transport, @created_at);

-- name: GetWebhookDelivery :one
SELECT * FROM webhook_deliveries WHERE id = @id;

-- name: RecordWebhookAttempt :exec
WITH attempt AS (
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, url, status_code, latency_ms, error, response_body)
    VALUES (@delivery_id, @attempt, @started_at, @url, @status_code, @latency_ms, @error, @response_body)
)
UPDATE webhook_deliveries
SET attempts = greatest(attempts, @attempt::int),
    status = @status,
    finished_at = @finished_at,
    last_error = @error
WHERE id = @delivery_id;

-- name: FinishWebhookDelivery :exec
UPDATE webhook_deliveries SET status = @status, finished_at = @finished_at, last_error = @last_error
WHERE id = @id AND status = 'pending';

-- name: ListWebhookAttempts :many
SELECT * FROM webhook_delivery_attempts WHERE delivery_id = @delivery_id ORDER BY attempt;
