-- Email domains' announced states and the suppression list.

-- name: AnnounceDomainState :one
-- Records that a domain's state to announce is state; true when it changed (or is the first),
-- false when it was already announced: the caller writes the event only on true, in the same
-- transaction.
WITH upsert AS (
    INSERT INTO email_domain_announcements (project, domain_uid, state, changed_at)
    VALUES (@project, @domain_uid, @state, @changed_at)
    ON CONFLICT (project, domain_uid) DO UPDATE SET state = excluded.state, changed_at = excluded.changed_at
    WHERE email_domain_announcements.state <> excluded.state
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM upsert)::boolean AS changed;

-- name: AnnouncedDomainState :one
SELECT state FROM email_domain_announcements WHERE project = @project AND domain_uid = @domain_uid;

-- name: ForgetDomainAnnouncement :exec
DELETE FROM email_domain_announcements WHERE project = @project AND domain_uid = @domain_uid;

-- name: HoldEmailDomain :one
-- Takes domain for the EmailDomain domain_uid when no project holds it, and returns its holder
-- as it now stands (another project's when one held it first). The no-op update locks and
-- returns the existing row, so concurrent claims meet on it.
INSERT INTO email_domain_holders (domain, project, domain_name, domain_uid, held_since)
VALUES (@domain, @project, @domain_name, @domain_uid, @held_since)
ON CONFLICT (domain) DO UPDATE SET domain = excluded.domain
RETURNING project, domain_name, domain_uid;

-- name: TakeOverEmailDomain :execrows
-- Takes domain from a holder whose EmailDomain is gone (stale_uid), unless another project took
-- it meanwhile.
UPDATE email_domain_holders
SET project = @project, domain_name = @domain_name, domain_uid = @domain_uid, held_since = @held_since
WHERE domain = @domain AND domain_uid = @stale_uid;

-- name: ReleaseEmailDomain :exec
DELETE FROM email_domain_holders WHERE domain = @domain AND domain_uid = @domain_uid;

-- name: EmailDomainHolder :one
SELECT project, domain_name, domain_uid FROM email_domain_holders WHERE domain = @domain;

-- name: Suppress :exec
-- Puts an address on the list, or updates its entry: a stronger reason replaces a soft bounce,
-- never the other way round (a later soft bounce does not lift a hard one).
INSERT INTO email_suppressions (project, test_mode, address, reason, message_id, detail, created_at, until)
VALUES (@project, @test_mode, @address, @reason, sqlc.narg(message_id), @detail, @created_at, sqlc.narg(until))
ON CONFLICT (project, test_mode, address) DO UPDATE
SET reason = excluded.reason, message_id = excluded.message_id, detail = excluded.detail,
    created_at = excluded.created_at, until = excluded.until, broadcast_id = NULL
WHERE email_suppressions.reason = 'soft_bounce' OR excluded.reason <> 'soft_bounce';

-- name: Unsubscribe :exec
-- Puts an address on the list for an unsubscribe from a broadcast's email. An entry already in
-- force stays as it is (the same unsubscribe again changes nothing, nor does it lift a bounce's
-- evidence); only a soft bounce, or an entry that has lapsed, gives way.
INSERT INTO email_suppressions (project, test_mode, address, reason, broadcast_id, detail, created_at)
VALUES (@project, @test_mode, @address, 'unsubscribe', @broadcast_id, '', @created_at)
ON CONFLICT (project, test_mode, address) DO UPDATE
SET reason = excluded.reason, message_id = NULL, broadcast_id = excluded.broadcast_id, detail = excluded.detail,
    created_at = excluded.created_at, until = NULL
WHERE email_suppressions.reason = 'soft_bounce' OR email_suppressions.until <= excluded.created_at;

-- name: GetSuppression :one
-- The address's entry, when it is in force at now: its own, or the one kept under its token
-- when it was erased (switchboard_erased).
SELECT * FROM email_suppressions
WHERE project = @project AND test_mode = @test_mode
  AND address = ANY(ARRAY[@address::text, switchboard_erased(@project, @address::text)])
  AND (until IS NULL OR until > @now::timestamptz)
LIMIT 1;

-- name: SuppressionsAmong :many
-- The entries in force at now for any of addresses (lowercased, as kept): what the contacts of a
-- page show, in one read.
SELECT * FROM email_suppressions
WHERE project = @project AND test_mode = @test_mode AND address = ANY(@addresses::text[])
  AND (until IS NULL OR until > @now::timestamptz);

-- name: ListSuppressions :many
-- A page of the list, newest first, entries in force at now; after_* is the last row of the
-- previous page.
-- Entries of erased addresses are left out: they name nobody.
SELECT * FROM email_suppressions
WHERE project = @project AND test_mode = @test_mode AND (until IS NULL OR until > @now::timestamptz)
  AND address NOT LIKE 'erased:%'
  AND (sqlc.narg(after_created_at)::timestamptz IS NULL
       OR (created_at, address) < (sqlc.narg(after_created_at)::timestamptz, sqlc.narg(after_address)::text))
  AND (sqlc.narg(reason)::text IS NULL OR reason = sqlc.narg(reason)::text)
ORDER BY created_at DESC, address DESC
LIMIT @page_size;

-- name: DeleteSuppression :execrows
-- The address's entry, and the one kept under its token if it was erased.
DELETE FROM email_suppressions WHERE project = @project AND test_mode = @test_mode
  AND address = ANY(ARRAY[@address::text, switchboard_erased(@project, @address::text)]);

-- name: GetOutboundEmail :one
-- The project's live email whose Message-ID is provider_message_id: the mail a bounce or a
-- complaint is about.
SELECT * FROM messages
WHERE project = @project AND provider_message_id = @provider_message_id AND direction = 'outbound' AND channel = 'email'
  AND NOT test_mode AND created_at >= @since::timestamptz
LIMIT 1;
