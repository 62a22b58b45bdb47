-- +goose Up
-- A parent pays what its sub-accounts spend past their own balances (docs/limits.md#sub-accounts).
-- A sub-account's balance row names its parent and keeps what the parent has paid for it and
-- not been paid back (drawn_micros, at most the sub-account's credit limit); the money moves as
-- ledger entries on both sides: draw_out (the parent's balance pays) and draw_in (the
-- sub-account's receives), then repay_out and repay_in when money reaches the sub-account
-- again. A sub-account's balance as the API shows it is balance_micros - drawn_micros.
ALTER TABLE balances
    ADD COLUMN parent       text,
    ADD COLUMN drawn_micros bigint NOT NULL DEFAULT 0 CHECK (drawn_micros >= 0);

ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check
    CHECK (kind IN ('credit', 'charge', 'refund', 'reserve', 'release', 'draw_in', 'draw_out', 'repay_in', 'repay_out'));

-- +goose Down
DELETE FROM ledger_entries WHERE kind IN ('draw_in', 'draw_out', 'repay_in', 'repay_out');
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check CHECK (kind IN ('credit', 'charge', 'refund', 'reserve', 'release'));
ALTER TABLE balances DROP COLUMN parent, DROP COLUMN drawn_micros;
