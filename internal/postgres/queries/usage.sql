-- name: TakeUsage :one
-- Adds n to a counter and returns the new count, unless it would pass lim (a negative lim: no
-- ceiling): then the check usage_counters_within_limit fails the statement, and with it the
-- transaction. The row stays locked until the transaction ends. Queued with the commit by
-- Queries.TakeUsages, which sends the same arguments in the same order.
INSERT INTO usage_counters AS u (project, test_mode, meter, period, period_start, used, lim)
VALUES (@project, @test_mode, @meter, @period, @period_start, @n, @lim::bigint)
ON CONFLICT (project, test_mode, meter, period, period_start) DO UPDATE
SET used = u.used + excluded.used, lim = excluded.lim
RETURNING used;

-- name: GiveBackUsage :exec
-- Returns n units to a counter (a failed send the allowance does not count).
UPDATE usage_counters
SET used = greatest(used - @n::bigint, 0)
WHERE project = @project AND test_mode = @test_mode AND meter = @meter AND period = @period AND period_start = @period_start;

-- name: Usage :many
-- A project's counters of a day and of its month.
SELECT meter, period, used FROM usage_counters
WHERE project = @project AND test_mode = @test_mode
  AND ((period = 'day' AND period_start = @day) OR (period = 'month' AND period_start = @month));

-- name: DailyUsage :many
-- A project's daily counters since a day (the console's usage chart), oldest first.
SELECT period_start, meter, used FROM usage_counters
WHERE project = @project AND test_mode = @test_mode AND period = 'day' AND period_start >= @since_day
ORDER BY period_start, meter;
