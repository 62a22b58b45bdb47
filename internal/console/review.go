package console

import (
	"net/http"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/message"
)

type reviewData struct {
	Holds []holdRow
	// CanDecide: only an installation operator decides (docs/risk.md); a project sees its holds.
	CanDecide bool
	Back      string
}

type holdRow struct {
	message.Hold
	Link string
}

// reviewRows is how many holds the queue shows, oldest first.
const reviewRows = 200

// review is the risk review queue of the project: each held message, the rule that held it and
// what it saw (the reason), approve and refuse; one read for the page.
func (h *Handler) review(w http.ResponseWriter, r *http.Request, v *view) {
	if !v.s.can(apikey.PermissionMessagesRead) {
		h.forbidden(w, r, v, apikey.PermissionMessagesRead)
		return
	}
	holds, err := h.o.Messages.OpenHolds(r.Context(), v.project, reviewRows)
	if err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	d := reviewData{CanDecide: v.s.key == nil, Back: v.link("review", nil)}
	for _, hold := range holds {
		if hold.TestMode != v.testMode {
			continue
		}
		d.Holds = append(d.Holds, holdRow{Hold: hold, Link: v.link("messages/"+hold.MessageID, nil)})
	}
	h.render(w, r, v, http.StatusOK, "review", t(v.lang, "nav.review"), d)
}

// decide approves or refuses a held message of the project; only an operator decides, and each
// decision is audited.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request, v *view) {
	if v.s.key != nil {
		h.render(w, r, v, http.StatusForbidden, "error", t(v.lang, "error.title"), t(v.lang, "review.operatorsOnly"))
		return
	}
	id := r.PathValue("id")
	decision := r.PostFormValue("decision")
	if decision != "approve" && decision != "refuse" {
		h.render(w, r, v, http.StatusBadRequest, "error", t(v.lang, "error.title"), t(v.lang, "review.badDecision"))
		return
	}
	// The message must be the chosen project's (and mode's): an id of another is not found.
	if _, err := h.o.Messages.Get(r.Context(), v.key(), id); err != nil {
		h.appError(w, r, v, err)
		return
	}
	if err := h.o.Messages.DecideHold(r.Context(), id, decision == "approve", v.s.actor()+" (console)"); err != nil {
		h.appError(w, r, v, err)
		return
	}
	if err := h.sessions.audit(r.Context(), v.s, v.project, decision+" held message", id); err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	redirectDone(w, r, backTo(r, v.link("review", nil)), tf(v.lang, "review."+decision+"d", id))
}
