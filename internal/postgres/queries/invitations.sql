-- Invitations' announced changes.

-- name: AnnounceInvitation :one
-- Records a change announced for an invitation; true when it was never announced: the caller
-- writes the event only then, in the same transaction.
WITH fresh AS (
    INSERT INTO invitation_announcements (project, invitation_uid, change_id, changed_at)
    VALUES (@project, @invitation_uid, @change_id, @changed_at)
    ON CONFLICT (project, invitation_uid, change_id) DO NOTHING
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM fresh)::boolean AS changed;

-- name: ForgetInvitationAnnouncement :exec
DELETE FROM invitation_announcements WHERE project = @project AND invitation_uid = @invitation_uid;

-- name: StartSignIn :exec
-- nonce_hash is the SHA-256 of the nonce the starting browser keeps in a cookie.
INSERT INTO invitation_sign_ins (state, project, invitation, nonce_hash, created_at)
VALUES (@state, @project, @invitation, @nonce_hash, @created_at);

-- name: FindSignIn :one
-- A sign-in that is not stale, used or not, to check the browser before anything is taken.
SELECT project, invitation, nonce_hash, used_at
FROM invitation_sign_ins WHERE state = @state AND created_at > @fresh_after;

-- name: UseSignIn :one
-- Takes a sign-in state once, in the browser that started it: a second use (a replayed
-- redirect), a stale one or another browser's finds no row.
UPDATE invitation_sign_ins SET used_at = @used_at
WHERE state = @state AND nonce_hash = @nonce_hash AND used_at IS NULL AND created_at > @fresh_after
RETURNING project, invitation;

-- name: SetSignInPages :exec
UPDATE invitation_sign_ins SET pages = @pages WHERE state = @state;

-- name: TakeSignInPages :one
-- The sealed pages of a sign-in, once, to the browser that started it: picking a page ends the
-- sign-in.
DELETE FROM invitation_sign_ins
WHERE state = @state AND project = @project AND invitation = @invitation AND nonce_hash = @nonce_hash
  AND pages IS NOT NULL AND created_at > @fresh_after
RETURNING pages;

-- name: DropStaleSignIns :exec
DELETE FROM invitation_sign_ins WHERE created_at < @before;
