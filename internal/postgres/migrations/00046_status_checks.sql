-- +goose Up
-- Lost status callbacks (docs/transports.md#lost-status-callbacks): a live message left sent is
-- asked of its provider a few times; status_checks counts the times.
ALTER TABLE messages ADD COLUMN status_checks smallint NOT NULL DEFAULT 0;
-- Live messages waiting for their provider's report: few at any time (a report follows sent
-- within seconds), so the index stays small.
CREATE INDEX messages_live_sent ON messages (updated_at) WHERE status = 'sent' AND NOT test_mode AND provider IS NOT NULL;

-- +goose Down
DROP INDEX messages_live_sent;
ALTER TABLE messages DROP COLUMN status_checks;
