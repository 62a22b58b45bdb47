-- name: InsertCall :one
INSERT INTO calls (id, project, test_mode, sender, agent, direction, from_number, to_number, status, provider,
    provider_call_id, greeting, language, max_duration_seconds, metadata, reserved_micros, end_reason, error_message,
    ended_at, created_at, updated_at)
VALUES (@id, @project, @test_mode, @sender, @agent, @direction, @from_number, @to_number, @status, @provider,
    @provider_call_id, @greeting, @language, @max_duration_seconds, @metadata, @reserved_micros, @end_reason,
    @error_message, @finished, @created_at, @created_at)
RETURNING *;

-- name: GetCall :one
SELECT * FROM calls WHERE id = @id AND project = @project AND test_mode = @test_mode;

-- name: CallByID :one
SELECT * FROM calls WHERE id = @id;

-- name: LockCall :one
SELECT * FROM calls WHERE id = @id FOR UPDATE;

-- name: CallByProviderID :one
SELECT * FROM calls WHERE provider = @provider AND provider_call_id = @provider_call_id;

-- name: ListCalls :many
-- A project's calls, the most recent first, after a cursor.
SELECT * FROM calls
WHERE project = @project AND test_mode = @test_mode
  AND (sqlc.narg(direction)::text IS NULL OR direction = sqlc.narg(direction))
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time), sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: DialedCall :one
-- The provider took the call: it is dialing (ringing) under the provider's id.
UPDATE calls SET status = 'ringing', provider_call_id = @provider_call_id, updated_at = @now
WHERE id = @id AND status = 'queued'
RETURNING *;

-- name: AnswerCall :one
-- The call was answered (the provider said so, or its relay opened first).
UPDATE calls SET status = 'in_progress', answered_at = @now, updated_at = @now,
    answered_by = COALESCE(sqlc.narg(answered_by), answered_by)
WHERE id = @id AND status IN ('queued', 'ringing')
RETURNING *;

-- name: SetCallAnsweredBy :exec
UPDATE calls SET answered_by = @answered_by, updated_at = @now WHERE id = @id;

-- name: EndCall :one
-- Ends an active call: its end reason is what Switchboard decided (ending) when it did, else
-- the one given.
UPDATE calls SET status = @status, ended_at = @now, updated_at = @now, session_until = NULL,
    end_reason = COALESCE(ending, @end_reason), duration_seconds = @duration_seconds,
    error_message = COALESCE(sqlc.narg(error_message), error_message)
WHERE id = @id AND status IN ('queued', 'ringing', 'in_progress')
RETURNING *;

-- name: SetCallEnding :one
-- Records why Switchboard is ending the call (the first reason wins), and where to, for a transfer.
UPDATE calls SET ending = COALESCE(ending, @ending), transfer_to = COALESCE(transfer_to, sqlc.narg(transfer_to)), updated_at = @now
WHERE id = @id AND status IN ('queued', 'ringing', 'in_progress')
RETURNING *;

-- name: SettleCall :exec
UPDATE calls SET cost_micros = @cost_micros, settled_at = @now, reserved_micros = 0 WHERE id = @id AND settled_at IS NULL;

-- name: HoldCallSession :one
-- Takes (or renews) the relay session of an active call for a holder until a time: a session
-- already held by a live holder is not taken.
UPDATE calls SET session_until = @until, updated_at = @now
WHERE id = @id AND status IN ('queued', 'ringing', 'in_progress')
RETURNING *;

-- name: StaleCalls :many
-- Active calls whose relay lease ended before a time, or that never got one and are older than
-- another: the sweeper looks at them with their provider.
SELECT * FROM calls
WHERE status IN ('queued', 'ringing', 'in_progress')
  AND ((session_until IS NOT NULL AND session_until < @lease_before) OR (session_until IS NULL AND updated_at < @quiet_before))
ORDER BY updated_at
LIMIT @max_rows;

-- name: TouchCall :exec
UPDATE calls SET updated_at = @now WHERE id = @id;

-- name: AppendCallTurn :one
-- Adds a turn to the call's transcript, numbered after the last.
WITH n AS (
    UPDATE calls SET turn_count = turn_count + 1, updated_at = @now WHERE id = @call_id RETURNING turn_count - 1 AS seq
)
INSERT INTO call_turns (call_id, seq, role, text, started_at, ended_at, interrupted, latency_ms, execution_id)
SELECT @call_id, n.seq, @role, @text, sqlc.narg(started_at), sqlc.narg(ended_at), @interrupted, sqlc.narg(latency_ms),
    sqlc.narg(execution_id)
FROM n
RETURNING seq;

-- name: CutCallTurn :exec
-- The caller interrupted an answer: the turn keeps what was heard.
UPDATE call_turns SET text = @text, interrupted = true, ended_at = @ended_at WHERE call_id = @call_id AND seq = @seq;

-- name: CallTurns :many
SELECT * FROM call_turns WHERE call_id = @call_id ORDER BY seq;

-- name: CallModelCost :one
-- What the model's tokens of the call's turns cost (charged as each turn was answered).
SELECT COALESCE(sum(cost_micros), 0)::bigint FROM agent_executions WHERE call_id = @call_id;

-- name: InsertCallExecution :one
-- A call turn's execution, running at once in the process holding the call.
INSERT INTO agent_executions (id, project, test_mode, agent, sender, conversation_id, inbound_message_id, call_id, status,
    created_at, started_at, lease_until)
VALUES (@id, @project, @test_mode, @agent, @sender, @call_id, @inbound_message_id, @call_id, 'running', @now, @now, @lease_until)
ON CONFLICT (inbound_message_id, agent) DO NOTHING
RETURNING *;

-- name: FailStaleCallExecutions :exec
-- The executions of call turns whose process died mid-answer.
UPDATE agent_executions SET status = 'error', error_code = 'call_lost', error_message = 'The process answering the call stopped.',
    finished_at = @now
WHERE call_id IS NOT NULL AND status = 'running' AND lease_until < @now;
