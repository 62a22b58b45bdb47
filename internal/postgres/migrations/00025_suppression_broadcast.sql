-- +goose Up
-- The broadcast an unsubscribe came from (the one-click link of its email).
ALTER TABLE email_suppressions ADD COLUMN broadcast_id text;

-- +goose Down
ALTER TABLE email_suppressions DROP COLUMN broadcast_id;
