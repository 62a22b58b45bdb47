-- +goose Up
-- A counter keeps the ceiling its last take was checked against, and Postgres refuses a take that
-- would pass it (usage_counters_within_limit) with an error instead of an empty answer: a send's
-- takes can then go in the same round trip as its COMMIT, which an error stops and an empty answer
-- would not, so a project's counter rows stay locked only while Postgres runs the takes and the
-- commit (docs/performance.md). lim < 0 is no ceiling.
ALTER TABLE usage_counters ADD COLUMN lim bigint NOT NULL DEFAULT -1;
ALTER TABLE usage_counters ADD CONSTRAINT usage_counters_within_limit CHECK (lim < 0 OR used <= lim);

-- +goose Down
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_within_limit;
ALTER TABLE usage_counters DROP COLUMN lim;
