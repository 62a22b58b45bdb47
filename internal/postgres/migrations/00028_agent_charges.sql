-- +goose Up
-- When an execution's tokens on the installation's model were charged: a retried run charges
-- them once.
ALTER TABLE agent_executions ADD COLUMN charged_at timestamptz;

-- +goose Down
ALTER TABLE agent_executions DROP COLUMN charged_at;
