package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// The webhook delivery log: Switchboard's own routes beside the spec's webhook routes
// (docs/webhooks.md#the-delivery-log). /v2/webhook/deliveries holds every delivery of the project
// (filtered by endpoint); /v1/senders/{senderId}/webhook/deliveries those of one sender's webhook.

type deliveryJSON struct {
	ID            string            `json:"id"`
	Event         string            `json:"event"`
	Endpoint      string            `json:"endpoint"`
	SenderID      *string           `json:"senderId,omitempty"`
	Mode          *string           `json:"mode"`
	Status        string            `json:"status"`
	AttemptCount  int32             `json:"attemptCount"`
	Replays       int32             `json:"replays"`
	Erased        bool              `json:"erased"`
	CreatedAt     time.Time         `json:"createdAt"`
	NextAttemptAt *time.Time        `json:"nextAttemptAt"`
	FinishedAt    *time.Time        `json:"finishedAt"`
	LastError     *string           `json:"lastError"`
	Data          json.RawMessage   `json:"data,omitempty"`
	Attempts      []deliveryAttempt `json:"attempts,omitempty"`
}

type deliveryAttempt struct {
	Attempt      int32     `json:"attempt"`
	StartedAt    time.Time `json:"startedAt"`
	URL          string    `json:"url"`
	StatusCode   *int32    `json:"statusCode"`
	LatencyMs    int32     `json:"latencyMs"`
	Error        *string   `json:"error"`
	ResponseBody *string   `json:"responseBody"`
	Replay       bool      `json:"replay"`
}

// endpointWire names endpoints on the wire.
var endpointWire = map[delivery.Kind]string{delivery.KindProjectV2: "v2", delivery.KindProjectV1: "invitations", delivery.KindSender: "sender"}

func deliveryView(d db.WebhookDelivery) deliveryJSON {
	out := deliveryJSON{ID: d.ID, Event: d.Event, Endpoint: endpointWire[delivery.Kind(d.EndpointKind)], Status: d.Status,
		AttemptCount: d.Attempts, Replays: d.Replays, Erased: d.Erased, CreatedAt: d.CreatedAt.UTC(), LastError: d.LastError}
	if d.EndpointKind == string(delivery.KindSender) {
		out.SenderID = &d.EndpointName
	}
	if d.Mode != "" {
		out.Mode = &d.Mode
	}
	if d.Status == "pending" && d.NextAttemptAt != nil {
		t := d.NextAttemptAt.UTC()
		out.NextAttemptAt = &t
	}
	if d.FinishedAt != nil {
		t := d.FinishedAt.UTC()
		out.FinishedAt = &t
	}
	return out
}

type endpointHealthJSON struct {
	Endpoint            string     `json:"endpoint"`
	SenderID            *string    `json:"senderId,omitempty"`
	URL                 string     `json:"url"`
	Enabled             bool       `json:"enabled"`
	DisabledAt          *time.Time `json:"disabledAt"`
	DisabledReason      *string    `json:"disabledReason"`
	LastAttemptAt       *time.Time `json:"lastAttemptAt"`
	LastSuccessAt       *time.Time `json:"lastSuccessAt"`
	LastFailureAt       *time.Time `json:"lastFailureAt"`
	FailingSince        *time.Time `json:"failingSince"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	Attempts24h         int64      `json:"attempts24h"`
	Succeeded24h        int64      `json:"succeeded24h"`
	SuccessRate         *float64   `json:"successRate"`
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func endpointHealthView(h delivery.Health) endpointHealthJSON {
	out := endpointHealthJSON{Endpoint: endpointWire[h.Endpoint.Kind], URL: h.URL, Enabled: h.Disabled == nil,
		LastAttemptAt: utcPtr(h.LastAttemptAt), LastSuccessAt: utcPtr(h.LastSuccessAt), LastFailureAt: utcPtr(h.LastFailureAt),
		FailingSince: utcPtr(h.FailingSince), ConsecutiveFailures: h.ConsecutiveFailures, Attempts24h: h.Attempts,
		Succeeded24h: h.Succeeded, SuccessRate: h.SuccessRate()}
	if h.Endpoint.Kind == delivery.KindSender {
		name := h.Endpoint.Name
		out.SenderID = &name
	}
	if h.Disabled != nil {
		at, reason := h.Disabled.At, h.Disabled.Reason
		out.DisabledAt, out.DisabledReason = &at, &reason
	}
	return out
}

// endpointParam reads the endpoint a v2 request names: endpoint=v2|invitations|sender, with
// senderId for a sender. required says whether one must be named.
func endpointParam(endpoint, senderID string, required bool) (*delivery.Endpoint, error) {
	switch endpoint {
	case "":
		if senderID != "" {
			ep := delivery.SenderEndpoint(senderID)
			return &ep, nil
		}
		if required {
			return nil, apperror.InvalidFields(apperror.FieldError{Path: "endpoint", Message: "is required: v2, invitations or sender"})
		}
		return nil, nil
	case "v2":
		ep := delivery.V2Endpoint
		return &ep, nil
	case "invitations":
		ep := delivery.InvitationsEndpoint
		return &ep, nil
	case "sender":
		if senderID == "" {
			return nil, apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: "is required with endpoint sender"})
		}
		ep := delivery.SenderEndpoint(senderID)
		return &ep, nil
	}
	return nil, apperror.InvalidFields(apperror.FieldError{Path: "endpoint", Message: "must be v2, invitations or sender"})
}

// timeParam reads an RFC 3339 time; zero when absent.
func timeParam(q url.Values, name string, errs *[]apperror.FieldError) time.Time {
	v := q.Get(name)
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		*errs = append(*errs, apperror.FieldError{Path: name, Message: "must be an RFC 3339 date-time"})
	}
	return t
}

// listDeliveries answers GET /v2/webhook/deliveries and, with the sender's endpoint fixed,
// GET /v1/senders/{senderId}/webhook/deliveries.
func (s *Server) listDeliveries(sender bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := keyFrom(r.Context())
		q := r.URL.Query()
		var ep *delivery.Endpoint
		list := "webhook-deliveries"
		if sender {
			// A sender that is gone has no log to show (its deliveries stay in the project's).
			if _, err := s.senders.Get(r.Context(), key.Project, r.PathValue("senderId")); err != nil {
				s.writeError(w, r, err)
				return
			}
			e := delivery.SenderEndpoint(r.PathValue("senderId"))
			ep, list = &e, list+":"+e.Name
		}
		limit, after, err := s.pageRequest(r, key.Project, list)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var errs []apperror.FieldError
		f := delivery.Filter{Limit: limit + 1, Status: q.Get("status"), Event: q.Get("event"), MessageID: q.Get("messageId"),
			Since: timeParam(q, "since", &errs), Until: timeParam(q, "until", &errs)}
		if len(errs) > 0 {
			s.writeError(w, r, apperror.InvalidFields(errs...))
			return
		}
		if !sender {
			if ep, err = endpointParam(q.Get("endpoint"), q.Get("senderId"), false); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		f.Endpoint = ep
		f.BeforeTime, f.BeforeID = after.seek()
		rows, err := s.deliveries.List(r.Context(), key.Project, key.TestMode(), f)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		at := func(d db.WebhookDelivery) (time.Time, string) { return d.CreatedAt, d.ID }
		writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, list, rows, limit, at, deliveryView))
	}
}

// senderDelivery is a delivery the v1 routes name: it must be the sender's.
func (s *Server) deliveryOfRoute(r *http.Request, sender bool, d db.WebhookDelivery) error {
	if sender && (d.EndpointKind != string(delivery.KindSender) || d.EndpointName != r.PathValue("senderId")) {
		return apperror.NotFoundf("webhook delivery %s not found", d.ID)
	}
	return nil
}

func (s *Server) getDelivery(sender bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := keyFrom(r.Context())
		d, attempts, err := s.deliveries.Get(r.Context(), key.Project, key.TestMode(), r.PathValue("deliveryId"))
		if err == nil {
			err = s.deliveryOfRoute(r, sender, d)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out := deliveryView(d)
		out.Data = d.Data
		out.Attempts = make([]deliveryAttempt, 0, len(attempts))
		for _, a := range attempts {
			out.Attempts = append(out.Attempts, deliveryAttempt{Attempt: a.Attempt, StartedAt: a.StartedAt.UTC(), URL: a.Url,
				StatusCode: a.StatusCode, LatencyMs: a.LatencyMs, Error: a.Error, ResponseBody: a.ResponseBody, Replay: a.Replay})
		}
		writeJSON(w, http.StatusOK, map[string]any{"delivery": out})
	}
}

func (s *Server) replayDelivery(sender bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := keyFrom(r.Context())
		id := r.PathValue("deliveryId")
		if sender {
			d, _, err := s.deliveries.Get(r.Context(), key.Project, key.TestMode(), id)
			if err == nil {
				err = s.deliveryOfRoute(r, sender, d)
			}
			if err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		d, err := s.deliveries.Replay(r.Context(), key.Project, key.TestMode(), id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"delivery": deliveryView(d)})
	}
}

// replayRange is the body of a replay of an endpoint's failed deliveries.
type replayRange struct {
	Endpoint string     `json:"endpoint"`
	SenderID string     `json:"senderId"`
	Since    *time.Time `json:"since"`
	Until    *time.Time `json:"until"`
}

func (s *Server) replayFailedDeliveries(sender bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := keyFrom(r.Context())
		var in replayRange
		if err := decodeJSON(r, &in, false); err != nil {
			s.writeError(w, r, err)
			return
		}
		var ep *delivery.Endpoint
		var err error
		if sender {
			e := delivery.SenderEndpoint(r.PathValue("senderId"))
			ep = &e
		} else if ep, err = endpointParam(in.Endpoint, in.SenderID, true); err != nil {
			s.writeError(w, r, err)
			return
		}
		if _, err := s.deliveries.EndpointHealth(r.Context(), key.Project, *ep); err != nil {
			s.writeError(w, r, err)
			return
		}
		var since, until time.Time
		if in.Since != nil {
			since = *in.Since
		}
		if in.Until != nil {
			until = *in.Until
		}
		n, err := s.deliveries.ReplayFailed(r.Context(), key.Project, key.TestMode(), *ep, since, until)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]int{"replayed": n})
	}
}

// listEndpoints answers GET /v2/webhook/endpoints: every webhook of the project with its health.
func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	all, err := s.deliveries.Health(r.Context(), keyFrom(r.Context()).Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items := make([]endpointHealthJSON, 0, len(all))
	for _, h := range all {
		items = append(items, endpointHealthView(h))
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// enableEndpoint enables a disabled webhook again: POST /v2/webhook/enable,
// /v1/invitations/webhook/enable and /v1/senders/{senderId}/webhook/enable.
func (s *Server) enableEndpoint(ep func(*http.Request) delivery.Endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := keyFrom(r.Context())
		h, err := s.deliveries.Enable(r.Context(), key.Project, ep(r), "API key "+key.Prefix)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"endpoint": endpointHealthView(h)})
	}
}
