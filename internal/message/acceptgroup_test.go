package message

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// Sends accepted at the same time share transactions, yet each gets its own answer: a new
// message, or, for a repeated idempotency key, *ErrDuplicate with the one message of that key,
// even when both sends of a key land in one group.
func TestAcceptGroupedAnswersEachSend(t *testing.T) {
	t.Parallel()
	s := newObservedService(t)
	ctx := context.Background()
	const sends = 120
	type answer struct {
		id  string
		dup string
		err error
	}
	answers := make([]answer, sends)
	var wg sync.WaitGroup
	for i := range sends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := Outbound{Project: "acme", TestMode: true, Sender: "main", Channel: "sms", MessageType: "text",
				To: fmt.Sprintf("+150055501%02d", i%40), From: "+15005550006", Text: fmt.Sprintf("send %d", i)}
			if i%3 == 0 {
				key := fmt.Sprintf("key-%d", i%30) // keys 0, 3, …, 27 are each used by 4 sends
				o.IdempotencyKey = &key
			}
			m, err := s.acceptGrouped(ctx, o)
			var dup *ErrDuplicate
			if errors.As(err, &dup) {
				answers[i] = answer{dup: dup.Original.ID}
				return
			}
			answers[i] = answer{id: m.ID, err: err}
		}()
	}
	wg.Wait()

	owners := map[string]string{} // key → message
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("send %d: %v", i, a.err)
		}
		if i%3 != 0 {
			if a.id == "" || a.dup != "" {
				t.Errorf("send %d without a key = %+v, want a new message", i, a)
			}
			continue
		}
		key := fmt.Sprintf("key-%d", i%30)
		if a.id != "" {
			if owners[key] != "" {
				t.Errorf("key %s made two messages: %s and %s", key, owners[key], a.id)
			}
			owners[key] = a.id
		}
	}
	for i, a := range answers {
		if key := fmt.Sprintf("key-%d", i%30); i%3 == 0 && a.dup != "" && a.dup != owners[key] {
			t.Errorf("send %d: duplicate of %s, but key %s belongs to %s", i, a.dup, key, owners[key])
		}
	}
	var stored int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := sends - sends/3 + 10; stored != want || len(owners) != 10 {
		t.Errorf("%d messages stored for %d keys, want %d for 10", stored, len(owners), want)
	}
	if queued := s.eventsOf(t, "message.queued"); queued != stored {
		t.Errorf("%d message.queued events for %d messages", queued, stored)
	}
}
