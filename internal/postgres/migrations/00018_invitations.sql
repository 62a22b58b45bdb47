-- +goose Up
-- The stored change of each invitation last announced with invitation.status_changed: each
-- change has an id in the Invitation's status, and a change is announced once, whichever of its
-- writer and the controller gets there first.
CREATE TABLE invitation_announcements (
    project        text        NOT NULL,
    invitation_uid text        NOT NULL,
    change_id      text        NOT NULL,
    changed_at     timestamptz NOT NULL,
    PRIMARY KEY (project, invitation_uid)
);

-- +goose Down
DROP TABLE invitation_announcements;
