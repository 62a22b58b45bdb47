-- +goose Up
-- Webhook deliveries are their own queue: a pending delivery is due at next_attempt_at, and a
-- worker claims due rows in batches (FOR UPDATE SKIP LOCKED) by moving next_attempt_at a lease
-- ahead, so a worker that dies mid-attempt leaves rows that fall due again by themselves. This
-- replaces one job-queue row per delivery (written with the event, fetched, completed).
ALTER TABLE webhook_deliveries
    ADD COLUMN mode            text NOT NULL DEFAULT '' CHECK (mode IN ('', 'test', 'live')),
    ADD COLUMN next_attempt_at timestamptz;

-- The attempts the job queue had made or planned carry over: a pending delivery is due when its
-- job was (now, when the job is gone), and its mode comes from the job's arguments.
UPDATE webhook_deliveries d
SET next_attempt_at = coalesce(j.scheduled_at, now()),
    mode = coalesce(j.args ->> 'mode', '')
FROM webhook_deliveries p
LEFT JOIN river_job j ON j.kind = 'webhook.deliver' AND j.args ->> 'deliveryId' = p.id
    AND j.state IN ('available', 'scheduled', 'retryable', 'running')
WHERE d.id = p.id AND d.status = 'pending';
DELETE FROM river_job WHERE kind = 'webhook.deliver';

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

-- +goose Down
INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
SELECT jsonb_build_object('deliveryId', id, 'mode', mode), 'webhook.deliver', 5, 'webhooks', 'available', coalesce(next_attempt_at, now())
FROM webhook_deliveries WHERE status = 'pending';
DROP INDEX webhook_deliveries_due;
ALTER TABLE webhook_deliveries DROP COLUMN next_attempt_at, DROP COLUMN mode;
