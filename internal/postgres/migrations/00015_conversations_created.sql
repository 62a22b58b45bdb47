-- +goose Up
-- Risk review counts the conversations a project started in the last hour (its first-contact
-- velocity) for every reviewed send: by creation time, not by a scan of all of its threads.
CREATE INDEX conversations_created ON conversations (project, test_mode, created_at);

-- +goose Down
DROP INDEX conversations_created;
