-- name: InsertPhoneNumber :one
INSERT INTO phone_numbers (id, project, number, test_mode, namespace, resource, provider, number_type, country,
    capabilities, monthly_micros, upfront_micros, state, renews_at, created_at, updated_at)
VALUES (@id, @project, @number, @test_mode, @namespace, @resource, @provider, @number_type, @country,
    @capabilities, @monthly_micros, @upfront_micros, 'buying', @renews_at, @now, @now)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: HeldPhoneNumber :one
-- The purchase of number a project holds (buying, active or suspended).
SELECT * FROM phone_numbers WHERE project = @project AND number = @number AND state IN ('buying', 'active', 'suspended');

-- name: PhoneNumberOfResource :one
-- The purchase behind a PhoneNumber resource, while it is held.
SELECT * FROM phone_numbers WHERE namespace = @namespace AND resource = @resource AND state IN ('buying', 'active', 'suspended');

-- name: PhoneNumbersOfProject :many
SELECT * FROM phone_numbers WHERE project = @project AND state IN ('buying', 'active', 'suspended');

-- name: LockPhoneNumber :one
SELECT * FROM phone_numbers WHERE id = @id FOR UPDATE;

-- name: BoughtPhoneNumber :exec
-- The provider sold the number: it is the project's from now, paid for a month.
UPDATE phone_numbers SET state = 'active', number_sid = @number_sid, capabilities = @capabilities,
    renews_at = @renews_at, updated_at = @now
WHERE id = @id AND state = 'buying';

-- name: FailPhoneNumber :exec
UPDATE phone_numbers SET state = 'failed', failure = @failure, updated_at = @now WHERE id = @id AND state = 'buying';

-- name: ReleasePhoneNumber :exec
UPDATE phone_numbers SET state = 'released', released_at = @now::timestamptz, updated_at = @now::timestamptz
WHERE id = @id AND state IN ('active', 'suspended');

-- name: StaleBuyingPhoneNumbers :many
-- Purchases whose outcome nobody recorded (the process died, the provider did not answer).
-- A purchase waiting for its bundle's review is not one of them.
SELECT * FROM phone_numbers p WHERE p.state = 'buying' AND p.updated_at < @before
  AND (p.bundle IS NULL OR EXISTS (SELECT 1 FROM number_bundles b WHERE b.id = p.bundle AND b.status = 'approved'))
ORDER BY p.created_at LIMIT @max_rows;

-- name: DuePhoneNumbers :many
-- Numbers whose paid month is over, locked for one renewer.
SELECT * FROM phone_numbers WHERE state IN ('active', 'suspended') AND renews_at <= @now
ORDER BY renews_at LIMIT @max_rows FOR UPDATE SKIP LOCKED;

-- name: RenewPhoneNumber :exec
-- A month paid: active until the next renewal.
UPDATE phone_numbers SET state = 'active', renews_at = @renews_at, months = months + 1, suspended_at = NULL, updated_at = @now
WHERE id = @id;

-- name: SuspendPhoneNumber :exec
UPDATE phone_numbers SET state = 'suspended', suspended_at = coalesce(suspended_at, @now::timestamptz), updated_at = @now::timestamptz WHERE id = @id;

-- name: TouchPhoneNumber :exec
-- A purchase is being tried (again) now: the settling round leaves it alone for a while.
UPDATE phone_numbers SET updated_at = @now WHERE id = @id;
