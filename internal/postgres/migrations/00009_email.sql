-- +goose Up
-- The verification state of each email domain that was last announced (domain.verified or
-- domain.failed): the controller and the API both check domains, and an event is written only
-- when this row changes, in the same transaction, so each transition is announced once.
CREATE TABLE email_domain_announcements (
    project    text        NOT NULL,
    domain_uid text        NOT NULL,
    state      text        NOT NULL CHECK (state IN ('verified', 'failed')),
    changed_at timestamptz NOT NULL,
    PRIMARY KEY (project, domain_uid)
);

-- Addresses a project's mail no longer goes to: a hard bounce, a complaint, an unsubscribe,
-- or an entry made by hand. Addresses are stored lowercased. A soft bounce is recorded with
-- its expiry (until): past it the address is tried again.
CREATE TABLE email_suppressions (
    project     text        NOT NULL,
    test_mode   boolean     NOT NULL,
    address     text        NOT NULL,
    reason      text        NOT NULL CHECK (reason IN ('hard_bounce', 'soft_bounce', 'complaint', 'manual', 'unsubscribe')),
    message_id  text,
    detail      text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    until       timestamptz,
    PRIMARY KEY (project, test_mode, address)
);
CREATE INDEX email_suppressions_page ON email_suppressions (project, test_mode, created_at DESC, address);

-- +goose Down
DROP TABLE email_suppressions;
DROP TABLE email_domain_announcements;
