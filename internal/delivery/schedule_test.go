package delivery

import (
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

func TestNextAttemptFollowsTheSpecSchedule(t *testing.T) {
	t.Parallel()
	first := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for attempt, want := range map[int]time.Duration{1: time.Minute, 2: 5 * time.Minute, 3: 15 * time.Minute, 4: time.Hour} {
		// Attempt n just failed, a little after it started.
		now := first.Add(time.Second)
		if got := nextAttempt(first, attempt, Schedule, now); !got.Equal(first.Add(want)) {
			t.Errorf("after attempt %d: next at +%v, want +%v", attempt, got.Sub(first), want)
		}
	}
	// Offsets count from the first attempt: a late attempt is followed at once, not pushed back.
	late := first.Add(20 * time.Minute)
	if got := nextAttempt(first, 3, Schedule, late); !got.Equal(late) {
		t.Errorf("past its time: next at %v, want now (%v)", got, late)
	}
}

func TestRenderV2DropsSenderID(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1767225600123)
	d := db.WebhookDelivery{
		ID: "evt_1", Project: "acme", Event: "message.sent", EndpointKind: string(KindProjectV2),
		Data: []byte(`{"status":"sent","senderId":"support"}`), AddressFrom: "+15005550006", AddressTo: "+15005550001", Transport: "sms",
	}
	b, err := render(d, at)
	want := `{"id":"evt_1","event":"message.sent","timestamp":1767225600123,"projectId":"acme","from":"+15005550006","to":"+15005550001","type":"sms","data":{"status":"sent"}}`
	if err != nil || string(b) != want {
		t.Fatalf("v2 body %s (%v)\nwant     %s", b, err, want)
	}
	d.EndpointKind = string(KindSender)
	b, _ = render(d, at)
	want = `{"id":"evt_1","event":"message.sent","timestamp":"2026-01-01T00:00:00.123Z","data":{"status":"sent","senderId":"support"}}`
	if string(b) != want {
		t.Fatalf("v1 body %s\nwant     %s", b, want)
	}
}
