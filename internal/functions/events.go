package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Event is what a function's handler receives as `event`: the id to deduplicate runs by (the
// same on every attempt), the type, when it happened, the traffic it is about, and the event's
// data as its webhook carries it.
type Event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Mode      string    `json:"mode,omitempty"`
	SenderID  string    `json:"senderId,omitempty"`
	Data      any       `json:"data"`
}

// Subscribers finds the functions an event triggers and queues their runs in the transaction
// that records the event: the outbox webhooks are fed from (delivery.Service calls it).
type Subscribers struct {
	reader client.Reader
	now    func() time.Time
}

// NewSubscribers reads functions through reader (the informer cache).
func NewSubscribers(reader client.Reader) *Subscribers {
	return &Subscribers{reader: reader, now: time.Now}
}

// Enqueue queues one run per function with an active trigger matching each event: its type, and
// its sender or all senders. A function runs once per event however many of its triggers match.
// Test traffic runs test functions and live traffic live ones; an event of neither runs both.
func (s *Subscribers) Enqueue(ctx context.Context, tx pgx.Tx, events []delivery.Event) error {
	if len(events) == 0 {
		return nil
	}
	var list v1alpha1.FunctionList
	if err := s.reader.List(ctx, &list, client.InNamespace(events[0].Project), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list the functions of %s: %w", events[0].Project, err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	var p db.InsertFunctionRunsParams
	now := s.now().UTC()
	for _, ev := range events {
		for i := range list.Items {
			f := &list.Items[i]
			if f.DeletionTimestamp != nil || f.Spec.Paused || !modeMatches(f.Spec.Mode, ev.Mode) {
				continue
			}
			trigger := matchingTrigger(f, ev)
			if trigger == "" {
				continue
			}
			id, err := randid.Prefixed("fnr_", 20)
			if err != nil {
				return err
			}
			eventID, err := randid.Prefixed("evt_", 24)
			if err != nil {
				return err
			}
			body, err := json.Marshal(Event{ID: eventID, Type: ev.Name, Timestamp: now, Mode: string(ev.Mode), SenderID: ev.Sender, Data: ev.Data})
			if err != nil {
				return fmt.Errorf("encode %s for function %s: %w", ev.Name, f.Name, err)
			}
			p.Ids = append(p.Ids, id)
			p.FunctionUids = append(p.FunctionUids, string(f.UID))
			p.FunctionNames = append(p.FunctionNames, f.Name)
			p.TriggerIds = append(p.TriggerIds, trigger)
			p.EventIds = append(p.EventIds, eventID)
			p.EventTypes = append(p.EventTypes, ev.Name)
			p.Events = append(p.Events, body)
		}
	}
	if len(p.Ids) == 0 {
		return nil
	}
	p.Project, p.Now = events[0].Project, now
	if err := db.Planned(tx).InsertFunctionRuns(ctx, p); err != nil {
		return fmt.Errorf("queue function runs of %s: %w", events[0].Name, err)
	}
	return nil
}

// matchingTrigger is the id of the function's first active trigger for ev ("" for none).
func matchingTrigger(f *v1alpha1.Function, ev delivery.Event) string {
	for _, t := range f.Spec.Triggers {
		if t.Disabled || t.Event != ev.Name || (t.Sender != "" && t.Sender != ev.Sender) {
			continue
		}
		return TriggerID(f, t)
	}
	return ""
}

func modeMatches(f v1alpha1.FunctionMode, ev delivery.Mode) bool {
	switch ev {
	case delivery.ModeTest:
		return f == v1alpha1.FunctionTest
	case delivery.ModeLive:
		return f != v1alpha1.FunctionTest
	}
	return true
}
