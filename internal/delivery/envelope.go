package delivery

import (
	"encoding/json"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// envelopeV1 is the body of deliveries to sender webhooks and the v1 project webhook.
type envelopeV1 struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// envelopeV2 is the body of deliveries to the v2 project webhook (spec: Events / v2 envelope).
type envelopeV2 struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Timestamp int64           `json:"timestamp"`
	ProjectID string          `json:"projectId"`
	From      string          `json:"from,omitempty"`
	To        string          `json:"to,omitempty"`
	Type      string          `json:"type,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// render builds the body of one attempt: the stored event in its endpoint's envelope, stamped
// with the dispatch time. v2 data never carries senderId.
func render(d db.WebhookDelivery, dispatched time.Time) ([]byte, error) {
	if d.EndpointKind == string(KindProjectV2) {
		var data map[string]json.RawMessage
		if err := json.Unmarshal(d.Data, &data); err != nil {
			return nil, err
		}
		delete(data, "senderId")
		stripped, err := json.Marshal(data)
		if err != nil {
			return nil, err
		}
		return json.Marshal(envelopeV2{
			ID: d.ID, Event: d.Event, Timestamp: dispatched.UnixMilli(), ProjectID: d.Project,
			From: d.AddressFrom, To: d.AddressTo, Type: d.Transport, Data: stripped,
		})
	}
	return json.Marshal(envelopeV1{ID: d.ID, Event: d.Event, Timestamp: dispatched.UTC().Format(time.RFC3339Nano), Data: d.Data})
}
