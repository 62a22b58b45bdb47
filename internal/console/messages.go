package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// pageSize is how many rows a list shows.
const pageSize = 50

// Choices the search forms offer.
var (
	statuses = []string{"queued", "sent", "delivered", "read", "failed", "received"}
	channels = []string{"sms", "whatsapp", "telegram", "email", "instagram", "messenger", "voice"}
	periods  = []string{"1h", "24h", "168h"}
)

type messagesData struct {
	To, Status, Channel, Sender, Period string
	Statuses, Channels, Periods         []string
	Rows                                []messageRow
	Next                                string
}

type messageRow struct {
	ID, Link, To, From, Channel, Status, Sender, Direction string
	At                                                     time.Time
	Held                                                   bool
}

// messages is the search of messages: by recipient, status, channel, sender and time; one read
// of one day's partitions at a time, in one round trip for a page of a common search.
func (h *Handler) messages(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesRead) {
		h.forbidden(w, r, v, apikey.PermissionMessagesRead)
		return
	}
	q := r.URL.Query()
	d := messagesData{To: q.Get("to"), Status: q.Get("status"), Channel: q.Get("channel"), Sender: q.Get("sender"), Period: q.Get("period"),
		Statuses: statuses, Channels: channels, Periods: periods}
	if !q.Has("period") {
		// The first look is at the last day: one read. "Any" searches the whole retention, newest
		// first, reading further back only until the page is full.
		d.Period = "24h"
	}
	f := message.ListFilter{Limit: pageSize + 1}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	f.To, f.Status, f.Channel, f.Sender = opt(d.To), opt(d.Status), opt(d.Channel), opt(d.Sender)
	if p, err := time.ParseDuration(d.Period); err == nil && p > 0 {
		since := time.Now().Add(-p)
		f.Since = &since
	}
	if before, id := q.Get("before"), q.Get("beforeId"); before != "" {
		if at, err := time.Parse(time.RFC3339Nano, before); err == nil {
			f.BeforeTime, f.BeforeID = &at, &id
		}
	}
	rows, err := h.o.Messages.List(r.Context(), v.key(), f)
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	for i, m := range rows {
		if i == pageSize {
			next := url.Values{"to": {d.To}, "status": {d.Status}, "channel": {d.Channel}, "sender": {d.Sender}, "period": {d.Period},
				"before": {rows[i-1].CreatedAt.UTC().Format(time.RFC3339Nano)}, "beforeId": {rows[i-1].ID}}
			d.Next = v.link("messages", next)
			break
		}
		d.Rows = append(d.Rows, messageRow{ID: m.ID, Link: v.link("messages/"+m.ID, nil), To: m.Recipient, From: m.Originator,
			Channel: m.Channel, Status: m.Status, Sender: m.Sender, Direction: m.Direction, At: m.CreatedAt, Held: m.RiskHold})
	}
	h.render(w, r, v, http.StatusOK, "messages", t(v.lang, "nav.messages"), d)
}

type messageData struct {
	M          db.Message
	Body       string
	Timeline   []timelineItem
	Deliveries []deliveryRow
	CanReplay  bool
	Back       string
}

// timelineItem is one moment of a message's life: its creation, each event its webhooks were
// told of (a status change, with its time), its last change. Switchboard keeps no status
// history apart from the events: a message of a project without webhooks shows its creation
// and its status now.
type timelineItem struct {
	At     time.Time
	What   string
	Detail string
}

// message is one message: what it is (with the provider's answer), its timeline, and every
// webhook delivery of its events with their attempts.
func (h *Handler) message(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesRead) {
		h.forbidden(w, r, v, apikey.PermissionMessagesRead)
		return
	}
	m, err := h.o.Messages.Get(r.Context(), v.key(), r.PathValue("id"))
	if err != nil {
		h.appError(w, r, v, err)
		return
	}
	d := messageData{M: m, CanReplay: v.s.can(apikey.PermissionAll), Back: v.link("messages/"+m.ID, nil)}
	if m.Body != nil {
		d.Body = *m.Body
	}
	d.Timeline = append(d.Timeline, timelineItem{At: m.CreatedAt, What: "created", Detail: m.Direction + " · " + m.Channel})
	if v.s.can(apikey.PermissionAll) {
		// The webhook deliveries of its events (and the events themselves, with their times).
		rows, err := h.o.Deliveries.List(r.Context(), v.project, v.testMode, delivery.Filter{MessageID: m.ID, Limit: 200,
			Since: m.CreatedAt.Add(-time.Minute)})
		if err != nil {
			h.internal(w, r, v.lang, err)
			return
		}
		attempts, err := h.o.Deliveries.AttemptsOf(r.Context(), rows, m.CreatedAt.Add(-time.Minute))
		if err != nil {
			h.internal(w, r, v.lang, err)
			return
		}
		seen := map[string]bool{}
		for i := len(rows) - 1; i >= 0; i-- { // oldest first
			dl := rows[i]
			row := deliveryRowOf(dl)
			row.Attempts = attempts[dl.ID]
			d.Deliveries = append(d.Deliveries, row)
			if key := dl.Event; !seen[key] {
				seen[key] = true
				d.Timeline = append(d.Timeline, timelineItem{At: dl.CreatedAt, What: "event", Detail: dl.Event})
			}
		}
	}
	d.Timeline = append(d.Timeline, timelineItem{At: m.UpdatedAt, What: "status", Detail: m.Status})
	sort.SliceStable(d.Timeline, func(i, j int) bool { return d.Timeline[i].At.Before(d.Timeline[j].At) })
	h.render(w, r, v, http.StatusOK, "message", m.ID, d)
}

// prettyJSON indents a JSON document for reading; not JSON, it is shown as it is.
func prettyJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}
