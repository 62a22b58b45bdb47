package console

import (
	"net/http"
	"net/url"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

type deliveryRow struct {
	ID, Event, Endpoint, Status, LastError string
	Link, MessageLink                      string
	At                                     time.Time
	AttemptCount                           int32
	Replayable                             bool
	Attempts                               []db.WebhookDeliveryAttempt
}

type deliveriesData struct {
	Endpoints []endpointRow
	Rows      []deliveryRow
	Status    string
	Endpoint  string
	Statuses  []string
	Next      string
	Back      string
	Since     string
}

type endpointRow struct {
	delivery.Health
	Name, Value, Rate string
}

// deliveryRow is a delivery as the pages show it.
func deliveryRowOf(d db.WebhookDelivery) deliveryRow {
	row := deliveryRow{ID: d.ID, Event: d.Event, Status: d.Status, At: d.CreatedAt, AttemptCount: d.Attempts,
		Endpoint:   delivery.EndpointOf(d).String(),
		Replayable: d.Status != "pending" && !d.Erased && d.CreatedAt.After(time.Now().Add(-delivery.ReplayWindow))}
	if d.LastError != nil {
		row.LastError = *d.LastError
	}
	return row
}

// deliveries is the webhook delivery log: the endpoints' health, and the deliveries with their
// attempts, filtered by endpoint and status, each failed one with its replay.
func (h *Handler) deliveries(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionAll) {
		h.forbidden(w, r, v, apikey.PermissionAll)
		return
	}
	q := r.URL.Query()
	d := deliveriesData{Status: q.Get("status"), Endpoint: q.Get("endpoint"), Statuses: delivery.Statuses,
		Since: time.Now().Add(-24 * time.Hour).UTC().Format("2006-01-02T15:04")}
	health, err := h.o.Deliveries.Health(r.Context(), v.project)
	if err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	for _, e := range health {
		row := endpointRow{Health: e, Name: e.Endpoint.String(), Value: e.Endpoint.String(), Rate: "–"}
		if rate := e.SuccessRate(); rate != nil {
			row.Rate = percent(*rate)
		}
		d.Endpoints = append(d.Endpoints, row)
	}
	f := delivery.Filter{Limit: pageSize + 1, Status: d.Status, Endpoint: delivery.ParseEndpoint(d.Endpoint)}
	if before, id := q.Get("before"), q.Get("beforeId"); before != "" {
		if at, err := time.Parse(time.RFC3339Nano, before); err == nil {
			f.BeforeTime, f.BeforeID = &at, &id
		}
	}
	rows, err := h.o.Deliveries.List(r.Context(), v.project, v.testMode, f)
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	for i, dl := range rows {
		if i == pageSize {
			d.Next = v.link("deliveries", url.Values{"status": {d.Status}, "endpoint": {d.Endpoint},
				"before": {rows[i-1].CreatedAt.UTC().Format(time.RFC3339Nano)}, "beforeId": {rows[i-1].ID}})
			break
		}
		d.Rows = append(d.Rows, deliveryRowOf(dl))
	}
	d.Back = v.link("deliveries", url.Values{"status": {d.Status}, "endpoint": {d.Endpoint}})
	h.render(w, r, v, http.StatusOK, "deliveries", t(v.lang, "nav.deliveries"), d)
}

// replay replays one delivery, or (id "failed") every failed delivery of an endpoint since a
// time; the decision is audited.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionAll) {
		h.forbidden(w, r, v, apikey.PermissionAll)
		return
	}
	id := r.PathValue("id")
	back := backTo(r, v.link("deliveries", nil))
	if id == "failed" {
		ep := delivery.ParseEndpoint(r.PostFormValue("endpoint"))
		since, err := time.Parse("2006-01-02T15:04", r.PostFormValue("since"))
		if ep == nil || err != nil {
			h.render(w, r, v, http.StatusBadRequest, "error", t(v.lang, "error.title"), t(v.lang, "deliveries.badRange"))
			return
		}
		n, err := h.o.Deliveries.ReplayFailed(r.Context(), v.project, v.testMode, *ep, since, time.Time{})
		if err != nil {
			h.appError(w, r, v, err)
			return
		}
		if err := h.sessions.audit(r.Context(), v.s, v.project, "replay failed deliveries", ep.String()+" since "+since.Format(time.RFC3339)); err != nil {
			h.internal(w, r, v.lang, err)
			return
		}
		redirectDone(w, r, back, tf(v.lang, "deliveries.replayedN", n))
		return
	}
	if _, err := h.o.Deliveries.Replay(r.Context(), v.project, v.testMode, id); err != nil {
		h.appError(w, r, v, err)
		return
	}
	if err := h.sessions.audit(r.Context(), v.s, v.project, "replay delivery", id); err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	redirectDone(w, r, back, tf(v.lang, "deliveries.replayed", id))
}

// enable enables a disabled endpoint again.
func (h *Handler) enable(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionAll) {
		h.forbidden(w, r, v, apikey.PermissionAll)
		return
	}
	ep := delivery.ParseEndpoint(r.PostFormValue("endpoint"))
	if ep == nil {
		h.render(w, r, v, http.StatusBadRequest, "error", t(v.lang, "error.title"), t(v.lang, "deliveries.badRange"))
		return
	}
	if _, err := h.o.Deliveries.Enable(r.Context(), v.project, *ep, v.s.actor()+" (console)"); err != nil {
		h.appError(w, r, v, err)
		return
	}
	if err := h.sessions.audit(r.Context(), v.s, v.project, "enable endpoint", ep.String()); err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	redirectDone(w, r, backTo(r, v.link("deliveries", nil)), tf(v.lang, "deliveries.enabled", ep.String()))
}
