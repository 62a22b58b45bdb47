-- Contacts and their channels. Every read names the project and mode: a key sees only its own.
-- The delivery counters of contact_channels are written by the message lifecycle; these
-- queries only read them, and move them with their channel on a merge.

-- name: InsertContact :exec
INSERT INTO contacts (id, project, test_mode, display_name, default_channel, metadata, tags, created_at, updated_at)
VALUES (@id, @project, @test_mode, sqlc.narg(display_name), sqlc.narg(default_channel), @metadata, @tags, @created_at,
        @created_at);

-- name: InsertContactChannel :one
-- Adds an address to a contact, unless the project's mode already has the identifier on that
-- channel: then nothing is inserted and no row is returned (the unique constraint decides).
INSERT INTO contact_channels (id, contact_id, project, test_mode, channel, identifier, is_primary, country_code, label,
                              created_at, updated_at)
VALUES (@id, @contact_id, @project, @test_mode, @channel, @identifier, @is_primary, sqlc.narg(country_code),
        sqlc.narg(label), @created_at, @created_at)
ON CONFLICT (project, test_mode, channel, identifier) DO NOTHING
RETURNING *;

-- name: ChannelHolder :one
-- The contact that holds identifier on channel in the project's mode.
SELECT contact_id FROM contact_channels
WHERE project = @project AND test_mode = @test_mode AND channel = @channel AND identifier = @identifier;

-- name: GetContact :one
SELECT * FROM contacts WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: LockContact :one
-- Reads a contact and holds it until the transaction ends, so changes to its channels are serial.
SELECT * FROM contacts WHERE id = @id AND project = @project AND test_mode = @test_mode FOR UPDATE;

-- name: ListContacts :many
-- A page of contacts, newest first. phone matches any phone channel (sms, whatsapp, voice);
-- pattern is an ILIKE pattern over the display name, the profile name and every identifier;
-- tags must all be carried.
SELECT c.* FROM contacts c
WHERE c.project = @project AND c.test_mode = @test_mode
  AND (sqlc.narg(phone)::text IS NULL OR c.id IN (
        SELECT ch.contact_id FROM contact_channels ch
        WHERE ch.project = @project AND ch.test_mode = @test_mode AND ch.channel IN ('sms', 'whatsapp', 'voice')
          AND ch.identifier = sqlc.narg(phone)::text))
  AND (sqlc.narg(pattern)::text IS NULL
        OR c.display_name ILIKE sqlc.narg(pattern)::text
        OR c.profile_name ILIKE sqlc.narg(pattern)::text
        OR EXISTS (SELECT 1 FROM contact_channels ch WHERE ch.contact_id = c.id AND ch.identifier ILIKE sqlc.narg(pattern)::text))
  AND (sqlc.narg(tags)::text[] IS NULL OR c.tags @> sqlc.narg(tags)::text[])
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (c.created_at, c.id) < (sqlc.narg(before_time)::timestamptz, sqlc.narg(before_id)::text))
ORDER BY c.created_at DESC, c.id DESC
LIMIT @page_size;

-- name: UnknownTags :many
-- The tags of the list that no contact of the project's mode carries.
SELECT u.tag::text AS tag FROM unnest(@tags::text[]) AS u(tag)
WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.project = @project AND c.test_mode = @test_mode AND c.tags @> ARRAY[u.tag]);

-- name: ContactByPhone :one
-- The contact that holds phone on a phone channel: on sms first, then whatsapp, then voice.
SELECT c.* FROM contacts c
JOIN contact_channels ch ON ch.contact_id = c.id
WHERE ch.project = @project AND ch.test_mode = @test_mode AND ch.channel IN ('sms', 'whatsapp', 'voice')
  AND ch.identifier = @phone
ORDER BY array_position(ARRAY['sms', 'whatsapp', 'voice']::text[], ch.channel), c.created_at, c.id
LIMIT 1;

-- name: ListContactChannels :many
-- The channels of the given contacts, each contact's in the order they were added.
SELECT * FROM contact_channels WHERE contact_id = ANY(@contact_ids::text[]) ORDER BY contact_id, created_at, id;

-- name: UpdateContact :one
-- Writes every field a caller or a merge changes; the caller holds the row (LockContact).
UPDATE contacts
SET display_name = sqlc.narg(display_name), profile_name = sqlc.narg(profile_name),
    default_channel = sqlc.narg(default_channel), metadata = @metadata, tags = @tags, verified = @verified,
    updated_at = @updated_at
WHERE id = @id
RETURNING *;

-- name: TouchContact :exec
UPDATE contacts SET updated_at = @updated_at WHERE id = @id;

-- name: DeleteContact :execrows
-- The contact, and the flows its conversations were in the middle of.
WITH sessions AS (
    DELETE FROM agent_flow_sessions WHERE conversation_id IN (
        SELECT v.id FROM conversations v JOIN contacts c ON c.id = v.contact_id
        WHERE c.id = @id AND c.project = @project AND c.test_mode = @test_mode)
)
DELETE FROM contacts ct WHERE ct.id = @id AND ct.project = @project AND ct.test_mode = @test_mode;

-- name: GetContactChannel :one
SELECT * FROM contact_channels WHERE id = @id AND contact_id = @contact_id;

-- name: UpdateContactChannel :one
UPDATE contact_channels
SET label = sqlc.narg(label), metadata = @metadata, verified = @verified, updated_at = @updated_at
WHERE id = @id AND contact_id = @contact_id
RETURNING *;

-- name: DeleteContactChannel :one
DELETE FROM contact_channels WHERE id = @id AND contact_id = @contact_id RETURNING *;

-- name: SetPrimaryChannel :exec
-- Makes id the one primary channel of its type on the contact.
UPDATE contact_channels
SET is_primary = (id = @id), updated_at = @updated_at
WHERE contact_id = @contact_id AND channel = @channel AND is_primary <> (id = @id);

-- name: PromoteOldestChannel :exec
-- Makes the contact's oldest channel of a type its primary one (after the primary was removed).
UPDATE contact_channels SET is_primary = true, updated_at = @updated_at
WHERE id = (SELECT o.id FROM contact_channels o WHERE o.contact_id = @contact_id AND o.channel = @channel
            ORDER BY o.created_at, o.id LIMIT 1);

-- name: DemoteMergedPrimaries :exec
-- Before a merge: the source's primary channels of a type the target already has a primary of
-- stop being primary, so each type keeps one.
UPDATE contact_channels s SET is_primary = false, updated_at = @updated_at
WHERE s.contact_id = @source AND s.is_primary
  AND EXISTS (SELECT 1 FROM contact_channels t WHERE t.contact_id = @target AND t.channel = s.channel AND t.is_primary);

-- name: FoldMergedChannels :exec
-- Before a merge: the source's channels that are addresses the target already has (the same
-- identifier, or an email address differing only in case, as an inbound message may have
-- stored it) are removed, and their counters added to the target's channel. DELETE ... RETURNING
-- reads each removed row as last committed, so a concurrent metrics update is not lost.
WITH folded AS (
    DELETE FROM contact_channels s
    WHERE s.contact_id = @source
      AND EXISTS (SELECT 1 FROM contact_channels t
                  WHERE t.contact_id = @target AND t.channel = s.channel
                    AND (t.identifier = s.identifier OR (s.channel = 'email' AND lower(t.identifier) = lower(s.identifier))))
    RETURNING s.channel, s.identifier, s.success_count, s.failure_count, s.total_attempts, s.delivered_count,
              s.total_delivery_ms, s.last_success_at, s.last_inbound_at, s.verified
), sums AS (
    -- Each removed channel joins one target channel: the exact match, else the oldest.
    SELECT m.target_id, sum(f.success_count)::bigint AS success_count, sum(f.failure_count)::bigint AS failure_count,
           sum(f.total_attempts)::bigint AS total_attempts, sum(f.delivered_count)::bigint AS delivered_count,
           sum(f.total_delivery_ms)::bigint AS total_delivery_ms, max(f.last_success_at) AS last_success_at,
           max(f.last_inbound_at) AS last_inbound_at, bool_or(f.verified) AS verified
    FROM folded f
    CROSS JOIN LATERAL (
        SELECT t.id AS target_id FROM contact_channels t
        WHERE t.contact_id = @target AND t.channel = f.channel
          AND (t.identifier = f.identifier OR (f.channel = 'email' AND lower(t.identifier) = lower(f.identifier)))
        ORDER BY (t.identifier = f.identifier) DESC, t.created_at, t.id
        LIMIT 1) m
    GROUP BY m.target_id
)
UPDATE contact_channels t
SET success_count = t.success_count + sums.success_count, failure_count = t.failure_count + sums.failure_count,
    total_attempts = t.total_attempts + sums.total_attempts, delivered_count = t.delivered_count + sums.delivered_count,
    total_delivery_ms = t.total_delivery_ms + sums.total_delivery_ms,
    last_success_at = greatest(t.last_success_at, sums.last_success_at),
    last_inbound_at = greatest(t.last_inbound_at, sums.last_inbound_at),
    verified = t.verified OR sums.verified, updated_at = @updated_at
FROM sums
WHERE t.id = sums.target_id;

-- name: MoveContactChannels :exec
UPDATE contact_channels SET contact_id = @target, updated_at = @updated_at WHERE contact_id = @source;

-- name: MoveConversations :exec
UPDATE conversations SET contact_id = @target::text, updated_at = @updated_at
WHERE contact_id = @source::text AND project = @project AND test_mode = @test_mode;

-- name: NameContactIfUnnamed :exec
-- A name from the WhatsApp Business app's contacts, for a contact the project has not named.
UPDATE contacts SET display_name = @display_name, updated_at = @now
WHERE id = @id AND (display_name IS NULL OR display_name = '');
