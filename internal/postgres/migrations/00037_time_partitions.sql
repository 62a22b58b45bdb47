-- +goose Up
-- Time partitions (docs/data-lifecycle.md). The tables that grow with traffic are converted to
-- range partitions by time after these migrations, online, by internal/partition (a step of
-- `switchboard migrate` that a kill resumes); this migration adds what that needs.

-- The conversions in progress and done: the cutover is the first instant the new partitions
-- hold (the converted table becomes the partition of everything before it), kept so that a
-- resumed conversion goes on with the same one.
CREATE TABLE switchboard_partitioned_tables (
    table_name   text        PRIMARY KEY,
    cutover      timestamptz NOT NULL,
    converted_at timestamptz
);

-- Rows of partitioned tables take ids made from their own created_at (randid.Timed: a prefix,
-- the millisecond in 8 base62 characters, 18 random ones). These bounds let a lookup by id name
-- its partition: [id's time - 1 minute, + 1 minute), or every partition for an id made before
-- ids carried their time. They are immutable, so a planned query prunes by them.
-- +goose StatementBegin
CREATE FUNCTION switchboard_id_time(id text) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN length(t) = 26 AND t ~ '^[0-9A-Za-z]+$' THEN
        to_timestamp((SELECT sum((strpos('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', substr(t, i, 1)) - 1)::numeric
                                 * 62::numeric ^ (8 - i))
                      FROM generate_series(1, 8) AS i) / 1000.0)
    END
    FROM (SELECT substring(id FROM '[^_]*$') AS t) AS s
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION switchboard_id_from(id text) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(switchboard_id_time(id) - interval '1 minute', '-infinity')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION switchboard_id_to(id text) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(switchboard_id_time(id) + interval '1 minute', 'infinity')
$$;
-- +goose StatementEnd

-- A partitioned table cannot be referred to by a key that leaves out its partition column, and
-- retention drops partitions whole: the references to the tables to be partitioned go (what they
-- cascaded is done by the retention of both sides).
ALTER TABLE message_idempotency_keys DROP CONSTRAINT IF EXISTS message_idempotency_keys_message_id_fkey;
ALTER TABLE message_attachments DROP CONSTRAINT IF EXISTS message_attachments_message_id_fkey;
ALTER TABLE webhook_delivery_attempts DROP CONSTRAINT IF EXISTS webhook_delivery_attempts_delivery_id_fkey;

-- +goose Down
DROP FUNCTION switchboard_id_to(text);
DROP FUNCTION switchboard_id_from(text);
DROP FUNCTION switchboard_id_time(text);
DROP TABLE switchboard_partitioned_tables;
