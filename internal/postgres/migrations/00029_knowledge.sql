-- +goose Up
-- Knowledge bases and flows. Knowledge bases (docs/agents.md, "Knowledge bases"): an agent's documents, split into chunks
-- that executions retrieve by meaning (each chunk's vector, searched in the process that runs
-- the execution) and by words (its tsvector, searched here), merged by reciprocal rank fusion.
-- A knowledge base belongs to an agent (a Kubernetes object): it is configuration shared by
-- test and live keys, like the agent's prompt.
CREATE TABLE knowledge_bases (
    id          text        PRIMARY KEY,
    project     text        NOT NULL,
    agent       text        NOT NULL,
    name        text        NOT NULL,
    description text,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE INDEX knowledge_bases_page ON knowledge_bases (project, agent, created_at DESC, id DESC);

-- A document: its source (text given, a URL fetched, a file uploaded), the text extracted from
-- it, and where its processing stands. version counts content changes: a processing run for an
-- older version leaves its work unsaved.
CREATE TABLE knowledge_documents (
    id                text        PRIMARY KEY,
    project           text        NOT NULL,
    agent             text        NOT NULL,
    knowledge_base_id text        NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    title             text        NOT NULL,
    source            text        NOT NULL CHECK (source IN ('text', 'url', 'file')),
    source_url        text,
    filename          text,
    content_type      text,
    -- What was given: the text, or a file's bytes; a URL's fetched bytes once fetched.
    original          bytea,
    -- The readable text, once extracted.
    body              text,
    content_length    integer     NOT NULL DEFAULT 0,
    status            text        NOT NULL CHECK (status IN ('pending', 'processing', 'ready', 'failed')),
    failure_reason    text,
    chunk_count       integer     NOT NULL DEFAULT 0,
    -- The model that made the chunks' vectors, "<provider>/<model>@<dimensions>".
    embedding_model   text,
    embedding_tokens  bigint      NOT NULL DEFAULT 0,
    version           integer     NOT NULL DEFAULT 1,
    -- A processing run holds the document until then: the queue rescues jobs running longer
    -- than 40 s, and the rescued job waits for the lease instead of embedding twice.
    lease_until       timestamptz,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    processed_at      timestamptz
);

CREATE INDEX knowledge_documents_page ON knowledge_documents (knowledge_base_id, created_at DESC, id DESC);
CREATE INDEX knowledge_documents_agent ON knowledge_documents (project, agent);

-- A chunk: about 600 tokens of a document's text, its words for keyword search and its vector
-- (float32s, little-endian) for the in-process index.
CREATE TABLE knowledge_chunks (
    id                text        PRIMARY KEY,
    project           text        NOT NULL,
    agent             text        NOT NULL,
    knowledge_base_id text        NOT NULL,
    document_id       text        NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    ordinal           integer     NOT NULL,
    body              text        NOT NULL,
    tokens            integer     NOT NULL,
    words             tsvector    GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED,
    embedding_model   text        NOT NULL,
    embedding         bytea       NOT NULL
);

CREATE INDEX knowledge_chunks_words ON knowledge_chunks USING gin (words);
CREATE INDEX knowledge_chunks_agent ON knowledge_chunks (project, agent, embedding_model);
CREATE INDEX knowledge_chunks_document ON knowledge_chunks (document_id, ordinal);

-- A conversation in the middle of a flow (docs/agents.md, "Flows"): where it is (the flow
-- package's State), until when it waits for the contact. One a conversation.
CREATE TABLE agent_flow_sessions (
    conversation_id text        PRIMARY KEY,
    project         text        NOT NULL,
    test_mode       boolean     NOT NULL,
    agent           text        NOT NULL,
    flow_id         text        NOT NULL,
    state           jsonb       NOT NULL,
    -- The inbound message the state has taken in: a run of its execution that starts again
    -- after a crash does not give it to the flow twice.
    last_message_id text        NOT NULL,
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

CREATE INDEX agent_flow_sessions_flow ON agent_flow_sessions (project, agent, flow_id, expires_at);

-- A flow's transfer step hands the conversation over too.
ALTER TABLE agent_handoffs DROP CONSTRAINT agent_handoffs_reason_check;
ALTER TABLE agent_handoffs ADD CONSTRAINT agent_handoffs_reason_check CHECK (reason IN ('keyword', 'tool', 'api', 'flow'));

-- The chunks an execution's answer was given: [{chunkId, documentId, knowledgeBaseId, score}].
ALTER TABLE agent_executions ADD COLUMN knowledge jsonb;

-- +goose Down
ALTER TABLE agent_executions DROP COLUMN knowledge;
DROP TABLE agent_flow_sessions;
ALTER TABLE agent_handoffs DROP CONSTRAINT agent_handoffs_reason_check;
ALTER TABLE agent_handoffs ADD CONSTRAINT agent_handoffs_reason_check CHECK (reason IN ('keyword', 'tool', 'api'));
DROP TABLE knowledge_chunks;
DROP TABLE knowledge_documents;
DROP TABLE knowledge_bases;
