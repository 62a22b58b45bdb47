-- +goose Up
-- Installation-wide values every replica must share, such as the key that signs pagination
-- cursors. Written once, by whichever replica needs a value first.
CREATE TABLE switchboard_settings (
    name       text        PRIMARY KEY,
    value      bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE switchboard_settings;
