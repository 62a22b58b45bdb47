// Package delivery delivers webhook events: every event fans out to every subscribed endpoint
// as a delivery of its own (its own event id), recorded in Postgres and enqueued in the same
// transaction as the change that caused it, then signed and sent by the workers, with attempts
// at 0, +1 min, +5 min, +15 min and +1 h (5 in all), each attempt recorded.
package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Event is something that happened, to be delivered to whoever subscribed to it.
type Event struct {
	Project string
	// Name is the event name, e.g. message.delivered.
	Name string
	// Sender names the Sender the event is about; empty for project-level events.
	Sender string
	// From, To and Transport address the event in the v2 envelope.
	From, To, Transport string
	// Data is the v1 event data (with senderId); v2 deliveries drop senderId.
	Data map[string]any
	// AllSenders offers a project-level event (Sender empty) to the webhook of every sender of
	// the project as well: v1 clients subscribe their sender webhooks to domain.* events. The
	// data carries no senderId (spec: project-level events).
	AllSenders bool
	// Mode is the traffic the event is about, sent as the X-Service-Mode header; empty for an
	// event about neither (no header).
	Mode Mode
}

// Mode says whether an event comes from test or live traffic.
type Mode string

const (
	// ModeTest: traffic of test keys (the sandbox).
	ModeTest Mode = "test"
	// ModeLive: traffic of live keys.
	ModeLive Mode = "live"
)

// ModeHeader carries an event's mode on each of its deliveries.
const ModeHeader = "X-Service-Mode"

// ModeOf returns the mode of traffic with this test flag.
func ModeOf(testMode bool) Mode {
	if testMode {
		return ModeTest
	}
	return ModeLive
}

// Service enqueues deliveries.
type Service struct {
	resolver resolver
	now      func() time.Time
	// Functions, when set, queues the runs of the functions the events trigger, in the same
	// transaction: functions read the outbox webhooks read.
	Functions Subscribers
}

// Subscribers are the outbox's other readers: the functions events trigger.
type Subscribers interface {
	Enqueue(ctx context.Context, tx pgx.Tx, events []Event) error
}

// NewService returns a Service reading endpoints through reader.
func NewService(reader client.Reader) *Service {
	return &Service{resolver: resolver{reader: reader}, now: time.Now}
}

// Enqueue records one delivery of ev per subscribed endpoint inside tx: when tx commits the
// deliveries will happen, and when it rolls back none does. It returns the delivery ids.
func (s *Service) Enqueue(ctx context.Context, tx pgx.Tx, ev Event) ([]string, error) {
	return s.EnqueueAll(ctx, tx, ev)
}

// EnqueueAll is Enqueue for several events of one project, written in one statement.
func (s *Service) EnqueueAll(ctx context.Context, tx pgx.Tx, events ...Event) ([]string, error) {
	if len(events) == 0 {
		return nil, nil
	}
	if s.Functions != nil {
		if err := s.Functions.Enqueue(ctx, tx, events); err != nil {
			return nil, err
		}
	}
	// The deliveries' time, and their ids' (a delivery is found in its partition by its id).
	now := s.now().UTC().Truncate(time.Microsecond)
	var p db.InsertWebhookDeliveriesParams
	// Each endpoint is read once for all the events (a broadcast's chunk has a thousand).
	endpoints := map[target]*declared{}
	for _, ev := range events {
		if ev.Project != events[0].Project {
			return nil, fmt.Errorf("enqueue: events of projects %s and %s in one call", events[0].Project, ev.Project)
		}
		// Every endpoint subscribed to the event gets a delivery of its own.
		candidates := []target{{KindProjectV2, string(v1alpha1.WebhookKindV2)}, {KindProjectV1, string(v1alpha1.WebhookKindInvitations)}}
		if ev.Sender != "" {
			candidates = append([]target{{KindSender, ev.Sender}}, candidates...)
		} else if ev.AllSenders {
			senders, err := s.resolver.senders(ctx, ev.Project)
			if err != nil {
				return nil, err
			}
			for _, name := range senders {
				candidates = append(candidates, target{KindSender, name})
			}
		}
		var payload []byte
		var err error
		for _, t := range candidates {
			// Subscription alone decides: the secret is read at each attempt.
			e, read := endpoints[t]
			if !read {
				if e, err = s.resolver.endpointOf(ctx, t.kind, ev.Project, t.name); err != nil {
					return nil, err
				}
				endpoints[t] = e
			}
			if e.takes(t.kind, t.name, ev.Name) == nil {
				continue
			}
			if payload == nil {
				data := ev.Data
				if ev.Sender != "" {
					data = withSenderID(data, ev.Sender)
				}
				if payload, err = json.Marshal(data); err != nil {
					return nil, fmt.Errorf("encode %s data: %w", ev.Name, err)
				}
			}
			id, err := newEventID(now)
			if err != nil {
				return nil, err
			}
			p.Ids = append(p.Ids, id)
			p.Events = append(p.Events, ev.Name)
			p.EndpointKinds = append(p.EndpointKinds, string(t.kind))
			p.EndpointNames = append(p.EndpointNames, t.name)
			p.Data = append(p.Data, payload)
			p.AddressesFrom = append(p.AddressesFrom, ev.From)
			p.AddressesTo = append(p.AddressesTo, ev.To)
			p.Transports = append(p.Transports, ev.Transport)
			p.Modes = append(p.Modes, string(ev.Mode))
		}
	}
	if len(p.Ids) == 0 {
		return nil, nil
	}
	p.Project, p.CreatedAt = events[0].Project, now
	if err := db.Planned(tx).InsertWebhookDeliveries(ctx, p); err != nil {
		return nil, fmt.Errorf("record deliveries of %s: %w", events[0].Name, err)
	}
	return p.Ids, nil
}

// target is an endpoint an event may go to.
type target struct {
	kind Kind
	name string
}

func withSenderID(data map[string]any, sender string) map[string]any {
	out := make(map[string]any, len(data)+1)
	for k, v := range data {
		out[k] = v
	}
	out["senderId"] = sender
	return out
}

// newEventID returns a delivery's id: "evt_" and its time and random characters (randid.Timed).
func newEventID(at time.Time) (string, error) { return randid.Timed("evt_", at) }
