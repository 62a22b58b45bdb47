-- +goose Up
-- A project's regulatory records (docs/numbers.md#addresses-and-documents): the addresses and
-- identity or business documents some countries ask of whoever buys their numbers. Files are
-- uploaded to a one-time URL on the API and kept here, in chunks of at most 1 MiB.
CREATE TABLE regulatory_addresses (
    id                  text        PRIMARY KEY,
    project             text        NOT NULL,
    country_code        text        NOT NULL,
    locality            text        NOT NULL,
    postal_code         text        NOT NULL,
    street_address      text        NOT NULL,
    extended_address    text,
    administrative_area text,
    business_name       text,
    first_name          text,
    last_name           text,
    status              text        NOT NULL CHECK (status IN ('pending', 'verified', 'rejected')),
    -- The provider's record of the address once a bundle used it (Twilio: AD…).
    provider_sid        text,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE INDEX regulatory_addresses_project ON regulatory_addresses (project, created_at DESC, id DESC);

-- One upload URL each: the token (kept hashed) is good once, until expires_at.
CREATE TABLE regulatory_uploads (
    id           text        PRIMARY KEY,
    project      text        NOT NULL,
    token_hash   bytea       NOT NULL UNIQUE,
    expires_at   timestamptz NOT NULL,
    mime_type    text,
    size_bytes   bigint,
    sha256       bytea,
    uploaded_at  timestamptz,
    created_at   timestamptz NOT NULL
);
CREATE INDEX regulatory_uploads_expiry ON regulatory_uploads (expires_at) WHERE uploaded_at IS NULL;

CREATE TABLE regulatory_file_chunks (
    upload text    NOT NULL REFERENCES regulatory_uploads (id) ON DELETE CASCADE,
    seq    integer NOT NULL,
    data   bytea   NOT NULL,
    PRIMARY KEY (upload, seq)
);

CREATE TABLE regulatory_documents (
    id               text        PRIMARY KEY,
    project          text        NOT NULL,
    document_type    text        NOT NULL,
    name             text        NOT NULL,
    upload           text        NOT NULL UNIQUE REFERENCES regulatory_uploads (id),
    mime_type        text        NOT NULL,
    file_size        bigint      NOT NULL,
    status           text        NOT NULL CHECK (status IN ('pending', 'uploaded', 'verified', 'rejected')),
    rejection_reason text,
    provider_sid     text,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX regulatory_documents_project ON regulatory_documents (project, created_at DESC, id DESC);

-- +goose Down
DROP TABLE regulatory_documents;
DROP TABLE regulatory_file_chunks;
DROP TABLE regulatory_uploads;
DROP TABLE regulatory_addresses;
