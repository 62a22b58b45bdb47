-- +goose Up
-- The status and category of each template that were last announced (template.status_changed):
-- the controller, the API and the webhooks of the provider all move templates, and an event is
-- written only when this row changes, in the same transaction, so each change is announced once.
CREATE TABLE template_announcements (
    project      text        NOT NULL,
    template_uid text        NOT NULL,
    status       text        NOT NULL,
    category     text        NOT NULL DEFAULT '',
    changed_at   timestamptz NOT NULL,
    PRIMARY KEY (project, template_uid)
);

-- +goose Down
DROP TABLE template_announcements;
