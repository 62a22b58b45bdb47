-- name: InsertAgentExecution :one
-- Enqueues the execution of an inbound message by an agent; an inbound already enqueued for it
-- (a provider posting the message again) enqueues nothing and returns no row.
INSERT INTO agent_executions (id, project, test_mode, agent, sender, conversation_id, inbound_message_id, status, created_at)
VALUES (@id, @project, @test_mode, @agent, @sender, @conversation_id, @inbound_message_id, 'pending', @created_at)
ON CONFLICT (inbound_message_id, agent) DO NOTHING
RETURNING id;

-- name: StartAgentExecution :one
-- Claims a pending execution, or a running one whose run's lease has ended (it died), for a run
-- holding it until lease_until.
UPDATE agent_executions SET status = 'running', started_at = COALESCE(started_at, @now::timestamptz), lease_until = @lease_until
WHERE id = @id AND (status = 'pending' OR (status = 'running' AND lease_until < @now::timestamptz))
RETURNING *;

-- name: AgentExecutionState :one
SELECT status, lease_until FROM agent_executions WHERE id = @id;

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
