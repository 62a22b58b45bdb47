-- name: InsertBroadcast :one
INSERT INTO broadcasts (id, project, test_mode, name, channel, message_type, text, content, email_subject, email_html_body,
    unsubscribe_url, sender_id, metadata, status, idempotency_key, scheduled_at, created_at, updated_at)
VALUES (@id, @project, @test_mode, @name, @channel, @message_type, @text, @content, @email_subject, @email_html_body,
    @unsubscribe_url, @sender_id, @metadata, 'draft', @idempotency_key, @scheduled_at, @now, @now)
ON CONFLICT (project, test_mode, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING *;

-- name: BroadcastByIdempotencyKey :one
SELECT * FROM broadcasts WHERE project = @project AND test_mode = @test_mode AND idempotency_key = @idempotency_key;

-- name: Broadcast :one
SELECT * FROM broadcasts WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: BroadcastForUpdate :one
SELECT * FROM broadcasts WHERE id = @id AND project = @project AND test_mode = @test_mode FOR UPDATE;

-- name: Broadcasts :many
-- A project's broadcasts of a mode, oldest first from after a position; one status's when
-- status is not empty.
SELECT * FROM broadcasts
WHERE project = @project AND test_mode = @test_mode AND (@status::text = '' OR status = @status)
    AND (created_at, id) > (@after_time::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: UpdateBroadcastDraft :one
UPDATE broadcasts SET name = @name, text = @text, content = @content, email_subject = @email_subject,
    email_html_body = @email_html_body, unsubscribe_url = @unsubscribe_url, metadata = @metadata, updated_at = @now
WHERE id = @id
RETURNING *;

-- name: DeleteBroadcast :exec
-- Deletes a broadcast and its recipients.
WITH recipients AS (
    DELETE FROM broadcast_contacts WHERE broadcast_id = @id::text AND broadcast_at = switchboard_id_at(@id::text)
)
DELETE FROM broadcasts WHERE id = @id::text;

-- name: AddBroadcastContacts :many
-- Adds recipients; one already in the broadcast is not added again (and not returned). Their
-- creation times are a microsecond apart, so they list in the order they were given. They lie
-- in their broadcast's partition (broadcast_at: the time its id carries).
INSERT INTO broadcast_contacts (id, broadcast_id, broadcast_at, recipient, recipient_type, status, template_variables,
    template_header_variables, template_button_variables, variable_lengths, created_at)
SELECT unnest(@ids::text[]), @broadcast_id, switchboard_id_at(@broadcast_id), unnest(@recipients::text[]), unnest(@recipient_types::text[]), 'pending',
    unnest(@template_variables::jsonb[]), unnest(@template_header_variables::jsonb[]), unnest(@template_button_variables::jsonb[]),
    unnest(@variable_lengths::jsonb[]), unnest(@created_at::timestamptz[])
ON CONFLICT (broadcast_id, recipient, broadcast_at) DO NOTHING
RETURNING id;

-- name: CountDraftContacts :one
-- Adds n (negative: takes) to a draft's contact counts (all pending until it is sent) and
-- returns its total. The caller holds the draft's lock, so the counts stay its recipients'.
UPDATE broadcasts SET total_contacts = total_contacts + @n::integer, pending_count = pending_count + @n::integer, updated_at = @now
WHERE id = @id
RETURNING total_contacts;

-- name: BroadcastContacts :many
SELECT * FROM broadcast_contacts
WHERE broadcast_id = @broadcast_id AND broadcast_at = switchboard_id_at(@broadcast_id) AND (@status::text = '' OR status = @status)
    AND (created_at, id) > (@after_time::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @max_rows;

-- name: DeleteBroadcastContact :one
DELETE FROM broadcast_contacts WHERE id = @id AND broadcast_id = @broadcast_id AND broadcast_at = switchboard_id_at(@broadcast_id) RETURNING id;

-- name: SetBroadcastStatus :one
-- Moves a broadcast to a status (with the review it had, when it had one).
UPDATE broadcasts SET status = @status, review_attempts = review_attempts + @add_attempts::integer,
    review_result = COALESCE(@review_result, review_result), scheduled_at = COALESCE(@scheduled_at, scheduled_at),
    completed_at = CASE WHEN @status IN ('completed', 'cancelled', 'failed') THEN @now ELSE completed_at END,
    paused_until = CASE WHEN @status = 'paused' THEN paused_until END,
    pause_reason = CASE WHEN @status = 'paused' THEN pause_reason END,
    updated_at = @now
WHERE id = @id
RETURNING *;

-- name: SkipPendingBroadcastContacts :one
-- A cancelled broadcast's recipients not yet handed to the send path are skipped; returns how
-- many (the caller counts them on the broadcast).
WITH skipped AS (
    UPDATE broadcast_contacts SET status = 'skipped', processed_at = @now::timestamptz
    WHERE broadcast_id = @id AND broadcast_at = switchboard_id_at(@id) AND status = 'pending'
    RETURNING 1
)
SELECT count(*)::integer FROM skipped;

-- name: ReschedulePendingBroadcast :one
UPDATE broadcasts SET scheduled_at = @scheduled_at, updated_at = @now WHERE id = @id RETURNING *;

-- name: BroadcastByID :one
SELECT * FROM broadcasts WHERE id = @id;

-- name: LockBroadcast :one
SELECT * FROM broadcasts WHERE id = @id FOR UPDATE;

-- name: BroadcastsAwaitingOperator :many
-- Broadcasts waiting for an operator: held by review, or escalated; every project's when project
-- is empty.
SELECT * FROM broadcasts
WHERE status IN ('pending_review', 'escalated') AND (@project::text = '' OR project = @project)
ORDER BY updated_at
LIMIT @max_rows;

-- name: BroadcastPriceGroups :many
-- Prices a broadcast's recipients still to send to without reading them one by one: grouped by
-- the longest of prefixes their number starts with ('+' matches every number; none, '': not
-- priced) and by the length their text's placeholders take once filled in. Those are names, in
-- the text's order and as often as it has them; each takes the length of the recipient's value,
-- kept when the recipient was added ([septets, units, gsm]), or the placeholder's own as written
-- (raw_*) when the recipient has no value for it. Numbers are first grouped by their first
-- head_len characters (the longest prefix's length, so that they decide the prefix), and the
-- prefixes matched once a group. Recipients added before the lengths were kept are
-- BroadcastUnmeasuredTexts' when names matter.
WITH heads AS (
    SELECT left(c.recipient, @head_len::integer) AS head, s.gsm, s.septets, s.units, count(*) AS n
    FROM broadcast_contacts c
    CROSS JOIN LATERAL (
        SELECT coalesce(bool_and(coalesce((c.variable_lengths -> (@names::text[])[i] ->> 2)::integer = 1, (@raw_gsm::boolean[])[i])), true) AS gsm,
            coalesce(sum(coalesce((c.variable_lengths -> (@names::text[])[i] ->> 0)::integer, (@raw_septets::integer[])[i])), 0) AS septets,
            coalesce(sum(coalesce((c.variable_lengths -> (@names::text[])[i] ->> 1)::integer, (@raw_units::integer[])[i])), 0) AS units
        FROM generate_series(1, cardinality(@names::text[])) AS i
    ) s
    WHERE c.broadcast_id = @broadcast_id AND c.broadcast_at = switchboard_id_at(@broadcast_id) AND c.status = 'pending'
      AND (cardinality(@names::text[]) = 0 OR c.template_variables IS NULL OR c.variable_lengths IS NOT NULL)
    GROUP BY 1, 2, 3, 4
)
SELECT coalesce(m.prefix, '')::text AS prefix, h.gsm::boolean AS gsm, h.septets::bigint AS septets, h.units::bigint AS units,
    sum(h.n)::bigint AS n
FROM heads h
LEFT JOIN LATERAL (
    SELECT p AS prefix FROM unnest(@prefixes::text[]) AS p
    WHERE p = '+' OR starts_with(h.head, p)
    ORDER BY length(p) DESC
    LIMIT 1
) m ON true
GROUP BY 1, 2, 3, 4;

-- name: BroadcastUnmeasuredTexts :many
-- The recipients still to send to whose variables' lengths were not kept (added before they
-- were), to price one by one.
SELECT recipient, template_variables FROM broadcast_contacts
WHERE broadcast_id = @broadcast_id AND broadcast_at = switchboard_id_at(@broadcast_id) AND status = 'pending' AND template_variables IS NOT NULL AND variable_lengths IS NULL;

-- name: SetBroadcastEstimate :exec
UPDATE broadcasts SET estimated_cost_micros = @estimated_cost_micros WHERE id = @id;

-- name: DueBroadcasts :many
-- Broadcasts the fan-out starts now: approved ones, and scheduled ones whose time has come.
SELECT id FROM broadcasts
WHERE status IN ('approved', 'scheduled') AND coalesce(scheduled_at, '-infinity'::timestamptz) <= @now::timestamptz
ORDER BY updated_at
LIMIT 20;

-- name: SendingBroadcasts :many
-- Broadcasts with recipients still to hand to the send path, and paused ones whose pause may be
-- over; least recently served first, so that each gets its turn.
SELECT id, project, test_mode, status, paused_until FROM broadcasts
WHERE (status = 'sending' AND pending_count > 0) OR status = 'paused'
ORDER BY updated_at
LIMIT 200;

-- name: StartBroadcast :one
-- Records a broadcast's start (the first one) and what it reserved; the status moves apart.
UPDATE broadcasts SET started_at = coalesce(started_at, @now), reserved_micros = coalesce(reserved_micros, sqlc.narg(reserved_micros)),
    actual_cost_micros = coalesce(actual_cost_micros, 0), updated_at = @now
WHERE id = @id
RETURNING *;

-- name: PendingBroadcastContacts :many
-- The next recipients to hand to the send path, oldest first from after a position (the zero
-- time: from the first); one another fan-out holds is passed over. The pending index keeps an
-- entry for every recipient handed over until vacuum removes it, so a claim from the first
-- steps over all of those: the fan-out claims from where its last chunk ended (claim.go).
SELECT * FROM broadcast_contacts
WHERE broadcast_id = @broadcast_id AND broadcast_at = switchboard_id_at(@broadcast_id) AND status = 'pending'
    AND (created_at, id) > (@after_time::timestamptz, @after_id::text)
ORDER BY created_at, id
LIMIT @max_rows
FOR UPDATE SKIP LOCKED;

-- name: QueueBroadcastContacts :exec
-- Recipients of one broadcast handed to the send path: queued with their message, or failed
-- with why not.
UPDATE broadcast_contacts bc
SET status = u.status, message_id = nullif(u.message_id, ''), cost_micros = nullif(u.cost, -1), error_code = nullif(u.error_code, ''),
    error_message = nullif(u.error_message, ''), processed_at = @now::timestamptz
FROM (SELECT unnest(@ids::text[]) AS id, unnest(@statuses::text[]) AS status, unnest(@message_ids::text[]) AS message_id,
             unnest(@costs::bigint[]) AS cost, unnest(@error_codes::text[]) AS error_code,
             unnest(@error_messages::text[]) AS error_message) AS u
-- The ids again (here and below): the rows are found by key whatever the planner thinks of a
-- partition not analyzed yet, never by a scan of it for each recipient.
WHERE bc.id = ANY(@ids::text[]) AND bc.id = u.id AND bc.broadcast_id = @broadcast_id AND bc.broadcast_at = switchboard_id_at(@broadcast_id) AND bc.status = 'pending';

-- name: FollowBroadcastContacts :many
-- Moves recipients along with their messages (queued, sending, delivered, failed), forward
-- only, and returns each move with the status it left: the message's lock orders the moves of
-- one recipient, so the joined row is the one this statement changes. [broadcast_from,
-- broadcast_to) bounds the recipients' partitions (partition.Bounds of their ids, which carry
-- their broadcasts' time).
UPDATE broadcast_contacts bc
SET status = u.status, error_code = coalesce(nullif(u.error_code, ''), bc.error_code),
    error_message = coalesce(nullif(u.error_message, ''), bc.error_message), cost_micros = nullif(u.cost, -1), processed_at = @now::timestamptz
FROM (SELECT unnest(@ids::text[]) AS id, unnest(@statuses::text[]) AS status, unnest(@error_codes::text[]) AS error_code,
             unnest(@error_messages::text[]) AS error_message, unnest(@costs::bigint[]) AS cost) AS u,
     broadcast_contacts old
WHERE bc.id = ANY(@ids::text[]) AND old.id = ANY(@ids::text[]) AND bc.id = u.id AND old.id = bc.id
    AND bc.broadcast_at >= @broadcast_from::timestamptz AND bc.broadcast_at < @broadcast_to::timestamptz
    AND old.broadcast_at >= @broadcast_from::timestamptz AND old.broadcast_at < @broadcast_to::timestamptz
    AND bc.status <> u.status AND bc.status NOT IN ('delivered', 'failed', 'skipped')
    AND NOT (bc.status = 'sending' AND u.status = 'queued')
RETURNING bc.broadcast_id, old.status AS old_status, bc.status AS new_status, coalesce(old.cost_micros, 0)::bigint AS old_cost,
    coalesce(bc.cost_micros, 0)::bigint AS new_cost;

-- name: CountBroadcast :one
-- Adds to a broadcast's counters and costs (the recipients that moved), and releases what it
-- no longer needs reserved.
UPDATE broadcasts
SET pending_count = pending_count + @pending::integer, queued_count = queued_count + @queued::integer,
    sending_count = sending_count + @sending::integer, delivered_count = delivered_count + @delivered::integer,
    failed_count = failed_count + @failed::integer, skipped_count = skipped_count + @skipped::integer,
    actual_cost_micros = CASE WHEN @cost::bigint = 0 THEN actual_cost_micros ELSE coalesce(actual_cost_micros, 0) + @cost::bigint END,
    reserved_micros = CASE WHEN reserved_micros IS NULL THEN NULL ELSE reserved_micros - @released::bigint END,
    updated_at = @now
WHERE id = @id
RETURNING *;

-- name: PauseBroadcast :one
-- Pauses a broadcast that is starting or sending until a time, for a reason.
UPDATE broadcasts SET status = 'paused', paused_until = @paused_until, pause_reason = @pause_reason, updated_at = @now
WHERE id = @id AND status IN ('approved', 'scheduled', 'sending', 'paused')
RETURNING *;

-- name: EnsurePace :exec
INSERT INTO broadcast_paces (key, next_at) VALUES (@pace_key, @now) ON CONFLICT (key) DO NOTHING;

-- name: LockPace :one
SELECT next_at FROM broadcast_paces WHERE key = @pace_key FOR UPDATE;

-- name: SetPace :exec
UPDATE broadcast_paces SET next_at = @next_at WHERE key = @pace_key;

-- name: AddBroadcastDeltas :exec
INSERT INTO broadcast_deltas (broadcast_id, pending, queued, sending, delivered, failed, skipped, cost_micros, released)
SELECT unnest(@broadcast_ids::text[]), unnest(@pending::integer[]), unnest(@queued::integer[]), unnest(@sending::integer[]),
    unnest(@delivered::integer[]), unnest(@failed::integer[]), unnest(@skipped::integer[]), unnest(@costs::bigint[]),
    unnest(@released::bigint[]);

-- name: BroadcastsWithDeltas :many
-- Broadcasts with changes to fold, whatever their status (receipts arrive after completion).
SELECT DISTINCT broadcast_id FROM broadcast_deltas LIMIT 200;

-- name: TakeBroadcastDeltas :one
-- Removes a broadcast's unfolded changes and returns their sum, for the caller to fold into it in
-- the same transaction. Two folds never take one change: the second waits, then finds it gone.
WITH taken AS (
    DELETE FROM broadcast_deltas WHERE broadcast_id = @broadcast_id RETURNING *
)
SELECT count(*)::integer AS n, coalesce(sum(pending), 0)::integer AS pending, coalesce(sum(queued), 0)::integer AS queued,
    coalesce(sum(sending), 0)::integer AS sending, coalesce(sum(delivered), 0)::integer AS delivered,
    coalesce(sum(failed), 0)::integer AS failed, coalesce(sum(skipped), 0)::integer AS skipped,
    coalesce(sum(cost_micros), 0)::bigint AS cost, coalesce(sum(released), 0)::bigint AS released
FROM taken;

-- name: BroadcastDeltaSums :many
-- The unfolded changes of broadcasts, summed: what a read adds to their counters.
SELECT broadcast_id, coalesce(sum(pending), 0)::integer AS pending, coalesce(sum(queued), 0)::integer AS queued,
    coalesce(sum(sending), 0)::integer AS sending, coalesce(sum(delivered), 0)::integer AS delivered,
    coalesce(sum(failed), 0)::integer AS failed, coalesce(sum(skipped), 0)::integer AS skipped,
    coalesce(sum(cost_micros), 0)::bigint AS cost, coalesce(sum(released), 0)::bigint AS released
FROM broadcast_deltas WHERE broadcast_id = ANY(@ids::text[])
GROUP BY broadcast_id;

-- name: CountMarketingEmails :one
-- Counts a project's live broadcast emails of a month and returns the count with them.
INSERT INTO marketing_emails (project, month, sent) VALUES (@project, @month, @sent)
ON CONFLICT (project, month) DO UPDATE SET sent = marketing_emails.sent + excluded.sent
RETURNING sent;

-- name: UnsubscribeRecipient :one
-- The broadcast email recipient an unsubscribe token names, with its project and mode, and when
-- its mail went (or, until it has, when it was added).
SELECT bc.id, bc.recipient, bc.broadcast_id, b.project, b.test_mode, COALESCE(bc.processed_at, bc.created_at)::timestamptz AS sent_at
FROM broadcast_contacts bc JOIN broadcasts b ON b.id = bc.broadcast_id
WHERE bc.id = @id AND bc.broadcast_at = switchboard_id_at(@id) AND bc.recipient_type = 'email' AND b.channel = 'email';

-- name: PaceAt :one
-- When the next message from a paced address may go (no row: now).
SELECT next_at FROM broadcast_paces WHERE key = @pace_key;

-- name: TakePaceSlot :one
-- Takes the next slot of a paced address for one single send, shared with its broadcasts: the
-- send goes at the returned time, and the next one step_seconds after it.
INSERT INTO broadcast_paces (key, next_at)
VALUES (sqlc.arg(pace_key), sqlc.arg(now)::timestamptz + make_interval(secs => sqlc.arg(step_seconds)::float8))
ON CONFLICT (key) DO UPDATE
SET next_at = greatest(broadcast_paces.next_at, sqlc.arg(now)::timestamptz) + make_interval(secs => sqlc.arg(step_seconds)::float8)
RETURNING (next_at - make_interval(secs => sqlc.arg(step_seconds)::float8))::timestamptz AS slot;

-- name: BroadcastSendCurve :many
-- How a broadcast's recipients were processed over time (the console's chart): per bucket of
-- @bucket_seconds and status, from its own partition; nothing for another project's broadcast.
SELECT to_timestamp(floor(extract(epoch FROM processed_at) / @bucket_seconds::float8) * @bucket_seconds::float8)::timestamptz AS at,
       status, count(*)::bigint AS recipients
FROM broadcast_contacts
WHERE broadcast_id = @broadcast_id AND broadcast_at = switchboard_id_at(@broadcast_id) AND processed_at IS NOT NULL
  AND EXISTS (SELECT 1 FROM broadcasts b WHERE b.id = @broadcast_id AND b.project = @project AND b.test_mode = @test_mode)
GROUP BY 1, 2
ORDER BY 1, 2;
