package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/contact"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// An email channel's suppression is shown as its reason, when it was made, the broadcast an
// unsubscribe came from and when a soft bounce lapses; a channel without one has no field.
func TestContactChannelSuppression(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.FixedZone("BRT", -3*3600))
	until := at.Add(24 * time.Hour)
	ch := db.ContactChannel{ID: "cch_1", Channel: "email", Identifier: "una@example.com", CreatedAt: at, UpdatedAt: at}
	for _, c := range []struct {
		name  string
		entry *emailcheck.Entry
		want  string
	}{
		{"none", nil, ""},
		{"unsubscribe", &emailcheck.Entry{Reason: "unsubscribe", BroadcastID: "brd_1", CreatedAt: at, MessageID: "msg_1", Detail: "not shown"},
			`"suppression":{"reason":"unsubscribe","createdAt":"2026-11-23T15:00:00Z","broadcastId":"brd_1"}`},
		{"soft bounce", &emailcheck.Entry{Reason: "soft_bounce", CreatedAt: at, Until: &until},
			`"suppression":{"reason":"soft_bounce","createdAt":"2026-11-23T15:00:00Z","until":"2026-11-24T15:00:00Z"}`},
	} {
		b, err := json.Marshal(contactChannelView(contact.Channel{ContactChannel: ch, Suppression: c.entry}))
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		if c.want == "" && strings.Contains(got, "suppression") || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
