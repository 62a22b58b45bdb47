-- +goose Up
-- A broadcast's own one-click unsubscribe link, named by its email's List-Unsubscribe instead of
-- Switchboard's; its placeholders are filled per recipient (docs/email.md).
ALTER TABLE broadcasts ADD COLUMN unsubscribe_url text;

-- +goose Down
ALTER TABLE broadcasts DROP COLUMN unsubscribe_url;
