-- Erasure of a person (internal/erasure, docs/data-lifecycle.md). Every statement is bounded to
-- one project and, when @test_mode is not NULL, one mode; @addresses are the person's addresses as
-- kept (addr.Key: email addresses in lower case). Each one is safe to run again: what it erased
-- no longer matches.

-- name: InsertErasure :exec
INSERT INTO erasures (id, project, test_mode, requested_by, state, created_at)
VALUES (@id, @project, sqlc.narg(test_mode), @requested_by, 'running', @created_at);

-- name: InsertErasureTargets :exec
INSERT INTO erasure_targets (erasure_id, address)
SELECT @erasure_id, unnest(@addresses::text[])
ON CONFLICT DO NOTHING;

-- name: GetErasure :one
SELECT * FROM erasures WHERE id = @id;

-- name: ErasureTargets :many
SELECT address FROM erasure_targets WHERE erasure_id = @erasure_id ORDER BY address;

-- name: RunningErasures :many
SELECT id FROM erasures WHERE state = 'running' ORDER BY created_at;

-- name: AddErasureCount :exec
UPDATE erasures SET counts = counts || jsonb_build_object(@what::text, coalesce((counts ->> @what::text)::bigint, 0) + @n::bigint)
WHERE id = @id;

-- name: FinishErasure :exec
WITH targets AS (DELETE FROM erasure_targets WHERE erasure_id = @id)
UPDATE erasures SET state = 'done', finished_at = @finished_at WHERE id = @id;

-- name: ContactAddresses :many
-- The addresses of a contact's channels, as kept.
SELECT cc.identifier FROM contact_channels cc JOIN contacts c ON c.id = cc.contact_id
WHERE c.id = @contact_id AND c.project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR c.test_mode = sqlc.narg(test_mode));

-- name: ErasureConversations :many
SELECT id FROM conversations
WHERE project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR test_mode = sqlc.narg(test_mode))
  AND contact_identifier = ANY(@addresses::text[]);

-- name: EraseMessageBatch :one
-- Up to @batch_size messages of the person's conversations: their attachments (and contents no
-- other message shares) are deleted; the person's address, the text, content, subject, metadata,
-- options and error text are removed; the link to the conversation goes. A message not yet sent
-- fails, so that nothing erased is sent.
WITH batch AS (
    SELECT src.id, src.created_at FROM messages src
    WHERE src.project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR src.test_mode = sqlc.narg(test_mode))
      AND src.conversation_id = ANY(@conversations::text[])
    LIMIT @batch_size
), atts AS (
    DELETE FROM message_attachments a USING batch b WHERE a.message_id = b.id RETURNING a.content_ref
), contents AS (
    DELETE FROM attachment_contents c
    WHERE c.id IN (SELECT content_ref FROM atts)
      AND NOT EXISTS (SELECT 1 FROM message_attachments o
                      WHERE o.content_ref = c.id AND o.message_id NOT IN (SELECT id FROM batch))
), redacted AS (
    UPDATE messages m
    SET recipient = CASE WHEN m.direction = 'outbound' THEN 'erased' ELSE m.recipient END,
        originator = CASE WHEN m.direction = 'inbound' THEN 'erased' ELSE m.originator END,
        body = NULL, content = NULL, subject = NULL, metadata = NULL, options = NULL, error_message = NULL,
        conversation_id = NULL,
        status = CASE WHEN m.status IN ('queued', 'sending') THEN 'failed' ELSE m.status END,
        error_code = CASE WHEN m.status IN ('queued', 'sending') THEN 'CONTACT_ERASED' ELSE m.error_code END
    FROM batch b
    WHERE m.id = b.id AND m.created_at = b.created_at
    RETURNING m.id
)
SELECT count(*)::bigint FROM redacted;

-- name: EraseAgentRecords :one
-- What agents kept of the person's conversations: their executions' steps and answers, flows
-- under way, hand-offs.
WITH executions AS (
    UPDATE agent_executions ae SET steps = '[]'::jsonb, response_text = NULL, knowledge = NULL, error_message = NULL
    WHERE ae.project = @project AND ae.conversation_id = ANY(@conversations::text[])
      AND (ae.steps <> '[]'::jsonb OR ae.response_text IS NOT NULL OR ae.knowledge IS NOT NULL OR ae.error_message IS NOT NULL)
    RETURNING 1
), sessions AS (
    DELETE FROM agent_flow_sessions fs WHERE fs.project = @project AND fs.conversation_id = ANY(@conversations::text[]) RETURNING 1
), handoffs AS (
    DELETE FROM agent_handoffs ah WHERE ah.project = @project AND ah.conversation_id = ANY(@conversations::text[]) RETURNING 1
)
SELECT ((SELECT count(*) FROM executions) + (SELECT count(*) FROM sessions) + (SELECT count(*) FROM handoffs))::bigint;

-- name: EraseConversations :one
WITH gone AS (
    DELETE FROM conversations cv WHERE cv.project = @project AND cv.id = ANY(@conversations::text[]) RETURNING 1
)
SELECT count(*)::bigint FROM gone;

-- name: EraseCalls :one
-- Calls to or from the person: the numbers, metadata and the transcript's words.
WITH calls_of AS (
    UPDATE calls cl
    SET from_number = CASE WHEN from_number = ANY(@addresses::text[]) THEN 'erased' ELSE from_number END,
        to_number = CASE WHEN to_number = ANY(@addresses::text[]) THEN 'erased' ELSE to_number END,
        metadata = NULL, greeting = NULL, transfer_to = NULL, error_message = NULL
    WHERE cl.project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR cl.test_mode = sqlc.narg(test_mode))
      AND (cl.from_number = ANY(@addresses::text[]) OR cl.to_number = ANY(@addresses::text[]))
    RETURNING cl.id
), turns AS (
    UPDATE call_turns ct SET text = '' WHERE ct.call_id IN (SELECT id FROM calls_of) RETURNING 1
)
SELECT ((SELECT count(*) FROM calls_of) + (SELECT count(*) FROM turns))::bigint;

-- name: EraseWebhookDeliveries :one
-- Deliveries whose event names the person (its addresses, or anything of theirs in its data):
-- the data goes and a pending one is cancelled; its attempts' answers go too.
WITH deliveries AS (
    UPDATE webhook_deliveries d
    SET data = '{}'::jsonb, address_from = '', address_to = '', erased = true,
        status = CASE WHEN d.status = 'pending' THEN 'cancelled' ELSE d.status END,
        next_attempt_at = CASE WHEN d.status = 'pending' THEN NULL ELSE d.next_attempt_at END,
        last_error = NULL
    WHERE d.project = @project
      AND (d.address_from = ANY(@addresses::text[]) OR d.address_to = ANY(@addresses::text[])
           OR EXISTS (SELECT 1 FROM unnest(@addresses::text[]) a WHERE strpos(lower(d.data::text), a) > 0))
    RETURNING d.id, d.created_at
), attempts AS (
    UPDATE webhook_delivery_attempts t SET response_body = NULL, error = NULL
    FROM deliveries d WHERE t.delivery_id = d.id AND t.started_at >= d.created_at
    RETURNING 1
)
SELECT ((SELECT count(*) FROM deliveries) + (SELECT count(*) FROM attempts))::bigint;

-- name: EraseFunctionRecords :one
-- Function runs whose event names the person, and log lines that do.
WITH runs AS (
    UPDATE function_runs r SET event = '{}'::jsonb, error = NULL
    WHERE r.project = @project
      AND EXISTS (SELECT 1 FROM unnest(@addresses::text[]) a WHERE strpos(lower(r.event::text), a) > 0)
    RETURNING 1
), logs AS (
    DELETE FROM function_logs l
    WHERE l.project = @project
      AND EXISTS (SELECT 1 FROM unnest(@addresses::text[]) a WHERE strpos(lower(l.message), a) > 0)
    RETURNING 1
), tools AS (
    UPDATE agent_tool_runs t SET params = NULL, response = NULL, error = NULL
    WHERE t.project = @project
      AND EXISTS (SELECT 1 FROM unnest(@addresses::text[]) a
                  WHERE strpos(lower(coalesce(t.params::text, '') || coalesce(t.response, '') || coalesce(t.error, '')), a) > 0)
    RETURNING 1
)
SELECT ((SELECT count(*) FROM runs) + (SELECT count(*) FROM logs) + (SELECT count(*) FROM tools))::bigint;

-- name: EraseBroadcastRecipients :one
-- The person among broadcasts' recipients: kept as their token (one recipient a broadcast
-- still), without their template variables.
WITH erased AS (
    UPDATE broadcast_contacts bc
    SET recipient = switchboard_erased(b.project, bc.recipient), template_variables = NULL,
        template_header_variables = NULL, template_button_variables = NULL, error_message = NULL
    FROM broadcasts b
    WHERE b.id = bc.broadcast_id AND b.project = @project
      AND (sqlc.narg(test_mode)::boolean IS NULL OR b.test_mode = sqlc.narg(test_mode))
      AND bc.recipient = ANY(@addresses::text[])
    RETURNING 1
)
SELECT count(*)::bigint FROM erased;

-- name: EraseOptOuts :one
-- Opt-outs and suppressions outlive the person as their token, so that they stay opted out and
-- suppressed (the checks look for it) while the address is gone.
WITH opt_kept AS (
    INSERT INTO opt_outs (project, test_mode, originator, recipient, created_at)
    SELECT o.project, o.test_mode, o.originator, switchboard_erased(o.project, o.recipient), o.created_at FROM opt_outs o
    WHERE o.project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR o.test_mode = sqlc.narg(test_mode))
      AND o.recipient = ANY(@addresses::text[])
    ON CONFLICT DO NOTHING
), opt_gone AS (
    DELETE FROM opt_outs o
    WHERE o.project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR o.test_mode = sqlc.narg(test_mode))
      AND o.recipient = ANY(@addresses::text[])
    RETURNING 1
), suppression_kept AS (
    INSERT INTO email_suppressions (project, test_mode, address, reason, detail, created_at, until)
    SELECT es.project, es.test_mode, switchboard_erased(es.project, es.address), es.reason, '', es.created_at, es.until
    FROM email_suppressions es
    WHERE es.project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR es.test_mode = sqlc.narg(test_mode))
      AND es.address = ANY(@addresses::text[])
    ON CONFLICT DO NOTHING
), suppression_gone AS (
    DELETE FROM email_suppressions es
    WHERE es.project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR es.test_mode = sqlc.narg(test_mode))
      AND es.address = ANY(@addresses::text[])
    RETURNING 1
)
SELECT ((SELECT count(*) FROM opt_gone) + (SELECT count(*) FROM suppression_gone))::bigint;

-- name: EraseContacts :one
-- Contacts with any of the addresses, and their channels.
WITH owners AS (
    SELECT DISTINCT cc.contact_id FROM contact_channels cc
    WHERE cc.project = @project AND (sqlc.narg(test_mode)::boolean IS NULL OR cc.test_mode = sqlc.narg(test_mode))
      AND cc.identifier = ANY(@addresses::text[])
), channels AS (
    DELETE FROM contact_channels WHERE contact_id IN (SELECT contact_id FROM owners) RETURNING 1
), gone AS (
    DELETE FROM contacts WHERE id IN (SELECT contact_id FROM owners) RETURNING 1
)
SELECT ((SELECT count(*) FROM channels) + (SELECT count(*) FROM gone))::bigint;
