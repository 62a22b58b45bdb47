-- name: WhatsAppSyncs :many
SELECT * FROM whatsapp_syncs WHERE project = @project AND sender = @sender AND test_mode = @test_mode;

-- name: StartWhatsAppSync :one
-- A sync started, once per number, mode and kind.
INSERT INTO whatsapp_syncs (project, sender, test_mode, kind, status, requested_at, updated_at)
VALUES (@project, @sender, @test_mode, @kind, 'pending', @now, @now)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: ForgetWhatsAppSync :exec
-- Meta refused the start: it may be tried again.
DELETE FROM whatsapp_syncs WHERE project = @project AND sender = @sender AND test_mode = @test_mode AND kind = @kind AND status = 'pending';

-- name: NoteWhatsAppSyncRequest :exec
UPDATE whatsapp_syncs SET request_id = @request_id WHERE project = @project AND sender = @sender AND test_mode = @test_mode AND kind = @kind;

-- name: AdvanceWhatsAppSync :exec
-- Data of the sync arrived: syncing, completed (completed_at set once), or rejected.
UPDATE whatsapp_syncs SET status = @status, items = items + @items::integer, updated_at = @now::timestamptz,
    completed_at = CASE WHEN @status IN ('completed', 'rejected') THEN coalesce(completed_at, @now::timestamptz) ELSE completed_at END
WHERE project = @project AND sender = @sender AND test_mode = @test_mode AND kind = @kind AND status NOT IN ('completed', 'rejected');
