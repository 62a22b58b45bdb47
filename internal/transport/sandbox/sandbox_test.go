package sandbox

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// recorded is what AdvanceAll was asked to do, call by call.
type recorded struct {
	mu    sync.Mutex
	calls []advanced
}

type advanced struct {
	status string
	ids    []string
	at     time.Time
}

func (r *recorded) advanceAll(_ context.Context, ids []string, status string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, advanced{status: status, ids: slices.Clone(ids), at: time.Now()})
	return nil
}

func (r *recorded) wait(t *testing.T, n int) []advanced {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		if len(r.calls) >= n {
			calls := slices.Clone(r.calls)
			r.mu.Unlock()
			return calls
		}
		r.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d steps made, want %d", len(r.calls), n)
	return nil
}

// TestStepsFallingDueTogetherAreMadeTogether: messages followed one by one and in groups within
// the same moment are delivered in one call, not before their time and at most stepGrain after
// it; whatsapp's read step follows its delivered step the same way.
func TestStepsFallingDueTogetherAreMadeTogether(t *testing.T) {
	rec := &recorded{}
	s := &Sandbox{DeliverAfter: 100 * time.Millisecond, ReadAfter: 100 * time.Millisecond, AdvanceAll: rec.advanceAll}
	began := time.Now()
	// Followed at one moment: a lone send, a group, and a whatsapp message.
	s.Follow("msg_1", "sms")
	s.FollowAll([]transport.Sent{{MessageID: "msg_2", Channel: "sms"}, {MessageID: "msg_3", Channel: "email"}})
	s.Follow("msg_4", "whatsapp")
	calls := rec.wait(t, 1)
	time.Sleep(3 * stepGrain) // nothing more is made for the same moment
	calls = rec.wait(t, 1)
	if len(calls) != 1 {
		t.Fatalf("the steps of one moment took %d calls: %+v", len(calls), calls)
	}
	got := calls[0]
	slices.Sort(got.ids)
	if got.status != "delivered" || !slices.Equal(got.ids, []string{"msg_1", "msg_2", "msg_3", "msg_4"}) {
		t.Fatalf("made %+v, want msg_1..4 delivered together", got)
	}
	if took := got.at.Sub(began); took < s.DeliverAfter || took > s.DeliverAfter+stepGrain+50*time.Millisecond {
		t.Fatalf("delivered after %v, want %v to %v", took, s.DeliverAfter, s.DeliverAfter+stepGrain)
	}
	read := rec.wait(t, 2)[1]
	if read.status != "read" || !slices.Equal(read.ids, []string{"msg_4"}) {
		t.Fatalf("then %+v, want msg_4 read", read)
	}
}

// TestStepsDueApartAreMadeApart: a message followed a grain later is its own step, and a group
// larger than stepBatch is made in parts.
func TestStepsDueApartAreMadeApart(t *testing.T) {
	rec := &recorded{}
	s := &Sandbox{DeliverAfter: 50 * time.Millisecond, AdvanceAll: rec.advanceAll}
	many := make([]transport.Sent, stepBatch+1)
	for i := range many {
		many[i] = transport.Sent{MessageID: "msg_" + time.Duration(i).String(), Channel: "sms"}
	}
	s.FollowAll(many)
	time.Sleep(3 * stepGrain)
	s.Follow("msg_late", "sms")
	calls := rec.wait(t, 3)
	if len(calls[0].ids) != stepBatch || len(calls[1].ids) != 1 || !slices.Equal(calls[2].ids, []string{"msg_late"}) {
		t.Fatalf("made %d, %d and %v; want %d, 1 and msg_late", len(calls[0].ids), len(calls[1].ids), calls[2].ids, stepBatch)
	}
}
