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

-- The connection page's Facebook sign-ins under way: the OAuth state each one was started
-- with (single use: a replayed state is refused), and after the sign-in the Pages the client
-- may pick from, sealed (their tokens are secrets) until one is picked.
CREATE TABLE invitation_sign_ins (
    state          text        PRIMARY KEY,
    project        text        NOT NULL,
    invitation     text        NOT NULL,
    created_at     timestamptz NOT NULL,
    used_at        timestamptz,
    pages          bytea
);

-- +goose Down
DROP TABLE invitation_sign_ins;
DROP TABLE invitation_announcements;
