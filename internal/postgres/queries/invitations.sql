-- Invitations' announced changes.

-- name: AnnounceInvitation :one
-- Records the change last announced for an invitation; true when it is new: the caller writes
-- the event only then, in the same transaction.
WITH upsert AS (
    INSERT INTO invitation_announcements (project, invitation_uid, change_id, changed_at)
    VALUES (@project, @invitation_uid, @change_id, @changed_at)
    ON CONFLICT (project, invitation_uid) DO UPDATE SET change_id = excluded.change_id, changed_at = excluded.changed_at
    WHERE invitation_announcements.change_id <> excluded.change_id
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM upsert)::boolean AS changed;

-- name: ForgetInvitationAnnouncement :exec
DELETE FROM invitation_announcements WHERE project = @project AND invitation_uid = @invitation_uid;
