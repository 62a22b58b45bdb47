-- +goose Up
-- The extra checks of a WhatsApp-to-SMS fallback travel with the message's options
-- (fallbackChecked), not as the API generation that accepted it.
UPDATE messages SET options = coalesce(options, '{}'::jsonb) || '{"fallbackChecked": true}'::jsonb
WHERE api_version = 'v2';
ALTER TABLE messages DROP COLUMN api_version;

-- Calls made to a provider for the message, counted before each call (status 'sending'): a
-- crash between the provider's answer and the commit of 'sent' is retried, a bounded number of
-- times (docs/transports.md, the duplicate window).
ALTER TABLE messages ADD COLUMN dispatch_attempts integer NOT NULL DEFAULT 0;

-- Recipients who asked a number to stop (an SMS "STOP", or the provider's own opt-out answer):
-- later sends from that number to them fail at once, without calling the provider, until they
-- write START.
CREATE TABLE opt_outs (
    project    text        NOT NULL,
    test_mode  boolean     NOT NULL,
    originator text        NOT NULL,
    recipient  text        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (project, test_mode, originator, recipient)
);

-- +goose Down
DROP TABLE opt_outs;
ALTER TABLE messages DROP COLUMN dispatch_attempts;
ALTER TABLE messages ADD COLUMN api_version text NOT NULL DEFAULT 'v1';
UPDATE messages SET api_version = 'v2' WHERE options ->> 'fallbackChecked' = 'true';
