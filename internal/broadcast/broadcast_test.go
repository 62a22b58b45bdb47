package broadcast

import (
	"slices"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

func TestContactStatusFollowsTheMessage(t *testing.T) {
	for msg, want := range map[string]string{"queued": "queued", "sending": "queued", "sent": "sending", "delivered": "delivered",
		"read": "delivered", "failed": "failed"} {
		if got := contactStatus(msg); got != want {
			t.Errorf("message %s: recipient %s, want %s", msg, got, want)
		}
	}
}

func TestFillAllNamesWhatIsMissing(t *testing.T) {
	out, missing := fillAll("Hi {{name}}, code {{1}} for {{ name }} {{2}}", map[string]string{"name": "Ann"})
	if out != "Hi Ann, code {{1}} for Ann {{2}}" || !slices.Equal(missing, []string{"{{1}}", "{{2}}"}) {
		t.Errorf("fillAll = %q %v", out, missing)
	}
	if out, missing := fillAll("Plain", nil); out != "Plain" || missing != nil {
		t.Errorf("no placeholders = %q %v", out, missing)
	}
}

func TestPauseFor(t *testing.T) {
	now := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
	daily := &apperror.Error{Code: "daily_limit_exceeded", Details: map[string]any{"resetAt": "2026-11-25T00:00:00Z"}}
	if p := pauseFor(daily, now); p == nil || !p.until.Equal(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)) || p.reason != "daily_limit_exceeded" {
		t.Errorf("daily limit: %+v", p)
	}
	if p := pauseFor(&apperror.Error{Code: "insufficient_balance"}, now); p == nil || p.until != now.Add(balanceRecheck) {
		t.Errorf("balance: %+v", p)
	}
	if p := pauseFor(&apperror.Error{Code: "invalid_request"}, now); p != nil {
		t.Errorf("a refusal that does not pause: %+v", p)
	}
}

func TestDue(t *testing.T) {
	now := time.Now()
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	for _, c := range []struct {
		b    db.Broadcast
		want bool
	}{
		{db.Broadcast{Status: StatusApproved}, true},
		{db.Broadcast{Status: StatusScheduled, ScheduledAt: &past}, true},
		{db.Broadcast{Status: StatusScheduled, ScheduledAt: &future}, false},
		{db.Broadcast{Status: StatusPaused, PausedUntil: &future}, false},
		{db.Broadcast{Status: StatusPaused, PausedUntil: &past}, true},
		{db.Broadcast{Status: StatusSending}, false},
		{db.Broadcast{Status: StatusCancelled}, false},
	} {
		if got := due(c.b, now); got != c.want {
			t.Errorf("due(%s) = %v", c.b.Status, got)
		}
	}
}

func TestProgressCountsWhatHasLeft(t *testing.T) {
	started := time.Now().Add(-10 * time.Second)
	b := viewOf(db.Broadcast{ID: "bc_1", Status: StatusSending, TotalContacts: 100, PendingCount: 40, QueuedCount: 10,
		SendingCount: 20, DeliveredCount: 25, FailedCount: 5, StartedAt: &started})
	if b.SendingCount != 30 || b.SentCount != 45 {
		t.Errorf("sendingCount %d sentCount %d", b.SendingCount, b.SentCount)
	}
	p := progressOf(b, started.Add(10*time.Second))
	if p.PercentComplete != 50 || p.Sending != 30 || p.EstimatedCompletionAt == nil ||
		!p.EstimatedCompletionAt.Equal(started.Add(20*time.Second).UTC()) {
		t.Errorf("progress = %+v", p)
	}
	if sum := b.PendingCount + b.SendingCount + b.DeliveredCount + b.FailedCount + b.SkippedCount; sum != b.TotalContacts {
		t.Errorf("counters add up to %d of %d", sum, b.TotalContacts)
	}
}

func TestSmartTriesTheCheapestFirst(t *testing.T) {
	p := &plan{channels: []string{"whatsapp", "sms", "sms_oneway"}, list: &v1alpha1.PriceList{Spec: v1alpha1.PriceListSpec{Prices: []v1alpha1.Price{
		{Channel: "sms", Prefix: "+44", Price: "0.05"}, {Channel: "sms_oneway", Prefix: "+44", Price: "0.03"}}}}}
	if got := p.cheapestFirst("+447700900001", "Hi"); !slices.Equal(got, []string{"whatsapp", "sms_oneway", "sms"}) {
		t.Errorf("order = %v", got)
	}
	// Unpriced destinations keep the order.
	if got := p.cheapestFirst("+33612345678", "Hi"); !slices.Equal(got, []string{"whatsapp", "sms", "sms_oneway"}) {
		t.Errorf("order = %v", got)
	}
}
