-- +goose Up
-- What each project sent (and, on the conversational channels, received) per UTC day and per
-- month, by meter: sms (sms and sms_oneway), voice, conversational (whatsapp, telegram,
-- instagram, messenger) and email. Test traffic counts apart (test_mode), so the sandbox shows
-- every limit without touching live quota. A send takes its units in its own transaction, with a
-- conditional upsert that refuses to pass the ceiling, so concurrent sends cannot overshoot.
CREATE TABLE usage_counters (
    project      text    NOT NULL,
    test_mode    boolean NOT NULL,
    meter        text    NOT NULL CHECK (meter IN ('sms', 'voice', 'conversational', 'email')),
    period       text    NOT NULL CHECK (period IN ('day', 'month')),
    -- The UTC day, or the first day of the month.
    period_start date    NOT NULL,
    used         bigint  NOT NULL CHECK (used >= 0),
    PRIMARY KEY (project, test_mode, meter, period, period_start)
);

-- +goose Down
DROP TABLE usage_counters;
