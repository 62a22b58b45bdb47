-- name: InsertKnowledgeBase :one
INSERT INTO knowledge_bases (id, project, agent, name, description, created_at, updated_at)
VALUES (@id, @project, @agent, @name, sqlc.narg(description), @now, @now)
RETURNING *;

-- name: KnowledgeBaseSummary :one
-- A knowledge base with its documents and chunks counted.
SELECT kb.*, (SELECT count(*) FROM knowledge_documents d WHERE d.knowledge_base_id = kb.id)::integer AS document_count,
    (SELECT coalesce(sum(d.chunk_count), 0) FROM knowledge_documents d WHERE d.knowledge_base_id = kb.id)::integer AS total_chunks
FROM knowledge_bases kb
WHERE kb.id = @id AND kb.project = @project AND kb.agent = @agent;

-- name: KnowledgeBasePage :many
-- An agent's knowledge bases, newest first, from after the cursor's position.
SELECT kb.*, (SELECT count(*) FROM knowledge_documents d WHERE d.knowledge_base_id = kb.id)::integer AS document_count,
    (SELECT coalesce(sum(d.chunk_count), 0) FROM knowledge_documents d WHERE d.knowledge_base_id = kb.id)::integer AS total_chunks
FROM knowledge_bases kb
WHERE kb.project = @project AND kb.agent = @agent
  AND (sqlc.narg(after_time)::timestamptz IS NULL OR (kb.created_at, kb.id) < (sqlc.narg(after_time)::timestamptz, sqlc.narg(after_id)::text))
ORDER BY kb.created_at DESC, kb.id DESC
LIMIT @max_rows;

-- name: UpdateKnowledgeBase :execrows
UPDATE knowledge_bases SET name = @name, description = sqlc.narg(description), updated_at = @now
WHERE id = @id AND project = @project AND agent = @agent;

-- name: DeleteKnowledgeBase :execrows
DELETE FROM knowledge_bases WHERE id = @id AND project = @project AND agent = @agent;

-- name: DeleteAgentKnowledge :execrows
-- Everything an agent knew, when the agent is gone.
DELETE FROM knowledge_bases WHERE project = @project AND agent = @agent;

-- name: CountAgentKnowledgeBases :one
SELECT count(*)::integer FROM knowledge_bases WHERE project = @project AND agent = @agent;

-- name: CountKnowledgeDocuments :one
SELECT count(*)::integer FROM knowledge_documents WHERE knowledge_base_id = @knowledge_base_id;

-- name: InsertKnowledgeDocument :one
INSERT INTO knowledge_documents (id, project, agent, knowledge_base_id, title, source, source_url, filename, content_type,
    original, content_length, status, created_at, updated_at)
VALUES (@id, @project, @agent, @knowledge_base_id, @title, @source, sqlc.narg(source_url), sqlc.narg(filename),
    sqlc.narg(content_type), @original, @content_length, 'pending', @now, @now)
RETURNING *;

-- name: GetKnowledgeDocument :one
SELECT * FROM knowledge_documents WHERE id = @id AND knowledge_base_id = @knowledge_base_id AND project = @project;

-- name: KnowledgeDocumentPage :many
SELECT * FROM knowledge_documents
WHERE knowledge_base_id = @knowledge_base_id AND project = @project
  AND (sqlc.narg(after_time)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(after_time)::timestamptz, sqlc.narg(after_id)::text))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: RenameKnowledgeDocument :one
UPDATE knowledge_documents SET title = @title, updated_at = @now
WHERE id = @id AND knowledge_base_id = @knowledge_base_id AND project = @project
RETURNING *;

-- name: ReplaceKnowledgeDocumentContent :one
-- New content: processed again from the start (a run of the old version saves nothing).
UPDATE knowledge_documents SET title = @title, source = @source, source_url = sqlc.narg(source_url), filename = sqlc.narg(filename),
    content_type = sqlc.narg(content_type), original = @original, body = NULL, content_length = @content_length, status = 'pending', failure_reason = NULL,
    version = version + 1, updated_at = @now
WHERE id = @id AND knowledge_base_id = @knowledge_base_id AND project = @project
RETURNING *;

-- name: DeleteKnowledgeDocument :execrows
DELETE FROM knowledge_documents WHERE id = @id AND knowledge_base_id = @knowledge_base_id AND project = @project;

-- name: StartKnowledgeDocument :one
-- A processing run takes the document's version it was enqueued for, pending or left by a run
-- whose lease ended (it died), and holds it until lease_until.
UPDATE knowledge_documents SET status = 'processing', lease_until = @lease_until, updated_at = @now
WHERE id = @id AND version = @version
  AND (status = 'pending' OR (status = 'processing' AND (lease_until IS NULL OR lease_until < @now)))
RETURNING *;

-- name: KnowledgeDocumentLease :one
SELECT status, version, lease_until FROM knowledge_documents WHERE id = @id;

-- name: SaveKnowledgeDocumentSource :execrows
-- What a URL answered, kept so a re-embedding does not fetch it again.
UPDATE knowledge_documents SET original = @original, content_type = sqlc.narg(content_type)
WHERE id = @id AND version = @version;

-- name: FailKnowledgeDocument :execrows
UPDATE knowledge_documents SET status = 'failed', failure_reason = @reason, updated_at = @now, processed_at = @now
WHERE id = @id AND version = @version;

-- name: DeleteKnowledgeChunksOf :exec
DELETE FROM knowledge_chunks WHERE document_id = @document_id;

-- name: FinishKnowledgeDocument :execrows
UPDATE knowledge_documents SET status = 'ready', failure_reason = NULL, body = @body, content_length = @content_length,
    chunk_count = @chunk_count, embedding_model = @embedding_model, embedding_tokens = @embedding_tokens,
    updated_at = @now, processed_at = @now
WHERE id = @id AND version = @version;

-- name: LockKnowledgeDocument :one
SELECT version FROM knowledge_documents WHERE id = @id FOR UPDATE;

-- name: StaleKnowledgeDocuments :many
-- An agent's ready documents whose vectors are not of the model it embeds with now.
SELECT id, version FROM knowledge_documents
WHERE project = @project AND agent = @agent AND status = 'ready' AND embedding_model <> @embedding_model::text;

-- name: RequeueKnowledgeDocument :one
UPDATE knowledge_documents SET status = 'pending', version = version + 1, updated_at = @now
WHERE id = @id AND version = @version
RETURNING version;

-- name: KnowledgeVectors :many
-- The vectors and words an in-process index of an agent and model is built from.
SELECT id, embedding, words::text AS words FROM knowledge_chunks
WHERE project = @project AND agent = @agent AND embedding_model = @embedding_model;

-- name: QueryLexemes :one
-- A query's words as the chunks' tsvectors hold them.
SELECT tsvector_to_array(to_tsvector('simple', @query::text))::text[];

-- name: KnowledgeKeywordSearch :many
-- The chunks of an agent whose words match the query best (any of its words, ranked by
-- ts_rank_cd); the query is plain words, made an OR of them here.
SELECT id, ts_rank_cd(words, q)::real AS rank
FROM knowledge_chunks, to_tsquery('simple', @query::text) q
WHERE project = @project AND agent = @agent AND words @@ q
ORDER BY rank DESC, id
LIMIT @max_rows;

-- name: KnowledgeChunksByID :many
SELECT c.id, c.document_id, c.knowledge_base_id, c.body, d.title
FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
WHERE c.id = ANY(@ids::text[]) AND c.project = @project AND c.agent = @agent;

-- name: NotifyKnowledge :exec
SELECT pg_notify('switchboard_knowledge', @key::text);

-- name: HasKnowledge :one
SELECT EXISTS (SELECT 1 FROM knowledge_documents WHERE project = @project AND agent = @agent AND status = 'ready')::boolean;

-- name: KnowledgeOwners :many
-- The agents that have knowledge bases.
SELECT DISTINCT project, agent FROM knowledge_bases;
