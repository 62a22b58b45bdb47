-- +goose NO TRANSACTION
-- +goose Up
-- Broadcast recipients are partitioned by day like the other tables that grow with every send
-- (docs/data-lifecycle.md), on their broadcast's creation time rather than their own: a
-- broadcast's recipients then lie in one partition, where the key that adds each recipient once
-- (broadcast, recipient) can hold, since a partitioned table's unique keys must hold its
-- partition column. internal/partition converts the table after this migration, online.
--
-- broadcast_at is the millisecond a broadcast's id carries (randid.Timed), and the recipients'
-- ids carry that same millisecond, so a lookup by either id names its partition. Rows of
-- broadcasts made before ids carried their time hold the epoch, before any timed id: they lie in
-- the partition a conversion makes of the earlier rows, and every bound by an untimed id
-- (switchboard_id_from: -infinity) includes them. Adding the column with a constant default
-- writes no row.
--
-- Each statement may be run again: this file runs outside a transaction, for the index built
-- CONCURRENTLY on a table that may already be large.
ALTER TABLE broadcast_contacts ADD COLUMN IF NOT EXISTS broadcast_at timestamptz NOT NULL DEFAULT 'epoch';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION switchboard_id_at(id text) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(switchboard_id_time(id), 'epoch'::timestamptz)
$$;
-- +goose StatementEnd

-- The key widened to hold the partition column (an index left invalid by an interrupted build is
-- dropped and built again); the narrower one goes once it is built.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = 'broadcast_contacts_recipient_at' AND NOT i.indisvalid) THEN
        DROP INDEX broadcast_contacts_recipient_at;
    END IF;
END $$;
-- +goose StatementEnd
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS broadcast_contacts_recipient_at
    ON broadcast_contacts (broadcast_id, recipient, broadcast_at);
DROP INDEX CONCURRENTLY IF EXISTS broadcast_contacts_recipient;

-- A partitioned table's partitions made later would not carry this reference (they are made
-- LIKE the parent, which a conversion makes without it); deleting a broadcast deletes its
-- recipients itself, and retention drops them by day.
ALTER TABLE broadcast_contacts DROP CONSTRAINT IF EXISTS broadcast_contacts_broadcast_id_fkey;

-- +goose Down
ALTER TABLE broadcast_contacts ADD CONSTRAINT broadcast_contacts_broadcast_id_fkey
    FOREIGN KEY (broadcast_id) REFERENCES broadcasts (id) ON DELETE CASCADE;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS broadcast_contacts_recipient ON broadcast_contacts (broadcast_id, recipient);
DROP INDEX CONCURRENTLY IF EXISTS broadcast_contacts_recipient_at;
DROP FUNCTION IF EXISTS switchboard_id_at(text);
ALTER TABLE broadcast_contacts DROP COLUMN IF EXISTS broadcast_at;
