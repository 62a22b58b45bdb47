-- name: InsertSettingIfAbsent :exec
INSERT INTO switchboard_settings (name, value) VALUES (@name, @value)
ON CONFLICT (name) DO NOTHING;

-- name: GetSetting :one
SELECT value FROM switchboard_settings WHERE name = @name;
