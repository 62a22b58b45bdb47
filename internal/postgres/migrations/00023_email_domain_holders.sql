-- +goose Up
-- The one project each email domain verifies and receives mail for. A project takes a domain
-- when its ownership record (a token of the project and the domain) is found published and no
-- other project holds it; it lets go when a check finds its record gone, or when it deletes the
-- domain. A row naming an EmailDomain that no longer exists (deleted with kubectl, or with its
-- namespace) is taken over by the next project that proves the domain. The SMTP listener routes
-- mail for the domain to the holder only.
CREATE TABLE email_domain_holders (
    domain      text        PRIMARY KEY,
    project     text        NOT NULL,
    domain_name text        NOT NULL,
    domain_uid  text        NOT NULL,
    held_since  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE email_domain_holders;
