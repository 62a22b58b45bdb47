-- +goose Up
-- Every change an invitation's events announced is kept, not only the last: a controller acting
-- on a stale copy (a change already followed by another) would otherwise see its change differ
-- from the last one recorded and announce it a second time.
ALTER TABLE invitation_announcements DROP CONSTRAINT invitation_announcements_pkey,
    ADD PRIMARY KEY (project, invitation_uid, change_id);

-- +goose Down
DELETE FROM invitation_announcements a USING invitation_announcements b
WHERE a.project = b.project AND a.invitation_uid = b.invitation_uid AND a.changed_at < b.changed_at;
ALTER TABLE invitation_announcements DROP CONSTRAINT invitation_announcements_pkey,
    ADD PRIMARY KEY (project, invitation_uid);
