-- name: TroubledCircuits :many
-- The circuits that are not closed, or have failures counted: every other Provider is closed.
SELECT * FROM provider_circuits WHERE state <> 'closed' OR failures > 0;

-- name: GetCircuitForUpdate :one
SELECT * FROM provider_circuits WHERE provider = @provider FOR UPDATE;

-- name: PutCircuit :exec
INSERT INTO provider_circuits (provider, failures, state, open_until, updated_at)
VALUES (@provider, @failures, @state, @open_until, @updated_at)
ON CONFLICT (provider) DO UPDATE SET failures = excluded.failures, state = excluded.state,
    open_until = excluded.open_until, updated_at = excluded.updated_at;

-- name: ClaimProbe :one
-- Takes the one probe of an open circuit whose time has come (or whose last probe was given
-- up); no row when another worker took it first.
UPDATE provider_circuits SET state = 'half_open', open_until = @until, updated_at = @now
WHERE provider = @provider AND state IN ('open', 'half_open') AND open_until <= @now
RETURNING provider;

-- name: GetCircuit :one
SELECT * FROM provider_circuits WHERE provider = @provider;
