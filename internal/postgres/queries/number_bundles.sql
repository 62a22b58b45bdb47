-- name: InsertNumberBundle :one
INSERT INTO number_bundles (id, project, provider, country, number_type, end_user_type, bundle_sid, status, address, documents,
    created_at, updated_at)
VALUES (@id, @project, @provider, @country, @number_type, @end_user_type, @bundle_sid, 'pending', @address, @documents, @now, @now)
RETURNING *;

-- name: UsableNumberBundle :one
-- The project's newest bundle for numbers of a country and type at an account that is approved,
-- else pending.
SELECT * FROM number_bundles
WHERE project = @project AND provider = @provider AND country = @country AND number_type = @number_type AND status IN ('approved', 'pending')
ORDER BY status = 'approved' DESC, created_at DESC
LIMIT 1;

-- name: PendingNumberBundles :many
SELECT * FROM number_bundles WHERE status = 'pending' ORDER BY updated_at LIMIT @max_rows;

-- name: DecideNumberBundle :exec
UPDATE number_bundles SET status = @status, failure_reason = sqlc.narg(failure_reason), updated_at = @now
WHERE id = @id AND status = 'pending';

-- name: PurchasesAwaitingBundle :many
SELECT * FROM phone_numbers WHERE bundle = @bundle AND state = 'buying' ORDER BY created_at;

-- name: SetPhoneNumberBundle :exec
UPDATE phone_numbers SET bundle = @bundle, display_name = sqlc.narg(display_name) WHERE id = @id;

-- name: GetNumberBundle :one
SELECT * FROM number_bundles WHERE id = @id;
