-- +goose Up
-- Agents (docs/agents.md): each inbound message an agent answers is an execution, enqueued in the
-- inbound's own transaction and run by a worker; its reply is sent with the execution's id as
-- idempotency key, so a retried job sends one reply.
CREATE TABLE agent_executions (
    id                  text        PRIMARY KEY,
    project             text        NOT NULL,
    test_mode           boolean     NOT NULL,
    agent               text        NOT NULL,
    sender              text        NOT NULL,
    conversation_id     text        NOT NULL,
    inbound_message_id  text        NOT NULL,
    -- pending and running are not shown; the rest are the client's statuses.
    status              text        NOT NULL CHECK (status IN ('pending', 'running', 'success', 'error', 'filtered',
                            'rate_limited', 'balance_insufficient')),
    provider            text,
    model               text,
    -- The model calls and tool calls, in order: [{model, provider, inputTokens, outputTokens,
    -- ms, error?, toolCalls: [{name, arguments, ok, error?, ms}]}].
    steps               jsonb,
    tool_calls          integer     NOT NULL DEFAULT 0,
    knowledge_chunks    integer,
    input_tokens        bigint      NOT NULL DEFAULT 0,
    output_tokens       bigint      NOT NULL DEFAULT 0,
    cost_micros         bigint      NOT NULL DEFAULT 0,
    latency_ms          integer     NOT NULL DEFAULT 0,
    response_text       text,
    response_message_id text,
    error_code          text,
    error_message       text,
    created_at          timestamptz NOT NULL,
    started_at          timestamptz,
    -- A running execution's run holds it until then: a second run of its job (the queue
    -- rescues jobs running longer than 40 s) waits instead of calling the model again.
    lease_until         timestamptz,
    finished_at         timestamptz
);

-- An inbound message is answered once by an agent, however often it is received.
CREATE UNIQUE INDEX agent_executions_inbound ON agent_executions (inbound_message_id, agent);
CREATE INDEX agent_executions_page ON agent_executions (project, test_mode, agent, created_at DESC, id DESC);

-- Conversations handed to a human: no agent answers in them until they are handed back.
CREATE TABLE agent_handoffs (
    conversation_id text        PRIMARY KEY,
    project         text        NOT NULL,
    test_mode       boolean     NOT NULL,
    agent           text        NOT NULL,
    reason          text        NOT NULL CHECK (reason IN ('keyword', 'tool', 'api')),
    created_at      timestamptz NOT NULL
);

-- Manual runs of a tool's webhook (POST .../tools/{id}/test), newest first.
CREATE TABLE agent_tool_runs (
    id          text        PRIMARY KEY,
    project     text        NOT NULL,
    test_mode   boolean     NOT NULL,
    agent       text        NOT NULL,
    tool_id     text        NOT NULL,
    params      jsonb,
    success     boolean     NOT NULL,
    status_code integer,
    response    text,
    error       text,
    duration_ms integer     NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX agent_tool_runs_page ON agent_tool_runs (project, agent, tool_id, created_at DESC);

-- +goose Down
DROP TABLE agent_tool_runs;
DROP TABLE agent_handoffs;
DROP TABLE agent_executions;
