-- +goose Up
-- The UTC days that hold a conversation's messages, so that a page of its messages reads only
-- those days' partitions: a conversation of a few dozen messages spread over a year otherwise
-- reaches back through every daily partition (docs/data-lifecycle.md). A conversation keeps its
-- days from message_days_from on: the instant of the first message recorded after this
-- migration (its creation for a new one); its earlier messages are found by reading back through
-- the spans, as before. Adding nullable columns without a default rewrites nothing.
ALTER TABLE conversations ADD COLUMN message_days date[], ADD COLUMN message_days_from timestamptz;

-- +goose Down
ALTER TABLE conversations DROP COLUMN message_days, DROP COLUMN message_days_from;
