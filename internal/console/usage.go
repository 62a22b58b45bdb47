package console

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

func init() {
	register([]string{"usage"}, []viewRoute{
		{pattern: "GET " + Path + "usage", handler: func(h *Handler) handlerFunc { return h.usage }},
	}, map[string]map[string]string{
		"en": {
			"nav.usage":      "Usage and money",
			"usage.balance":  "Balance",
			"usage.spent":    "Spent in all",
			"usage.chart":    "Use per day, the last %d days",
			"usage.none":     "Nothing used in the last %d days.",
			"usage.ledger":   "Ledger",
			"usage.kind":     "Entry",
			"usage.amount":   "Amount",
			"usage.note":     "Note",
			"usage.noLedger": "The ledger is empty.",
			"usage.day":      "Day",
		},
		"es": {
			"nav.usage":      "Uso y dinero",
			"usage.balance":  "Saldo",
			"usage.spent":    "Gastado en total",
			"usage.chart":    "Uso por día, los últimos %d días",
			"usage.none":     "Nada usado en los últimos %d días.",
			"usage.ledger":   "Libro mayor",
			"usage.kind":     "Movimiento",
			"usage.amount":   "Importe",
			"usage.note":     "Nota",
			"usage.noLedger": "El libro mayor está vacío.",
			"usage.day":      "Día",
		},
	})
}

// usageDays is how far back the usage chart goes.
const usageDays = 30

// The meters usage is counted on, in the chart's order, with their colours.
var meters = []struct{ name, class string }{{"sms", "c-a"}, {"conversational", "c-b"}, {"email", "c-c"}, {"voice", "c-d"}}

type usageData struct {
	Balance    billing.View
	Days       int
	Chart      *chart
	ShowLedger bool
	Ledger     []db.LedgerEntry
}

// usage shows the balance, the daily use by channel (a chart and its table), and the ledger.
func (h *Handler) usage(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesRead) {
		h.forbidden(w, r, v, apikey.PermissionMessagesRead)
		return
	}
	d := usageData{Days: usageDays, ShowLedger: v.s.can(apikey.PermissionAll)}
	var err error
	if d.Balance, err = h.o.Balances.Balance(r.Context(), v.project); err != nil {
		h.appError(w, r, v, err)
		return
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, -(usageDays - 1))
	rows, err := h.o.Balances.DailyUsage(r.Context(), v.project, v.testMode, since)
	if err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	if len(rows) > 0 {
		c := &chart{Title: tf(v.lang, "usage.chart", usageDays), Corner: t(v.lang, "usage.day")}
		index := map[time.Time]int{}
		for day := since; !day.After(today); day = day.AddDate(0, 0, 1) {
			index[day] = len(c.Labels)
			c.Labels = append(c.Labels, day.Format("01-02"))
		}
		for _, m := range meters {
			s := chartSeries{Name: m.name, Class: m.class, Values: make([]int64, len(c.Labels))}
			for _, row := range rows {
				if i, ok := index[row.PeriodStart.UTC().Truncate(24*time.Hour)]; ok && row.Meter == m.name {
					s.Values[i] += row.Used
				}
			}
			c.Series = append(c.Series, s)
		}
		d.Chart = c
	}
	if d.ShowLedger {
		if d.Ledger, err = h.o.Balances.Ledger(r.Context(), v.project, pageSize); err != nil {
			h.internal(w, r, v.lang, err)
			return
		}
	}
	h.render(w, r, v, http.StatusOK, "usage", t(v.lang, "nav.usage"), d)
}
