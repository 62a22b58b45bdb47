-- name: LockKey :exec
-- Holds a lock named by key until the transaction ends: the replicas of an installation take
-- turns on what must not run twice at once (a parent's sub-account creates under its cap).
SELECT pg_advisory_xact_lock(hashtext(@key::text));
