-- name: ClaimIdempotencyKey :one
-- Returns the message id the key already points to, or the new one when this send claims it.
-- The caller holds the key's lock (LockKey) for its transaction: the keys are partitioned by
-- time, so no unique index spans them all, and the lock is what makes a key claimed once. A key
-- claimed before @since has expired (docs/data-lifecycle.md): the send claims it anew.
WITH existing AS (
    SELECT k.message_id FROM message_idempotency_keys k
    WHERE k.project = @project AND k.test_mode = @test_mode AND k.key = @key AND k.created_at >= @since::timestamptz
    ORDER BY k.created_at
    LIMIT 1
), claimed AS (
    INSERT INTO message_idempotency_keys (project, test_mode, key, message_id, created_at)
    SELECT @project, @test_mode, @key, @message_id, @created_at
    WHERE NOT EXISTS (SELECT 1 FROM existing)
    RETURNING message_id
)
SELECT message_id FROM existing
UNION ALL
SELECT message_id FROM claimed;

-- name: GetMessage :one
SELECT * FROM messages WHERE id = @id AND project = @project AND test_mode = @test_mode
  AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);

-- name: GetMessageByID :one
SELECT * FROM messages WHERE id = @id AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);

-- name: ListMessages :many
-- A page's span [since, until) is bounded by the caller (partition.NewestFirst), so that a page
-- plans only the partitions it reads.
SELECT * FROM messages
WHERE project = @project AND test_mode = @test_mode
  AND created_at >= @since::timestamptz AND created_at < @until::timestamptz
  AND (sqlc.narg(channel)::text IS NULL OR channel = sqlc.narg(channel))
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(recipient)::text IS NULL OR recipient = sqlc.narg(recipient))
  AND (sqlc.narg(sender)::text IS NULL OR sender = sqlc.narg(sender))
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time)::timestamptz, sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @page_size;

-- name: RecipientDays :one
-- Where the messages to one recipient (its addr.Key) from since_day (a UTC day) on lie: the
-- conversations with it as the contact, which hold its outbound messages, and their days; the
-- days it received inbound messages as one of the project's addresses; and the instant from which
-- these days are complete (kept_days: earlier messages are found by reading back through the
-- spans; without its row, as if nothing was kept: a millennium ahead).
SELECT coalesce((SELECT k.kept_from FROM kept_days k WHERE k.name = 'recipients'), now() + interval '1000 years')::timestamptz AS kept_from,
       ARRAY(SELECT c.id FROM conversations c
             WHERE c.project = @project AND c.test_mode = @test_mode AND c.contact_identifier = @recipient)::text[] AS conversation_ids,
       ARRAY(SELECT DISTINCT d.day FROM conversations c, unnest(c.message_days) AS d(day)
             WHERE c.project = @project AND c.test_mode = @test_mode AND c.contact_identifier = @recipient
               AND d.day >= @since_day::date)::date[] AS conversation_days,
       ARRAY(SELECT i.day FROM inbound_days i
             WHERE i.project = @project AND i.test_mode = @test_mode AND i.recipient = @recipient
               AND i.day >= @since_day::date)::date[] AS inbound_days;

-- name: ListRecipientMessages :many
-- A page of the messages to one recipient, read from the spans [froms[i], tos[i]) the caller
-- chose (partition.OnDays over RecipientDays; see ListConversationMessages for how the spans
-- prune). conversation_ids, when given, says every message sought is in one of those
-- conversations (no inbound message came to the recipient), so the conversation index finds
-- them instead of the project's whole days.
SELECT * FROM messages
WHERE project = @project AND test_mode = @test_mode AND recipient = @recipient
  AND (sqlc.narg(conversation_ids)::text[] IS NULL OR conversation_id = ANY(sqlc.narg(conversation_ids)::text[]))
  AND (sqlc.narg(sender)::text IS NULL OR sender = sqlc.narg(sender))
  AND ((created_at >= (@froms::timestamptz[])[1] AND created_at < (@tos::timestamptz[])[1])
    OR (created_at >= (@froms::timestamptz[])[2] AND created_at < (@tos::timestamptz[])[2])
    OR (created_at >= (@froms::timestamptz[])[3] AND created_at < (@tos::timestamptz[])[3])
    OR (created_at >= (@froms::timestamptz[])[4] AND created_at < (@tos::timestamptz[])[4])
    OR (created_at >= (@froms::timestamptz[])[5] AND created_at < (@tos::timestamptz[])[5])
    OR (created_at >= (@froms::timestamptz[])[6] AND created_at < (@tos::timestamptz[])[6])
    OR (created_at >= (@froms::timestamptz[])[7] AND created_at < (@tos::timestamptz[])[7])
    OR (created_at >= (@froms::timestamptz[])[8] AND created_at < (@tos::timestamptz[])[8]))
  AND (sqlc.narg(channel)::text IS NULL OR channel = sqlc.narg(channel))
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time)::timestamptz, sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @page_size;

-- name: SetMessageStatus :one
-- Moves a message forward; a late or repeated step is ignored (returns no row). In the same
-- statement it keeps the metrics of the contact channel an outbound message went to (the
-- channel's type: sms_oneway counts as sms; email addresses in lower case): an attempt when the
-- provider took the message or refused it before taking it, a success and its delivery time
-- when delivered, a failure when failed.
WITH moved AS (
    UPDATE messages msg
    SET status = @status, provider_message_id = coalesce(sqlc.narg(provider_message_id), msg.provider_message_id),
        error_code = sqlc.narg(error_code), error_message = sqlc.narg(error_message),
        error_provider_code = sqlc.narg(error_provider_code), updated_at = @updated_at
    WHERE msg.id = @id AND msg.status = ANY(@from_statuses::text[])
      AND msg.created_at >= switchboard_id_from(@id) AND msg.created_at < switchboard_id_to(@id)
    RETURNING msg.*
), outcome AS (
    UPDATE contact_channels cc
    SET total_attempts = cc.total_attempts
            + CASE WHEN m.status = 'sent' OR (m.status = 'failed' AND m.provider_message_id IS NULL) THEN 1 ELSE 0 END,
        success_count = cc.success_count + CASE WHEN m.status = 'delivered' THEN 1 ELSE 0 END,
        delivered_count = cc.delivered_count + CASE WHEN m.status = 'delivered' THEN 1 ELSE 0 END,
        total_delivery_ms = cc.total_delivery_ms
            + CASE WHEN m.status = 'delivered' THEN (extract(epoch FROM m.updated_at - m.created_at) * 1000)::bigint ELSE 0 END,
        failure_count = cc.failure_count + CASE WHEN m.status = 'failed' THEN 1 ELSE 0 END,
        last_success_at = CASE WHEN m.status = 'delivered' THEN m.updated_at ELSE cc.last_success_at END,
        updated_at = m.updated_at
    FROM moved m
    WHERE m.direction = 'outbound' AND m.status IN ('sent', 'delivered', 'failed')
      AND cc.project = m.project AND cc.test_mode = m.test_mode
      AND cc.channel = CASE WHEN m.channel = 'sms_oneway' THEN 'sms' ELSE m.channel END
      AND cc.identifier = CASE WHEN strpos(m.recipient, '@') > 0 THEN lower(m.recipient) ELSE m.recipient END
    RETURNING cc.id
)
SELECT * FROM moved;

-- name: SetMessagesStatus :many
-- SetMessageStatus for many messages moving to one status without an error (a batch
-- dispatch's sent, the sandbox's delivered and read). Each message moves only from a status this
-- one follows; an empty provider id keeps the stored one. The contact channels' metrics are
-- added up per channel first, since a batch may hold several messages to one contact.
WITH step AS (
    SELECT unnest(@ids::text[]) AS id, unnest(@provider_message_ids::text[]) AS provider_message_id
), moved AS (
    UPDATE messages msg
    SET status = @status, provider_message_id = coalesce(nullif(step.provider_message_id, ''), msg.provider_message_id),
        updated_at = @updated_at
    FROM step
    -- The ids again: each message is found by key, never by a scan of a partition the planner
    -- takes for a handful of rows (one not analyzed yet) once for every step.
    WHERE msg.id = ANY(@ids::text[]) AND msg.id = step.id AND msg.status = ANY(@from_statuses::text[])
      AND msg.created_at >= @created_from::timestamptz AND msg.created_at < @created_to::timestamptz
    RETURNING msg.*
), outcome AS (
    SELECT m.project, m.test_mode,
        CASE WHEN m.channel = 'sms_oneway' THEN 'sms' ELSE m.channel END AS channel,
        CASE WHEN strpos(m.recipient, '@') > 0 THEN lower(m.recipient) ELSE m.recipient END AS identifier,
        count(*) FILTER (WHERE m.status = 'sent') AS attempts,
        count(*) FILTER (WHERE m.status = 'delivered') AS delivered,
        coalesce(sum((extract(epoch FROM m.updated_at - m.created_at) * 1000)::bigint) FILTER (WHERE m.status = 'delivered'), 0)::bigint AS delivery_ms,
        max(m.updated_at) AS updated_at
    FROM moved m
    WHERE m.direction = 'outbound' AND m.status IN ('sent', 'delivered')
    GROUP BY 1, 2, 3, 4
), counted AS (
    UPDATE contact_channels cc
    SET total_attempts = cc.total_attempts + o.attempts,
        success_count = cc.success_count + o.delivered,
        delivered_count = cc.delivered_count + o.delivered,
        total_delivery_ms = cc.total_delivery_ms + o.delivery_ms,
        last_success_at = CASE WHEN o.delivered > 0 THEN o.updated_at ELSE cc.last_success_at END,
        updated_at = o.updated_at
    FROM outcome o
    WHERE cc.project = o.project AND cc.test_mode = o.test_mode AND cc.channel = o.channel AND cc.identifier = o.identifier
    RETURNING cc.id
)
SELECT * FROM moved;

-- name: GetMessagesByIDs :many
-- The messages of a batch dispatch that are still to be handed over, in id order.
SELECT * FROM messages WHERE id = ANY(@ids::text[]) AND status IN ('queued', 'sending')
  AND created_at >= @created_from::timestamptz AND created_at < @created_to::timestamptz
ORDER BY id;

-- name: SenderActivity :one
-- The sender's traffic of the last 24 hours: one index range per sender.
SELECT
    count(*) FILTER (WHERE m.direction = 'outbound')::bigint AS outbound,
    count(*) FILTER (WHERE m.direction = 'inbound')::bigint AS inbound
FROM messages m
WHERE m.project = @project AND m.sender = @sender AND m.created_at > @since;

-- name: SenderLastMessage :one
SELECT id, created_at FROM messages
WHERE project = @project AND sender = @sender AND created_at >= @since::timestamptz
ORDER BY created_at DESC
LIMIT 1;

-- name: FallBackToSMS :one
-- Moves a queued WhatsApp message that its transport refused to SMS, remembering the channel tried.
UPDATE messages
SET channel = 'sms', status = 'queued', originator = @originator, attempted_channels = attempted_channels || channel, updated_at = @updated_at
WHERE id = @id AND status IN ('queued', 'sending') AND channel = 'whatsapp'
  AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id)
RETURNING *;

-- name: GetMessageByProviderID :one
-- A provider's id is unique within the account that issued it: within one sender (a Telegram
-- message id counts per bot and chat). The rows of that provider id are found first, on its
-- index, and only then filtered and ordered: asked for the newest of the sender's rows at once,
-- the planner walks the sender's index backwards whenever a day's partition has no statistics
-- yet (every morning, until it is analyzed), reading all of the sender's messages of the day
-- when the id is new, which is every inbound message.
WITH by_provider_id AS MATERIALIZED (
    SELECT * FROM messages
    WHERE provider_message_id = @provider_message_id AND created_at >= @since::timestamptz AND created_at < @until::timestamptz
)
SELECT * FROM by_provider_id
WHERE project = @project AND test_mode = @test_mode AND sender = @sender
ORDER BY created_at DESC
LIMIT 1;

-- name: MarkInboundRead :one
UPDATE messages SET status = 'read', updated_at = @updated_at
WHERE id = @id AND direction = 'inbound' AND status = 'received'
  AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id)
RETURNING *;

-- name: SandboxInFlight :many
-- Sandbox messages whose next simulated step has been due since before @before (the index
-- messages_sandbox_in_flight holds exactly these rows' predicate).
SELECT id, status, channel, updated_at FROM messages
WHERE provider_message_id LIKE 'sbx\_%' AND (status = 'sent' OR (status = 'delivered' AND channel = 'whatsapp'))
  AND updated_at < @before AND created_at >= @since::timestamptz
ORDER BY updated_at
LIMIT @max_rows;

-- name: StartDispatch :one
-- Records a call to the provider about to be made: the message shows 'sending' and counts the
-- attempt, and names the Provider called (its callbacks may move the message), committed before
-- the call. Returns no row when the message has moved on.
-- A Provider not called before joins attempted_providers; the call's outcome is unknown until
-- MarkProviderRefused says it did not take the message.
UPDATE messages SET status = 'sending', dispatch_attempts = dispatch_attempts + 1, updated_at = @updated_at,
    provider = coalesce(sqlc.narg(provider), provider),
    attempted_providers = CASE WHEN sqlc.narg(provider)::text IS NULL OR sqlc.narg(provider)::text = ANY(attempted_providers)
        THEN attempted_providers ELSE attempted_providers || sqlc.narg(provider)::text END,
    provider_refused = false
WHERE id = @id AND status IN ('queued', 'sending')
  AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id)
RETURNING *;

-- name: MarkProviderRefused :exec
-- The Provider just called proved it did not take the message (docs/providers.md#failover):
-- a retry may hand it to another.
UPDATE messages SET provider_refused = true
WHERE id = @id AND status = 'sending'
  AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);

-- name: GetLiveMessageThrough :one
-- The live message a provider's callback names by the provider's id, among those sent through
-- the Provider it came through (@provider, "namespace/name"). A message sent before Providers
-- were recorded counts as sent through it when it is of @project, the one project the Provider
-- serves, or when @project is '' (an installation Provider).
SELECT * FROM messages
WHERE provider_message_id = @provider_message_id AND NOT test_mode
  AND (provider = @provider OR (provider IS NULL AND (@project::text = '' OR project = @project::text)))
  AND created_at >= @since::timestamptz AND created_at < @until::timestamptz
ORDER BY created_at DESC
LIMIT 1;

-- name: OptOut :exec
INSERT INTO opt_outs (project, test_mode, originator, recipient, created_at)
VALUES (@project, @test_mode, @originator, @recipient, @created_at)
ON CONFLICT DO NOTHING;

-- name: OptIn :exec
DELETE FROM opt_outs WHERE project = @project AND test_mode = @test_mode AND originator = @originator AND recipient = @recipient;

-- name: IsOptedOut :one
-- An erased recipient's opt-out is kept under its token (switchboard_erased).
SELECT EXISTS (SELECT 1 FROM opt_outs
               WHERE project = @project AND test_mode = @test_mode AND originator = @originator
                 AND recipient = ANY(ARRAY[@recipient::text, switchboard_erased(@project, @recipient::text)]));

-- name: OptedOutAmong :many
-- Which of the (originator, recipient) pairs have opted out: IsOptedOut for a batch.
SELECT p.originator::text AS originator, p.recipient::text AS recipient FROM opt_outs o
JOIN (SELECT unnest(@originators::text[]) AS originator, unnest(@recipients::text[]) AS recipient) p
  ON p.originator = o.originator AND o.recipient = ANY(ARRAY[p.recipient, switchboard_erased(@project, p.recipient)])
WHERE o.project = @project AND o.test_mode = @test_mode;

-- name: AwaitingReceipt :many
-- The live messages a sender sent a contact on a channel up to a time that are still in one of
-- statuses: what a receipt by time (Messenger's watermark) covers.
SELECT provider_message_id::text FROM messages
WHERE project = @project AND sender = @sender AND test_mode = false AND direction = 'outbound'
  AND channel = @channel AND recipient = @recipient AND provider_message_id IS NOT NULL
  AND status = ANY(@statuses::text[]) AND created_at <= @up_to AND created_at >= @since::timestamptz
ORDER BY created_at
LIMIT 1000;

-- name: StaleSentMessages :many
-- Live messages on @channels (those whose Provider can be asked) sent through a Provider whose
-- report has not come: first @first_before (the newest), then, asked once, @second_before, then
-- @third_before; at most @max, oldest first.
-- messages_live_sent holds exactly the rows of the first three conditions.
SELECT * FROM messages
WHERE status = 'sent' AND NOT test_mode AND provider IS NOT NULL
  AND channel = ANY(@channels::text[])
  AND updated_at < @first_before::timestamptz
  AND updated_at < CASE status_checks WHEN 0 THEN @first_before::timestamptz WHEN 1 THEN @second_before::timestamptz
                                      ELSE @third_before::timestamptz END
  AND status_checks < 3
  AND created_at >= @since::timestamptz
ORDER BY updated_at
LIMIT @max;

-- name: CountStatusCheck :exec
UPDATE messages SET status_checks = status_checks + 1
WHERE id = @id AND status = 'sent'
  AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);
