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
	"github.com/riverqueue/river"
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
	queue    *river.Client[pgx.Tx]
	now      func() time.Time
}

// NewService returns a Service reading endpoints through reader and enqueueing through queue.
func NewService(reader client.Reader, queue *river.Client[pgx.Tx]) *Service {
	return &Service{resolver: resolver{reader: reader}, queue: queue, now: time.Now}
}

// Enqueue records one delivery per subscribed endpoint and its job, inside tx: when tx commits
// the deliveries will happen, and when it rolls back none does. It returns the delivery ids.
func (s *Service) Enqueue(ctx context.Context, tx pgx.Tx, ev Event) ([]string, error) {
	data := ev.Data
	if ev.Sender != "" {
		data = withSenderID(data, ev.Sender)
	}
	payload, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encode %s data: %w", ev.Name, err)
	}
	// Every endpoint subscribed to the event gets a delivery of its own.
	type target struct {
		kind Kind
		name string
	}
	candidates := []target{{KindProjectV2, string(v1alpha1.WebhookKindV2)}, {KindProjectV1, string(v1alpha1.WebhookKindInvitations)}}
	if ev.Sender != "" {
		candidates = append([]target{{KindSender, ev.Sender}}, candidates...)
	}
	var targets []target
	for _, t := range candidates {
		// Subscription alone decides: the secret is read at each attempt.
		wh, err := s.resolver.webhookOf(ctx, t.kind, ev.Project, t.name, ev.Name)
		if err != nil {
			return nil, err
		}
		if wh != nil {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return nil, nil
	}

	q := db.New(tx)
	now := s.now().UTC()
	ids := make([]string, 0, len(targets))
	jobs := make([]river.InsertManyParams, 0, len(targets))
	for _, t := range targets {
		id, err := newEventID()
		if err != nil {
			return nil, err
		}
		if err := q.InsertWebhookDelivery(ctx, db.InsertWebhookDeliveryParams{
			ID: id, Project: ev.Project, Event: ev.Name, EndpointKind: string(t.kind), EndpointName: t.name,
			Data: payload, AddressFrom: ev.From, AddressTo: ev.To, Transport: ev.Transport, CreatedAt: now,
		}); err != nil {
			return nil, fmt.Errorf("record delivery of %s: %w", ev.Name, err)
		}
		ids = append(ids, id)
		jobs = append(jobs, river.InsertManyParams{Args: DeliverArgs{DeliveryID: id, Mode: ev.Mode}})
	}
	if _, err := s.queue.InsertManyTx(ctx, tx, jobs); err != nil {
		return nil, fmt.Errorf("enqueue deliveries of %s: %w", ev.Name, err)
	}
	return ids, nil
}

func withSenderID(data map[string]any, sender string) map[string]any {
	out := make(map[string]any, len(data)+1)
	for k, v := range data {
		out[k] = v
	}
	out["senderId"] = sender
	return out
}

// newEventID returns "evt_" and 24 random base62 characters.
func newEventID() (string, error) { return randid.Prefixed("evt_", 24) }
