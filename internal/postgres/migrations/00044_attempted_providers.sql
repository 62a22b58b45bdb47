-- +goose Up
-- Several Providers per channel (docs/providers.md#routes): the Providers a message was handed
-- to, in order, and whether the last one proved it did not take it (then a retry may move to
-- another; otherwise it may have taken it, and only it is asked again).
ALTER TABLE messages ADD COLUMN attempted_providers text[] NOT NULL DEFAULT '{}',
                     ADD COLUMN provider_refused    boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE messages DROP COLUMN attempted_providers, DROP COLUMN provider_refused;
