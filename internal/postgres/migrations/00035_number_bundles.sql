-- +goose Up
-- Regulatory bundles (docs/numbers.md#bundles): what a country's regulation asks of a number's
-- buyer, made from the project's addresses and documents and submitted to the twilio account's
-- review. An approved one buys the country's numbers of its type; purchases wait for theirs.
CREATE TABLE number_bundles (
    id             text        PRIMARY KEY,
    project        text        NOT NULL,
    provider       text        NOT NULL,
    country        text        NOT NULL,
    number_type    text        NOT NULL,
    end_user_type  text        NOT NULL,
    bundle_sid     text        NOT NULL,
    status         text        NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    failure_reason text,
    address        text,
    documents      text[]      NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);
CREATE INDEX number_bundles_pending ON number_bundles (updated_at) WHERE status = 'pending';
CREATE INDEX number_bundles_of ON number_bundles (project, provider, country, number_type, status);

-- A purchase that waits for its bundle keeps the name it is to have.
ALTER TABLE phone_numbers ADD COLUMN bundle text REFERENCES number_bundles (id), ADD COLUMN display_name text;

-- +goose Down
ALTER TABLE phone_numbers DROP COLUMN bundle, DROP COLUMN display_name;
DROP TABLE number_bundles;
