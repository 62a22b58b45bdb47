-- +goose Up
-- A Facebook sign-in of the connection page is bound to the browser that started it: the
-- SHA-256 of a nonce that browser keeps in a cookie. A sign-in under way when this runs has
-- none, so no browser could finish it: it is dropped, and the client starts again.
DELETE FROM invitation_sign_ins;
ALTER TABLE invitation_sign_ins ADD COLUMN nonce_hash bytea NOT NULL;

-- +goose Down
ALTER TABLE invitation_sign_ins DROP COLUMN nonce_hash;
