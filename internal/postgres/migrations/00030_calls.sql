-- +goose Up
-- Voice calls (docs/calls.md): a call is a conversation with the sender's agent held by voice,
-- through Twilio's ConversationRelay or, for test keys, the sandbox's scripted caller. The row
-- is the call's state (moved by status callbacks and the relay), its money (an estimate set
-- aside when placed, settled once when it ends) and the lease of the process holding its relay.
CREATE TABLE calls (
    id                   text        PRIMARY KEY,
    project              text        NOT NULL,
    test_mode            boolean     NOT NULL,
    sender               text        NOT NULL,
    agent                text        NOT NULL,
    direction            text        NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    from_number          text        NOT NULL,
    to_number            text        NOT NULL,
    status               text        NOT NULL CHECK (status IN ('queued', 'ringing', 'in_progress', 'completed', 'failed',
                             'busy', 'no_answer', 'canceled')),
    -- 'sandbox', or the namespace/name of the Provider the call goes through.
    provider             text        NOT NULL,
    provider_call_id     text,
    greeting             text,
    language             text,
    max_duration_seconds integer     NOT NULL,
    metadata             jsonb       NOT NULL DEFAULT '{}',
    answered_by          text,
    answered_at          timestamptz,
    ended_at             timestamptz,
    duration_seconds     integer,
    end_reason           text,
    error_message        text,
    -- What Switchboard decided the call's end is to be before the provider confirmed it
    -- (agent_ended, transfer, max_duration, hangup...): the relay's end answers with it.
    ending               text,
    transfer_to          text,
    turn_count           integer     NOT NULL DEFAULT 0,
    -- Set aside from the balance when placed (a minute's price), given back when settled.
    reserved_micros      bigint      NOT NULL DEFAULT 0,
    -- Telephony (per started minute) plus the model's tokens, once settled.
    cost_micros          bigint,
    settled_at           timestamptz,
    -- The relay session: the process holding it renews this; past it, another may take over
    -- or the sweeper ends the call.
    session_until        timestamptz,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL
);

CREATE UNIQUE INDEX calls_provider_id ON calls (provider, provider_call_id) WHERE provider_call_id IS NOT NULL;
CREATE INDEX calls_page ON calls (project, test_mode, created_at DESC, id DESC);
CREATE INDEX calls_active ON calls (updated_at) WHERE status IN ('queued', 'ringing', 'in_progress');

-- The transcript, turn by turn: what the caller said (user), what the agent said (assistant:
-- what was read out, cut where the caller interrupted), and tool calls (tool).
CREATE TABLE call_turns (
    call_id      text        NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
    seq          integer     NOT NULL,
    role         text        NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    text         text        NOT NULL,
    started_at   timestamptz,
    ended_at     timestamptz,
    interrupted  boolean     NOT NULL DEFAULT false,
    -- An assistant turn: from the caller's prompt to the first text frame sent.
    latency_ms   integer,
    execution_id text,
    PRIMARY KEY (call_id, seq)
);

-- A call's turns are answered by executions like messages are; they name the call.
ALTER TABLE agent_executions ADD COLUMN call_id text;
CREATE INDEX agent_executions_call ON agent_executions (call_id) WHERE call_id IS NOT NULL;

-- +goose Down
DROP INDEX agent_executions_call;
ALTER TABLE agent_executions DROP COLUMN call_id;
DROP TABLE call_turns;
DROP TABLE calls;
