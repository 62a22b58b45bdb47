-- +goose Up
-- The Provider a live message was handed to ("namespace/name"), recorded when its dispatch
-- starts: a provider's callback may move only the messages sent through the Provider it came
-- through. NULL for test traffic, and for messages sent before it was recorded.
ALTER TABLE messages ADD COLUMN provider text;

-- +goose Down
ALTER TABLE messages DROP COLUMN provider;
