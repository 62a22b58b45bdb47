-- name: WebhookBacklog :one
-- The pending webhook deliveries made since made_since (the claim's horizon: only those
-- partitions are read), due now or later, and how long the oldest due one has waited. Pending
-- rows are few, and the partial index of the claim (status = 'pending') holds only them.
SELECT count(*) FILTER (WHERE d.next_attempt_at <= p.now)::bigint AS due,
       count(*) FILTER (WHERE d.next_attempt_at > p.now)::bigint AS later,
       coalesce(extract(epoch FROM max(p.now) - min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= p.now)), 0)::float8
           AS oldest_due_seconds
FROM webhook_deliveries d, (SELECT @now::timestamptz AS now) p
WHERE d.status = 'pending' AND d.next_attempt_at IS NOT NULL AND d.created_at >= @made_since::timestamptz;

-- name: BroadcastBacklog :many
-- Broadcasts the fan-out serves, by status (on its index, broadcasts_active), and the recipients
-- of the sending ones not yet handed to the send path (their counters, not their recipients'
-- rows; the deltas not folded yet are seconds behind).
SELECT status, count(*)::bigint AS broadcasts,
       coalesce(sum(pending_count) FILTER (WHERE status = 'sending'), 0)::bigint AS pending_recipients
FROM broadcasts
WHERE status IN ('approved', 'scheduled', 'sending', 'paused')
GROUP BY status;
