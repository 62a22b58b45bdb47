-- name: Suspend :one
-- Suspends a project's sending in a mode unless it already is; no row when it was.
INSERT INTO sending_suspensions (project, test_mode, reason, since)
VALUES (@project, @test_mode, @reason, @since)
ON CONFLICT (project, test_mode) WHERE lifted_at IS NULL DO NOTHING
RETURNING id;

-- name: Suspension :one
SELECT * FROM sending_suspensions WHERE project = @project AND test_mode = @test_mode AND lifted_at IS NULL;

-- name: LiftSuspensions :many
UPDATE sending_suspensions SET lifted_at = @now, lifted_by = @lifted_by
WHERE project = @project AND lifted_at IS NULL
RETURNING *;

-- name: RecordRefusal :exec
-- Records a refusal once per message (a retried job refuses it again). Refusals are partitioned
-- by at, which is after the message was made.
INSERT INTO risk_refusals (project, test_mode, message_id, at)
SELECT @project, @test_mode, @message_id::text, @at
WHERE NOT EXISTS (SELECT 1 FROM risk_refusals WHERE message_id = @message_id::text AND at >= switchboard_id_from(@message_id::text));

-- name: RiskRefusalsSince :one
-- A project's sends that risk review refused or blocked since a time (in one mode), and since
-- its last suspension was lifted: the refusals an operator has dealt with do not count again.
SELECT count(*) FROM risk_refusals r
WHERE r.project = @project AND r.test_mode = @test_mode AND r.at > @since
  AND r.at > coalesce((SELECT max(s.lifted_at) FROM sending_suspensions s
                       WHERE s.project = @project AND s.test_mode = @test_mode), '-infinity'::timestamptz);

-- name: QueuedMessages :many
-- A project's messages still waiting to go (in one mode), oldest first.
SELECT id FROM messages
WHERE project = @project AND test_mode = @test_mode AND direction = 'outbound' AND status IN ('queued', 'sending')
  AND created_at >= @since::timestamptz
ORDER BY created_at
LIMIT @max_rows;
