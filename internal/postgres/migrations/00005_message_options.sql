-- +goose Up
-- The send's options that are not content: email HTML body and Reply-To, WhatsApp-to-SMS
-- fallback, the text-to-speech language of a voice message.
ALTER TABLE messages ADD COLUMN options jsonb;

-- +goose Down
ALTER TABLE messages DROP COLUMN options;
