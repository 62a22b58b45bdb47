package console

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/broadcast"
)

func init() {
	register([]string{"broadcasts", "broadcast"}, []viewRoute{
		{pattern: "GET " + Path + "broadcasts", handler: func(h *Handler) handlerFunc { return h.broadcasts }},
		{pattern: "GET " + Path + "broadcasts/{id}", handler: func(h *Handler) handlerFunc { return h.broadcast }},
		{pattern: "POST " + Path + "broadcasts/{id}/cancel", handler: func(h *Handler) handlerFunc { return h.cancelBroadcast }},
	}, map[string]map[string]string{
		"en": {
			"nav.broadcasts":      "Broadcasts",
			"broadcasts.none":     "No broadcast matches.",
			"broadcast.name":      "Name",
			"broadcast.total":     "Recipients",
			"broadcast.progress":  "Progress",
			"broadcast.counters":  "Counters",
			"broadcast.pending":   "Pending",
			"broadcast.sending":   "Sending",
			"broadcast.delivered": "Delivered",
			"broadcast.failed":    "Failed",
			"broadcast.skipped":   "Skipped",
			"broadcast.percent":   "%s complete",
			"broadcast.cost":      "Cost so far",
			"broadcast.chart":     "The send, recipients processed per %s",
			"broadcast.noChart":   "Nothing is sent yet.",
			"broadcast.cancel":    "Cancel the broadcast",
			"broadcast.cancelled": "Broadcast %s is cancelled: pending recipients are skipped.",
			"broadcast.live":      "These counters refresh by themselves every 5 seconds.",
		},
		"es": {
			"nav.broadcasts":      "Difusiones",
			"broadcasts.none":     "Ninguna difusión coincide.",
			"broadcast.name":      "Nombre",
			"broadcast.total":     "Destinatarios",
			"broadcast.progress":  "Avance",
			"broadcast.counters":  "Contadores",
			"broadcast.pending":   "Pendientes",
			"broadcast.sending":   "Enviando",
			"broadcast.delivered": "Entregados",
			"broadcast.failed":    "Fallidos",
			"broadcast.skipped":   "Omitidos",
			"broadcast.percent":   "%s completado",
			"broadcast.cost":      "Costo hasta ahora",
			"broadcast.chart":     "El envío, destinatarios procesados por %s",
			"broadcast.noChart":   "Todavía no se envió nada.",
			"broadcast.cancel":    "Cancelar la difusión",
			"broadcast.cancelled": "La difusión %s está cancelada: los destinatarios pendientes se omiten.",
			"broadcast.live":      "Estos contadores se actualizan solos cada 5 segundos.",
		},
	})
}

// broadcastStatuses are the states a list may be filtered by.
var broadcastStatuses = broadcast.Statuses

type broadcastsData struct {
	Status   string
	Statuses []string
	Rows     []broadcastRow
	Next     string
}

type broadcastRow struct {
	broadcast.Broadcast
	Link string
}

func (v *view) broadcastKey() broadcast.Key {
	return broadcast.Key{Project: v.project, TestMode: v.testMode}
}

// broadcasts lists the project's broadcasts, newest first.
func (h *Handler) broadcasts(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesRead) {
		h.forbidden(w, r, v, apikey.PermissionMessagesRead)
		return
	}
	q := r.URL.Query()
	d := broadcastsData{Status: q.Get("status"), Statuses: broadcastStatuses}
	p := broadcast.Page{Limit: pageSize + 1}
	if before, id := q.Get("before"), q.Get("beforeId"); before != "" {
		if at, err := time.Parse(time.RFC3339Nano, before); err == nil {
			p.AfterTime, p.AfterID = at, id
		}
	}
	rows, err := h.o.Broadcasts.List(r.Context(), v.broadcastKey(), d.Status, p)
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	for i, b := range rows {
		if i == pageSize {
			d.Next = v.link("broadcasts", url.Values{"status": {d.Status}, "before": {rows[i-1].CreatedAt.UTC().Format(time.RFC3339Nano)},
				"beforeId": {rows[i-1].ID}})
			break
		}
		d.Rows = append(d.Rows, broadcastRow{Broadcast: b, Link: v.link("broadcasts/"+b.ID, nil)})
	}
	h.render(w, r, v, http.StatusOK, "broadcasts", t(v.lang, "nav.broadcasts"), d)
}

type broadcastData struct {
	B         broadcast.Broadcast
	P         broadcast.Progress
	Percent   string
	Chart     *chart
	Bucket    string
	CanCancel bool
	Back      string
}

// The statuses a recipient ends in, in the chart's order, with their colours.
var curveStatuses = []struct{ status, class string }{
	{"delivered", "c-ok"}, {"sending", "c-sent"}, {"queued", "c-sent"}, {"failed", "c-bad"}, {"skipped", "c-skip"},
}

// broadcast shows one broadcast: its live counters and a chart of its send.
func (h *Handler) broadcast(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesRead) {
		h.forbidden(w, r, v, apikey.PermissionMessagesRead)
		return
	}
	b, err := h.o.Broadcasts.Get(r.Context(), v.broadcastKey(), r.PathValue("id"))
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	p := h.o.Broadcasts.Progress(b)
	d := broadcastData{B: b, P: p, Percent: percent(p.PercentComplete / 100), Back: v.link("broadcasts/"+b.ID, nil),
		CanCancel: v.s.can(apikey.PermissionMessagesSend) && !slices.Contains([]string{"completed", "cancelled", "failed", "rejected_final"}, b.Status)}
	// Buckets of a minute, or of a second for a send that took under two minutes.
	bucket := time.Minute
	if p.StartedAt != nil && time.Since(*p.StartedAt) < 2*time.Minute {
		bucket = time.Second
	}
	d.Bucket = map[time.Duration]string{time.Minute: "minute", time.Second: "second"}[bucket]
	points, err := h.o.Broadcasts.SendCurve(r.Context(), v.broadcastKey(), b.ID, bucket)
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	if len(points) > 0 {
		c := &chart{Title: tf(v.lang, "broadcast.chart", d.Bucket), Corner: t(v.lang, "col.when")}
		index := map[time.Time]int{}
		for _, pt := range points {
			if _, ok := index[pt.At]; !ok {
				index[pt.At] = len(c.Labels)
				layout := "15:04"
				if bucket == time.Second {
					layout = "15:04:05"
				}
				c.Labels = append(c.Labels, pt.At.UTC().Format(layout))
			}
		}
		for _, cs := range curveStatuses {
			s := chartSeries{Name: cs.status, Class: cs.class, Values: make([]int64, len(c.Labels))}
			for _, pt := range points {
				if pt.Status == cs.status {
					s.Values[index[pt.At]] += pt.Recipients
				}
			}
			c.Series = append(c.Series, s)
		}
		d.Chart = c
	}
	h.render(w, r, v, http.StatusOK, "broadcast", b.Name, d)
}

// cancelBroadcast cancels a broadcast: its pending recipients are skipped; audited.
func (h *Handler) cancelBroadcast(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesSend) {
		h.forbidden(w, r, v, apikey.PermissionMessagesSend)
		return
	}
	id := r.PathValue("id")
	if _, err := h.o.Broadcasts.Cancel(r.Context(), v.broadcastKey(), id); err != nil {
		h.appError(w, r, v, err)
		return
	}
	if err := h.sessions.audit(r.Context(), v.s, v.project, "cancel broadcast", id); err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	redirectDone(w, r, backTo(r, v.link("broadcasts/"+id, nil)), tf(v.lang, "broadcast.cancelled", id))
}
