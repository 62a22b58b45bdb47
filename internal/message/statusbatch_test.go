package message

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Changes applied together move every message with its own event, as ApplyStatus does one by
// one; a change that cannot apply fails alone, and a repeated one moves nothing.
func TestStatusBatcher(t *testing.T) {
	t.Parallel()
	s := newObservedService(t)
	ctx := context.Background()
	const n = 60
	var batch []Outbound
	for i := range n {
		batch = append(batch, Outbound{Project: "acme", TestMode: true, Sender: "main", Channel: "sms",
			MessageType: "text", To: fmt.Sprintf("+150055501%02d", i), From: "+15005550006", Text: "hi"})
	}
	var msgs []db.Message
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		msgs, err = s.Accept(ctx, tx, batch)
		return err
	}); err != nil {
		t.Fatal(err)
	}

	b := s.NewStatusBatcher()
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- b.Start(runCtx) }()
	for !b.running.Load() {
		time.Sleep(time.Millisecond) // Start is on its way
	}

	var wg sync.WaitGroup
	moved := make([]bool, n)
	errs := make([]error, n)
	for i, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			moved[i], errs[i] = b.Apply(ctx, StatusChange{MessageID: m.ID, Status: transport.StatusSent})
		}()
	}
	// One change that cannot apply, in among them.
	var badErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, badErr = b.Apply(ctx, StatusChange{MessageID: msgs[0].ID, Status: "exploded"})
	}()
	wg.Wait()
	for i := range n {
		if !moved[i] || errs[i] != nil {
			t.Fatalf("change %d: moved %v, %v", i, moved[i], errs[i])
		}
	}
	if badErr == nil {
		t.Error("an unknown status applied without an error")
	}
	if got := s.eventsOf(t, "message.sent"); got != n {
		t.Errorf("%d message.sent deliveries for %d messages", got, n)
	}
	if again, err := b.Apply(ctx, StatusChange{MessageID: msgs[1].ID, Status: transport.StatusSent}); again || err != nil {
		t.Errorf("a repeated change: moved %v, %v", again, err)
	}

	// Delivered steps move together (one statement); a message delivered twice in among them
	// moves once, and a stale sent moves nothing.
	changes := []StatusChange{{MessageID: msgs[10].ID, Status: transport.StatusDelivered}, {MessageID: msgs[30].ID, Status: transport.StatusSent}}
	for _, m := range msgs[10:20] {
		changes = append(changes, StatusChange{MessageID: m.ID, Status: transport.StatusDelivered})
	}
	got := make([]bool, len(changes))
	for i, ch := range changes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if got[i], err = b.Apply(ctx, ch); err != nil {
				t.Errorf("change %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	movedCount := 0
	for _, g := range got {
		if g {
			movedCount++
		}
	}
	if movedCount != 10 || got[1] {
		t.Errorf("%d of %d changes moved (the stale sent: %v), want the 10 deliveries", movedCount, len(changes), got[1])
	}
	if got := s.eventsOf(t, "message.delivered"); got != 10 {
		t.Errorf("%d message.delivered deliveries for 10 deliveries", got)
	}

	stop()
	<-stopped
	// Stopped: Apply is ApplyStatus.
	if m, err := b.Apply(ctx, StatusChange{MessageID: msgs[2].ID, Status: transport.StatusDelivered}); !m || err != nil {
		t.Errorf("after Start returned: moved %v, %v", m, err)
	}
}
