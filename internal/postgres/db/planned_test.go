package db

import "testing"

func TestNamesPartitionedTable(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT * FROM messages WHERE id = $1":                             true,
		"insert into RISK_HOLDS (message_id) values ($1)":                  true,
		"UPDATE conversations SET n = n + 1 FROM webhook_deliveries d":     true,
		"SELECT last_message_at, messages_count FROM conversations":        false,
		"-- reads no messages\nSELECT value FROM switchboard_settings":     false,
		"SELECT 1 FROM broadcasts -- not broadcast_contacts\nWHERE id = 1": false,
	} {
		if got := NamesPartitionedTable(sql); got != want {
			t.Errorf("NamesPartitionedTable(%q) = %v; want %v", sql, got, want)
		}
	}
}
