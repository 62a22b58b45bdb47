-- name: OpenBalance :one
-- Creates a project's balance with its starting credit, once; answers whether it was created.
INSERT INTO balances (project, balance_micros, created_at, updated_at)
VALUES (@project, @initial, @now, @now)
ON CONFLICT (project) DO NOTHING
RETURNING project;

-- name: ChargeBalance :one
-- Takes amount from the balance unless it would go below minus the credit limit; with
-- require_positive, only while the balance is above zero. No row means refused.
UPDATE balances
SET balance_micros = balance_micros - @amount::bigint, spent_micros = spent_micros + @amount::bigint, updated_at = @now
WHERE project = @project
  AND balance_micros + @credit_limit::bigint >= @amount::bigint
  AND (@require_positive::boolean = false OR balance_micros > 0)
RETURNING balance_micros;

-- name: CreditBalance :one
UPDATE balances
SET balance_micros = balance_micros + @amount::bigint, updated_at = @now
WHERE project = @project
RETURNING balance_micros, drawn_micros, parent;

-- name: RefundBalance :one
UPDATE balances
SET balance_micros = balance_micros + @amount::bigint, spent_micros = greatest(spent_micros - @amount::bigint, 0), updated_at = @now
WHERE project = @project
RETURNING balance_micros, drawn_micros, parent;

-- name: LockBalances :many
-- Locks the balances of projects in one order (by project), so transactions that move money
-- between a sub-account and its parent wait for each other instead of deadlocking.
SELECT project, balance_micros, drawn_micros, parent FROM balances
WHERE project = ANY(@projects::text[])
ORDER BY project
FOR UPDATE;

-- name: DrawOut :one
-- The parent pays amount for a sub-account, unless that takes it past its own credit limit.
-- No row means refused.
UPDATE balances
SET balance_micros = balance_micros - @amount::bigint, updated_at = @now
WHERE project = @project AND balance_micros + @credit_limit::bigint >= @amount::bigint
RETURNING balance_micros;

-- name: DrawIn :one
-- The sub-account receives what its parent pays, unless what the parent has paid for it would
-- pass its credit limit. No row means refused.
UPDATE balances
SET balance_micros = balance_micros + @amount::bigint, drawn_micros = drawn_micros + @amount::bigint, parent = @parent::text,
    updated_at = @now
WHERE project = @project AND drawn_micros + @amount::bigint <= @drawn_limit::bigint
RETURNING balance_micros;

-- name: RepayOut :exec
-- The sub-account pays its parent back amount of what it drew.
UPDATE balances
SET balance_micros = balance_micros - @amount::bigint, drawn_micros = drawn_micros - @amount::bigint, updated_at = @now
WHERE project = @project;

-- name: ParentOf :one
-- The parent a sub-account's balance names (NULL until it first draws).
SELECT parent FROM balances WHERE project = @project;

-- name: AddLedgerEntries :exec
INSERT INTO ledger_entries (project, kind, amount_micros, message_id, note, created_at)
SELECT @project::text, @kind::text, e.a, nullif(e.m, ''), @note::text, @now::timestamptz
FROM (SELECT unnest(@amounts::bigint[]) AS a, unnest(@message_ids::text[]) AS m) AS e;

-- name: GetBalance :one
SELECT * FROM balances WHERE project = @project;

-- name: LedgerSum :one
-- The balance as the ledger has it: credits, refunds, releases and money received from a parent
-- or sub-account, less charges, reservations and money paid to one.
SELECT coalesce(sum(CASE WHEN kind IN ('charge', 'reserve', 'draw_out', 'repay_out') THEN -amount_micros ELSE amount_micros END), 0)::bigint
FROM ledger_entries WHERE project = @project;

-- name: SetMessageCosts :exec
-- The costs of messages priced after they were stored (a WhatsApp message falling back to SMS);
-- a send's go in with it. The ids again: each row is found by key.
UPDATE messages m
SET cost_micros = c.cost, cost_provider_micros = c.provider_cost, charged_micros = c.charged
FROM (SELECT unnest(@ids::text[]) AS id, unnest(@costs::bigint[]) AS cost, unnest(@provider_costs::bigint[]) AS provider_cost,
             unnest(@charged::bigint[]) AS charged) AS c
WHERE m.id = ANY(@ids::text[]) AND m.id = c.id AND m.created_at >= @created_from::timestamptz AND m.created_at < @created_to::timestamptz;

-- name: ChargeOf :one
-- What a message was charged (and not yet refunded): 0 when nothing.
SELECT coalesce(sum(CASE WHEN l.kind = 'charge' THEN l.amount_micros ELSE -l.amount_micros END), 0)::bigint
FROM ledger_entries l WHERE l.message_id = @msg::text AND l.kind IN ('charge', 'refund');

-- name: ClearCharged :exec
UPDATE messages SET charged_micros = 0 WHERE id = @id AND charged_micros IS NOT NULL
  AND created_at >= switchboard_id_from(@id) AND created_at < switchboard_id_to(@id);

-- name: SpentOf :many
-- What each of the projects has spent (the ones with a balance).
SELECT project, spent_micros FROM balances WHERE project = ANY(@projects::text[]);

-- name: ReserveBalance :one
-- Sets amount aside from the balance (a broadcast's estimate) unless it would go below minus the
-- credit limit; it is not spent until charged. No row means refused.
UPDATE balances
SET balance_micros = balance_micros - @amount::bigint, updated_at = @now
WHERE project = @project AND balance_micros + @credit_limit::bigint >= @amount::bigint
RETURNING balance_micros;

-- name: LatestLedgerEntries :many
-- A project's latest ledger entries, newest first (the console's ledger).
SELECT * FROM ledger_entries WHERE project = @project ORDER BY created_at DESC, id DESC LIMIT @max;
