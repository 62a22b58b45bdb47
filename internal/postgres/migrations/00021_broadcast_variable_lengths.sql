-- +goose Up
-- What a broadcast recipient's template variables add to the length of an SMS, kept when the
-- recipient is added ({"name": [septets, utf16Units, gsm 0|1]}), so that a broadcast's estimate
-- is one GROUP BY in Postgres instead of every recipient read into the request. Recipients
-- added before have none: the estimate reads those one by one.
ALTER TABLE broadcast_contacts ADD COLUMN variable_lengths jsonb;

-- +goose Down
ALTER TABLE broadcast_contacts DROP COLUMN variable_lengths;
