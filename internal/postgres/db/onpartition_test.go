package db

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestRewriteOnPartitions(t *testing.T) {
	one := []string{"messages_p20261128"}
	two := []string{"messages_p20261128", "messages_p20261127"}
	union := "(SELECT * FROM messages_p20261128 UNION ALL SELECT * FROM messages_p20261127)"
	for _, c := range []struct {
		sql   string
		parts []string
		want  string // a part of the result
	}{
		{"SELECT * FROM messages WHERE id = $1", one, "FROM messages_p20261128 AS messages WHERE id = $1"},
		{"SELECT * FROM messages WHERE id = $1", two, "FROM " + union + " AS messages WHERE"},
		{"SELECT m.id FROM messages AS m JOIN conversations c ON c.id = m.conversation_id", two, "FROM " + union + " AS m JOIN conversations c"},
		{"UPDATE messages msg SET status = $1", one, "UPDATE messages_p20261128 AS msg SET"},
		{"UPDATE messages SET status = $1 WHERE id = $2", one, "UPDATE messages_p20261128 AS messages SET"},
		{"INSERT INTO messages (id) VALUES ($1)", one, "INSERT INTO messages_p20261128 AS messages (id)"},
		{"DELETE FROM messages WHERE id = $1", one, "DELETE FROM messages_p20261128 AS messages WHERE"},
		{"SELECT * FROM messages_legacy, messages_count FROM conversations", one, ""},
		{getMessageByID, one, "FROM messages_p20261128 AS messages WHERE id = $1"},
		{getMessage, one, "FROM messages_p20261128 AS messages WHERE id = $1"},
		{getMessagesByIDs, one, "FROM messages_p20261128 AS messages WHERE id = ANY"},
		{setMessageStatus, one, "UPDATE messages_p20261128 AS msg"},
		{setMessagesStatus, one, "UPDATE messages_p20261128 AS msg"},
		{getMessageByProviderID, two, "FROM " + union + " AS messages\n    WHERE provider_message_id"},
		{recentConversationMessages, two, "FROM " + union + " AS messages\nWHERE conversation_id"},
	} {
		got, err := RewriteOnPartitions(c.sql, "messages", c.parts)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q names no relation messages, yet was rewritten as %q", c.sql, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.sql, err)
			continue
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%q rewritten as\n%s\nwant it to hold %q", c.sql, got, c.want)
		}
		if regexp.MustCompile(`(?i)\b(FROM|UPDATE|INTO|JOIN)\s+messages\b`).MatchString(got) {
			t.Errorf("%q rewritten as\n%s\nstill names the parent", c.sql, got)
		}
	}
	claim, err := rewriteOn(claimIdempotencyKey, "message_idempotency_keys", []string{"k_p2", "k_p1"}, "k_p2")
	if err != nil || !strings.Contains(claim, "FROM (SELECT * FROM k_p2 UNION ALL SELECT * FROM k_p1) AS k") ||
		!strings.Contains(claim, "INSERT INTO k_p2 AS message_idempotency_keys (") {
		t.Errorf("ClaimIdempotencyKey rewritten as\n%s (%v)\nwant it to read the union and insert into today's", claim, err)
	}
	if _, err := RewriteOnPartitions(setMessagesStatus, "messages", two); err == nil {
		t.Error("an UPDATE through two partitions was rewritten")
	}
}

func TestALongArrayIsPlannedForItsLength(t *testing.T) {
	short := []any{[]string{"a", "b"}, "x"}
	if got := modeFor(short); len(got) != 2 {
		t.Errorf("a short array's statement runs with %v, want its arguments as they are (a cached plan)", got)
	}
	long := []any{make([]string, genericMaxArray+1), "x"}
	if got := modeFor(long); len(got) != 3 || got[0] != pgx.QueryExecModeCacheDescribe {
		t.Errorf("a long array's statement runs with %v, want the unnamed-statement mode first", got[:1])
	}
}
