-- +goose Up
-- The phone numbers projects buy through the API (docs/numbers.md): who pays for each, what it
-- costs and when it renews. Who owns a number is its PhoneNumber resource; this row is its
-- money. A purchase is a row in 'buying' with its first month charged (one transaction), then
-- the provider's purchase, then 'active' with the PhoneNumber made; a purchase the provider
-- refused is refunded and 'failed'; one whose outcome is unknown (a crash, a timeout) is settled
-- by the renewer, which asks the provider's account.
CREATE TABLE phone_numbers (
    id              text        PRIMARY KEY,
    project         text        NOT NULL,
    number          text        NOT NULL,
    -- A sandbox number bought with a test key: no provider, no money.
    test_mode       boolean     NOT NULL,
    -- Where the number's PhoneNumber is, and its name (the API's id of the number).
    namespace       text        NOT NULL,
    resource        text        NOT NULL,
    -- The twilio Provider (namespace/name) whose account bought it; '' for the sandbox.
    provider        text        NOT NULL,
    number_sid      text        NOT NULL DEFAULT '',
    number_type     text        NOT NULL,
    country         text        NOT NULL,
    capabilities    text[]      NOT NULL DEFAULT '{}',
    monthly_micros  bigint      NOT NULL CHECK (monthly_micros >= 0),
    upfront_micros  bigint      NOT NULL CHECK (upfront_micros >= 0),
    state           text        NOT NULL CHECK (state IN ('buying', 'active', 'suspended', 'released', 'failed')),
    -- The months paid: the number is paid until renews_at; months counts the renewals charged.
    renews_at       timestamptz NOT NULL,
    months          integer     NOT NULL DEFAULT 1,
    suspended_at    timestamptz,
    released_at     timestamptz,
    failure         text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
-- One purchase of a number per project at a time (the provider sells it to one account).
CREATE UNIQUE INDEX phone_numbers_held ON phone_numbers (project, number) WHERE state IN ('buying', 'active', 'suspended');
CREATE INDEX phone_numbers_due ON phone_numbers (renews_at) WHERE state IN ('active', 'suspended');
CREATE INDEX phone_numbers_buying ON phone_numbers (updated_at) WHERE state = 'buying';
CREATE INDEX phone_numbers_resource ON phone_numbers (namespace, resource) WHERE state IN ('buying', 'active', 'suspended');

-- +goose Down
DROP TABLE phone_numbers;
