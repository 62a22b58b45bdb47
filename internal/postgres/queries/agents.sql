-- name: InsertAgentExecution :one
-- Enqueues the execution of an inbound message by an agent and wakes the executors (the
-- notification is delivered when the inbound's transaction commits, and only when a row was
-- written); an inbound already enqueued for it (a provider posting the message again) enqueues
-- nothing and returns no row.
WITH ins AS (
    INSERT INTO agent_executions (id, project, test_mode, agent, sender, conversation_id, inbound_message_id, status, created_at)
    VALUES (@id, @project, @test_mode, @agent, @sender, @conversation_id, @inbound_message_id, 'pending', @created_at)
    ON CONFLICT (inbound_message_id, agent) DO NOTHING
    RETURNING id
)
SELECT ins.id FROM ins CROSS JOIN LATERAL pg_notify(@channel::text, '') AS woken;

-- name: ClaimAgentExecutions :many
-- Takes up to max due executions for a run each, leased until @lease_until, the attempt counted:
-- pending ones (new, or due again after a failed run) and running ones whose run's lease ended
-- (its process died). Call turns' executions are their call's process's, never claimed. SKIP
-- LOCKED lets every worker claim at once without waiting on another's rows.
WITH due AS (
    SELECT id FROM agent_executions
    WHERE status IN ('pending', 'running') AND call_id IS NULL AND coalesce(lease_until, created_at) <= @now::timestamptz
    ORDER BY coalesce(lease_until, created_at)
    LIMIT @max
    FOR UPDATE SKIP LOCKED
)
UPDATE agent_executions e
SET status = 'running', started_at = coalesce(e.started_at, @now::timestamptz), lease_until = @lease_until::timestamptz,
    attempts = e.attempts + 1
FROM due
WHERE e.id = due.id
RETURNING e.*;

-- name: RetryAgentExecution :execrows
-- Puts back a run that failed on Switchboard's side (or was cut off by a shutdown: given_back
-- returns its attempt), due again at @due; a run that no longer holds the execution changes
-- nothing.
UPDATE agent_executions SET status = 'pending', lease_until = @due::timestamptz,
    attempts = attempts - CASE WHEN @given_back::boolean THEN 1 ELSE 0 END
WHERE id = @id AND status = 'running' AND attempts = @attempts;

-- name: AgentExecutionBacklog :one
-- The executions waiting for a run (on agent_executions_due): due now, due later (retries), and
-- how long the oldest due one has waited. Running ones whose lease ended count as due.
SELECT count(*) FILTER (WHERE coalesce(e.lease_until, e.created_at) <= p.now)::bigint AS due,
       count(*) FILTER (WHERE e.status = 'pending' AND coalesce(e.lease_until, e.created_at) > p.now)::bigint AS later,
       coalesce(extract(epoch FROM max(p.now) - min(coalesce(e.lease_until, e.created_at))
           FILTER (WHERE coalesce(e.lease_until, e.created_at) <= p.now)), 0)::float8 AS oldest_due_seconds
FROM agent_executions e, (SELECT @now::timestamptz AS now) p
WHERE e.status IN ('pending', 'running') AND e.call_id IS NULL;

-- name: FinishAgentExecution :execrows
-- Records an execution's outcome; its cost is what MarkAgentExecutionCharged recorded.
UPDATE agent_executions SET status = @status, provider = @provider, model = @model, steps = @steps, tool_calls = @tool_calls,
    knowledge_chunks = @knowledge_chunks, knowledge = @knowledge, input_tokens = @input_tokens, output_tokens = @output_tokens,
    latency_ms = @latency_ms, response_text = @response_text,
    response_message_id = @response_message_id, error_code = @error_code, error_message = @error_message, finished_at = @now
WHERE id = @id AND status IN ('pending', 'running');

-- name: GetAgentExecution :one
SELECT * FROM agent_executions WHERE id = @id AND project = @project AND test_mode = @test_mode AND agent = @agent;

-- name: ListAgentExecutions :many
-- Finished executions of an agent, newest first, after a cursor.
SELECT * FROM agent_executions
WHERE project = @project AND test_mode = @test_mode AND agent = @agent AND status NOT IN ('pending', 'running')
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(before_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(before_time), sqlc.narg(before_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: AgentStats :one
SELECT count(*)::bigint AS invocations,
       count(*) FILTER (WHERE status = 'success')::bigint AS successes,
       count(*) FILTER (WHERE status <> 'success')::bigint AS errors,
       COALESCE(sum(input_tokens + output_tokens), 0)::bigint AS tokens,
       COALESCE(sum(cost_micros), 0)::bigint AS cost_micros,
       COALESCE(avg(latency_ms), 0)::float8 AS avg_latency_ms
FROM agent_executions
WHERE project = @project AND test_mode = @test_mode AND agent = @agent AND status NOT IN ('pending', 'running');

-- name: HandOff :exec
INSERT INTO agent_handoffs (conversation_id, project, test_mode, agent, reason, created_at)
VALUES (@conversation_id, @project, @test_mode, @agent, @reason, @created_at)
ON CONFLICT (conversation_id) DO NOTHING;

-- name: HandBack :execrows
DELETE FROM agent_handoffs WHERE conversation_id = @conversation_id AND project = @project AND test_mode = @test_mode;

-- name: IsHandedOff :one
SELECT EXISTS (SELECT 1 FROM agent_handoffs WHERE conversation_id = @conversation_id)::boolean;

-- name: InsertToolRun :exec
INSERT INTO agent_tool_runs (id, project, test_mode, agent, tool_id, params, success, status_code, response, error, duration_ms, created_at)
VALUES (@id, @project, @test_mode, @agent, @tool_id, @params, @success, @status_code, @response, @error, @duration_ms, @created_at);

-- name: ListToolRuns :many
SELECT * FROM agent_tool_runs WHERE project = @project AND agent = @agent AND tool_id = @tool_id
ORDER BY created_at DESC LIMIT @max_rows;

-- name: RecentConversationMessages :many
-- The last messages of a conversation, newest first: an agent's context.
SELECT id, direction, message_type, body, created_at FROM messages
WHERE conversation_id = @conversation_id AND created_at >= @since::timestamptz
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: ConversationContact :one
-- The contact of a conversation, for an agent that is given the contact's name and metadata.
SELECT c.display_name, c.metadata, v.profile_name FROM conversations v JOIN contacts c ON c.id = v.contact_id
WHERE v.id = @conversation_id;

-- name: DeleteToolRuns :exec
-- The manual runs of a deleted tool.
DELETE FROM agent_tool_runs WHERE project = @project AND agent = @agent AND tool_id = @tool_id;

-- name: MarkAgentExecutionCharged :execrows
-- Records the charge of an execution's tokens, once: no row when they were charged already.
UPDATE agent_executions SET cost_micros = @cost_micros, charged_at = @now WHERE id = @id AND charged_at IS NULL;

-- name: RenewAgentExecutionLease :execrows
-- Extends a running execution's lease while its run is alive.
UPDATE agent_executions SET lease_until = @lease_until WHERE id = @id AND status = 'running';

-- name: ActiveFlowSessions :one
-- Conversations in the middle of a flow that has not timed out.
SELECT count(*)::integer FROM agent_flow_sessions
WHERE project = @project AND agent = @agent AND flow_id = @flow_id AND expires_at > @now;

-- name: GetFlowSession :one
SELECT * FROM agent_flow_sessions WHERE conversation_id = @conversation_id;

-- name: SaveFlowSession :exec
INSERT INTO agent_flow_sessions (conversation_id, project, test_mode, agent, flow_id, state, last_message_id, expires_at, created_at, updated_at)
VALUES (@conversation_id, @project, @test_mode, @agent, @flow_id, @state, @last_message_id, @expires_at, @now, @now)
ON CONFLICT (conversation_id) DO UPDATE SET agent = excluded.agent, flow_id = excluded.flow_id, state = excluded.state,
    last_message_id = excluded.last_message_id, expires_at = excluded.expires_at, updated_at = excluded.updated_at;

-- name: SetContactField :exec
-- A flow's collected answer, in the contact's metadata (and, for "name", its display name).
UPDATE contacts c SET metadata = c.metadata || jsonb_build_object(@field::text, @value::text),
    display_name = CASE WHEN @field::text = 'name' THEN @value::text ELSE c.display_name END, updated_at = @now
FROM conversations v WHERE v.id = @conversation_id AND c.id = v.contact_id;

-- name: EndFlowSession :exec
DELETE FROM agent_flow_sessions WHERE conversation_id = @conversation_id;
