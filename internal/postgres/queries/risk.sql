-- name: HoldMessage :one
-- Marks a queued message held; no row when it is no longer queued.
UPDATE messages SET risk_hold = true, updated_at = @now
WHERE id = @id AND status = 'queued' AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id)
RETURNING id;

-- name: RecordHold :exec
-- Records a hold once per message: the caller holds the message's row lock (HoldMessage), so a
-- second hold of it waits and then sees the first. Holds are partitioned by held_at, which is
-- after the message was made.
INSERT INTO risk_holds (message_id, project, test_mode, rule, reason, held_at, expires_at)
SELECT @message_id::text, @project, @test_mode, @rule, @reason, @held_at, @expires_at
WHERE NOT EXISTS (SELECT 1 FROM risk_holds WHERE message_id = @message_id::text AND held_at >= switchboard_id_from(@message_id::text));

-- name: OpenHolds :many
-- The holds waiting for a decision, oldest first; every project's when project is empty. An
-- open hold was made within the longest review window (since).
SELECT * FROM risk_holds
WHERE decided_at IS NULL AND held_at >= @since AND (@project::text = '' OR project = @project)
ORDER BY held_at
LIMIT @max_rows;

-- name: DecideHold :one
-- Records the decision on an open hold; no row when there is none (decided already).
UPDATE risk_holds SET decided_at = @now, decision = @decision, decided_by = @decided_by
WHERE message_id = @message_id AND held_at >= switchboard_id_from(@message_id) AND decided_at IS NULL
RETURNING *;

-- name: ReleaseHold :exec
-- An approved message goes on, reviewed.
UPDATE messages SET risk_hold = false, risk_reviewed = true, updated_at = @now WHERE id = @id AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);

-- name: EndHold :exec
UPDATE messages SET risk_hold = false WHERE id = @id AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);

-- name: ExpiredHolds :many
SELECT message_id FROM risk_holds
WHERE decided_at IS NULL AND held_at >= @since AND expires_at <= @now
ORDER BY expires_at
LIMIT @max_rows;

-- name: NewConversationsSince :one
-- How many conversations a project started since a time: its first-contact velocity.
SELECT count(*) FROM conversations WHERE project = @project AND test_mode = @test_mode AND created_at > @since;

-- name: OpenHoldsHeldBefore :many
-- A project's holds waiting for a decision that were made before a time, oldest first.
SELECT message_id FROM risk_holds
WHERE project = @project AND decided_at IS NULL AND held_at >= @since AND held_at < @before
ORDER BY held_at
LIMIT @max_rows;

-- name: OpenURLHolds :many
-- Messages waiting for their URLs' verification (rule url_verification), oldest first.
SELECT h.message_id, h.project, h.test_mode FROM risk_holds h
WHERE h.decided_at IS NULL AND h.held_at >= @since AND h.rule = 'url_verification'
ORDER BY h.held_at
LIMIT @max_rows;
