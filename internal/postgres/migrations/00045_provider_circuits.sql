-- +goose Up
-- Each Provider's circuit breaker (docs/providers.md#circuit-breaker), shared by every worker:
-- only Providers that failed have a row. provider is "namespace/name".
CREATE TABLE provider_circuits (
    provider   text PRIMARY KEY,
    -- failures is the number of calls in a row the Provider did not take.
    failures   integer     NOT NULL,
    -- state is closed, open or half_open (one probe call under way).
    state      text        NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
    -- open_until is when an open circuit may be probed (and when a probe is given up).
    open_until timestamptz,
    updated_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE provider_circuits;
