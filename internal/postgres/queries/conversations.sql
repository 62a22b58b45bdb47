-- name: RecordMessage :batchone
-- Stores a message and records it in its conversation, in one statement: the conversation is
-- created with its first message and brought up to date by each later one. inbound_count is 1
-- for the contact's first message in it. An inbound message counts as unread, opens the WhatsApp
-- window (whatsapp_window_until), brings the contact's profile name and the ad referral of the
-- thread's first message, and keeps its day under the address it came to (inbound_days); an
-- outbound one ends a typing indicator.
WITH m AS (
    INSERT INTO messages (id, project, test_mode, sender, direction, channel, message_type, status, recipient, originator,
                          body, content, subject, metadata, options, conversation_id, provider_message_id,
                          provider_timestamp, broadcast_contact_id, risk_reviewed, cost_micros, cost_provider_micros,
                          charged_micros, created_at, updated_at)
    VALUES (@id, @project, @test_mode, @sender, @direction, @channel, @message_type, @status, @recipient, @originator,
            sqlc.narg(body), sqlc.narg(content), sqlc.narg(subject), sqlc.narg(metadata), sqlc.narg(options),
            @conversation_id, sqlc.narg(provider_message_id), sqlc.narg(provider_timestamp), sqlc.narg(broadcast_contact_id),
            @risk_reviewed, sqlc.narg(cost_micros), sqlc.narg(cost_provider_micros), sqlc.narg(charged_micros),
            @created_at, @created_at)
    RETURNING id, project, test_mode, sender, channel, direction, body, created_at
), inbound_day AS (
    -- An inbound message's day under the address it came to (GET /v1/messages?to= reads it);
    -- an outbound one's is its conversation's.
    INSERT INTO inbound_days (project, test_mode, recipient, day)
    SELECT m.project, m.test_mode, @recipient_key::text, (m.created_at AT TIME ZONE 'UTC')::date
    FROM m WHERE m.direction = 'inbound'
    ON CONFLICT DO NOTHING
)
INSERT INTO conversations AS c (id, project, test_mode, sender, contact_identifier, address, contact_id, channels, message_count,
                                unread_count, inbound_count, last_message_id, last_message_at, last_message_channel,
                                last_message_direction, last_message_text, profile_name, referral,
                                whatsapp_window_until, message_days, message_days_from, created_at, updated_at)
SELECT @conversation_id::text AS id, m.project AS project, m.test_mode AS test_mode, m.sender AS sender,
       @contact_identifier::text AS contact_identifier, @address::text AS address,
       coalesce(sqlc.narg(contact_id)::text, (SELECT cc.contact_id FROM contact_channels cc
                 WHERE cc.project = m.project AND cc.test_mode = m.test_mode
                   AND cc.channel = ANY(@contact_channels::text[]) AND cc.identifier = @contact_identifier::text
                 ORDER BY cc.created_at LIMIT 1)) AS contact_id,
       ARRAY[m.channel] AS channels, 1 AS message_count, @unread::bigint AS unread_count, @unread::bigint AS inbound_count,
       m.id AS last_message_id, m.created_at AS last_message_at, m.channel AS last_message_channel,
       m.direction AS last_message_direction, m.body AS last_message_text, sqlc.narg(profile_name)::text AS profile_name,
       sqlc.narg(referral)::jsonb AS referral, sqlc.narg(whatsapp_window_until)::timestamptz AS whatsapp_window_until,
       ARRAY[(m.created_at AT TIME ZONE 'UTC')::date] AS message_days, m.created_at AS message_days_from,
       m.created_at AS created_at, m.created_at AS updated_at
FROM m
ON CONFLICT (id) DO UPDATE SET
    contact_id = coalesce(c.contact_id, excluded.contact_id),
    address = CASE WHEN excluded.address = '' THEN c.address ELSE excluded.address END,
    channels = CASE WHEN excluded.last_message_channel = ANY(c.channels) THEN c.channels
                    ELSE c.channels || excluded.last_message_channel END,
    message_count = c.message_count + 1,
    -- The message's day is added when new (a day's later messages leave the array as it is);
    -- a conversation that kept no days before begins keeping them with this message.
    message_days = CASE WHEN c.message_days_from IS NULL THEN excluded.message_days
                        WHEN excluded.message_days[1] = ANY(c.message_days) THEN c.message_days
                        ELSE c.message_days || excluded.message_days END,
    message_days_from = coalesce(c.message_days_from, excluded.message_days_from),
    unread_count = c.unread_count + excluded.unread_count,
    inbound_count = c.inbound_count + excluded.inbound_count,
    last_message_id = excluded.last_message_id,
    last_message_at = excluded.last_message_at,
    last_message_channel = excluded.last_message_channel,
    last_message_direction = excluded.last_message_direction,
    last_message_text = excluded.last_message_text,
    profile_name = coalesce(excluded.profile_name, c.profile_name),
    referral = coalesce(c.referral, excluded.referral),
    whatsapp_window_until = greatest(c.whatsapp_window_until, excluded.whatsapp_window_until),
    typing_until = CASE WHEN excluded.last_message_direction = 'outbound' THEN NULL ELSE c.typing_until END,
    updated_at = excluded.updated_at
RETURNING c.contact_id, c.inbound_count;

-- name: ConversationWindow :one
-- The end of the WhatsApp 24-hour window of a conversation (null: never opened).
SELECT whatsapp_window_until FROM conversations WHERE id = @id;

-- name: GetConversation :one
SELECT * FROM conversations WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: ListConversations :many
SELECT * FROM conversations
WHERE project = @project AND test_mode = @test_mode
  AND (sqlc.narg(channel)::text IS NULL OR sqlc.narg(channel)::text = ANY(channels))
  AND (sqlc.narg(sender)::text IS NULL OR sender = sqlc.narg(sender))
  AND (sqlc.narg(address)::text IS NULL OR address = sqlc.narg(address))
  AND (sqlc.narg(search)::text IS NULL OR contact_identifier ILIKE '%' || sqlc.narg(search) || '%'
       OR profile_name ILIKE '%' || sqlc.narg(search) || '%' OR last_message_text ILIKE '%' || sqlc.narg(search) || '%')
  AND (sqlc.narg(before_time)::timestamptz IS NULL
       OR (last_message_at, id) < (sqlc.narg(before_time)::timestamptz, sqlc.narg(before_id)::text))
ORDER BY last_message_at DESC, id DESC
LIMIT @page_size;

-- name: ListConversationMessages :many
-- A page reads the spans [froms[i], tos[i]) the caller chose (partition.OnDays: the days that
-- hold the conversation's messages), up to partition.MaxSpans of them in one statement. The
-- bounds are parameters: a planned statement folds each array element to a constant and reads
-- only the partitions the spans cover; an element past the arrays' end is NULL and reads none.
SELECT * FROM messages
WHERE conversation_id = @conversation_id AND project = @project AND test_mode = @test_mode
  AND ((created_at >= (@froms::timestamptz[])[1] AND created_at < (@tos::timestamptz[])[1])
    OR (created_at >= (@froms::timestamptz[])[2] AND created_at < (@tos::timestamptz[])[2])
    OR (created_at >= (@froms::timestamptz[])[3] AND created_at < (@tos::timestamptz[])[3])
    OR (created_at >= (@froms::timestamptz[])[4] AND created_at < (@tos::timestamptz[])[4])
    OR (created_at >= (@froms::timestamptz[])[5] AND created_at < (@tos::timestamptz[])[5])
    OR (created_at >= (@froms::timestamptz[])[6] AND created_at < (@tos::timestamptz[])[6])
    OR (created_at >= (@froms::timestamptz[])[7] AND created_at < (@tos::timestamptz[])[7])
    OR (created_at >= (@froms::timestamptz[])[8] AND created_at < (@tos::timestamptz[])[8]))
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time)::timestamptz, sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @page_size;

-- name: ReadConversation :one
-- Marks every message of the conversation read: the unread count goes back to 0.
UPDATE conversations SET unread_count = 0, updated_at = @updated_at
WHERE id = @id AND project = @project AND test_mode = @test_mode
RETURNING *;

-- name: StartTyping :exec
UPDATE conversations SET typing_until = @until WHERE id = @id;

-- name: FindContactChannel :one
SELECT contact_id FROM contact_channels
WHERE project = @project AND test_mode = @test_mode AND channel = @channel AND identifier = @identifier;

-- name: InsertInboundContact :exec
INSERT INTO contacts (id, project, test_mode, profile_name, created_at, updated_at)
VALUES (@id, @project, @test_mode, sqlc.narg(profile_name), @at, @at);

-- name: InsertInboundContactChannel :one
-- Gives a new contact the address it wrote from; when a concurrent message created it first,
-- nothing is inserted and no row returns.
INSERT INTO contact_channels (id, contact_id, project, test_mode, channel, identifier, is_primary, last_inbound_at,
                              created_at, updated_at)
VALUES (@id, @contact_id, @project, @test_mode, @channel, @identifier, true, @at::timestamptz, @at, @at)
ON CONFLICT (project, test_mode, channel, identifier) DO NOTHING
RETURNING contact_id;

-- name: DeleteContactRow :exec
DELETE FROM contacts WHERE id = @id;

-- name: NoteInbound :exec
-- The contact wrote from this address now; its profile name is the provider's latest.
WITH ch AS (
    UPDATE contact_channels cc SET last_inbound_at = @at, updated_at = @at
    WHERE cc.project = @project AND cc.test_mode = @test_mode AND cc.channel = @channel AND cc.identifier = @identifier
    RETURNING cc.contact_id
)
UPDATE contacts ct SET profile_name = coalesce(sqlc.narg(profile_name), ct.profile_name), updated_at = @at
WHERE ct.id IN (SELECT contact_id FROM ch);
