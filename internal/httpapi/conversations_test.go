package httpapi

import (
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// The WhatsApp window and the typing indicator show only while they last: a typing indicator
// nobody ended is gone 25 s later, and a window 24 h after the contact's message.
func TestConversationViewShowsWhatLastsOnly(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := &Server{now: func() time.Time { return now }}
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	tests := []struct {
		name           string
		window, typing *time.Time
		wantWindow     bool
		wantTyping     bool
	}{
		{"both running", at(time.Hour), at(10 * time.Second), true, true},
		{"both over", at(-time.Second), at(-time.Second), false, false},
		{"never opened", nil, nil, false, false},
	}
	for _, tc := range tests {
		c := db.Conversation{ID: "conv_1", ContactIdentifier: "+15005550100", WhatsappWindowUntil: tc.window, TypingUntil: tc.typing}
		for _, v2 := range []bool{false, true} {
			v := s.conversationView(c, v2)
			if (v.WindowExpiresAt != nil) != tc.wantWindow || (v.TypingUntil != nil) != tc.wantTyping {
				t.Errorf("%s (v2 %v): window %v, typing %v", tc.name, v2, v.WindowExpiresAt, v.TypingUntil)
			}
		}
	}
	// v1 names the sender by id, v2 by its address; an email thread shows its address.
	c := db.Conversation{Sender: "main", Address: "hello@acme.example", ContactIdentifier: "ada@example.com"}
	if v1, v2 := s.conversationView(c, false), s.conversationView(c, true); v1.SenderID != "main" || v1.From != "" ||
		v2.From != "hello@acme.example" || v2.SenderID != "" || v1.Email != "ada@example.com" {
		t.Errorf("v1 %+v, v2 %+v", v1, v2)
	}
}
