-- +goose NO TRANSACTION
-- +goose Up
-- Agent executions are their own queue (docs/agents.md): workers claim due rows in batches with
-- FOR UPDATE SKIP LOCKED, woken by a notification from the inbound's transaction, instead of a
-- River job each. An execution is due at coalesce(lease_until, created_at): a new one at once,
-- one whose run failed on Switchboard's side when its retry falls due, a running one when its
-- run's lease ends (the process died). attempts counts the runs claimed. A call turn's execution
-- is run by the process holding the call, not claimed (its sweeper ends those a dead one left).
--
-- Each statement may be run again: this file runs outside a transaction, for the index built
-- CONCURRENTLY on a table that may already be large. The index holds only the executions not
-- finished, a handful.
ALTER TABLE agent_executions ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0;

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = 'agent_executions_due' AND NOT i.indisvalid) THEN
        DROP INDEX agent_executions_due;
    END IF;
END $$;
-- +goose StatementEnd
CREATE INDEX CONCURRENTLY IF NOT EXISTS agent_executions_due ON agent_executions ((coalesce(lease_until, created_at)))
    WHERE status IN ('pending', 'running') AND call_id IS NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS agent_executions_due;
ALTER TABLE agent_executions DROP COLUMN IF EXISTS attempts;
