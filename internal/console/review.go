package console

import (
	"net/http"
	"slices"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

type reviewData struct {
	Holds []holdRow
	// URLs are the project's URLs escalated for an operator's review.
	URLs []db.VerifiedUrl
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
	urls, err := h.projectEscalations(r, v)
	if err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	d.URLs = urls
	h.render(w, r, v, http.StatusOK, "review", t(v.lang, "nav.review"), d)
}

// escalationRows bounds the escalated URLs read for a page (every project's, oldest first).
const escalationRows = 1000

// projectEscalations are the view's project's escalated URLs of its mode: one read.
func (h *Handler) projectEscalations(r *http.Request, v *view) ([]db.VerifiedUrl, error) {
	all, err := h.o.URLs.Escalated(r.Context(), escalationRows)
	if err != nil {
		return nil, err
	}
	var out []db.VerifiedUrl
	for _, u := range all {
		if u.Project == v.project && u.TestMode == v.testMode {
			out = append(out, u)
		}
	}
	return out, nil
}

// decideURL approves or rejects an escalated URL of the project; operators only, audited.
func (h *Handler) decideURL(w http.ResponseWriter, r *http.Request, v *view) {
	if v.s.key != nil {
		h.render(w, r, v, http.StatusForbidden, "error", t(v.lang, "error.title"), t(v.lang, "review.operatorsOnly"))
		return
	}
	id, decision := r.PathValue("id"), r.PostFormValue("decision")
	if decision != "approve" && decision != "refuse" {
		h.render(w, r, v, http.StatusBadRequest, "error", t(v.lang, "error.title"), t(v.lang, "review.badDecision"))
		return
	}
	urls, err := h.projectEscalations(r, v)
	if err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	if !slices.ContainsFunc(urls, func(u db.VerifiedUrl) bool { return u.ID == id }) {
		h.render(w, r, v, http.StatusNotFound, "error", t(v.lang, "error.title"), tf(v.lang, "review.noURL", id))
		return
	}
	if _, err := h.o.URLs.Review(r.Context(), id, decision == "approve", v.s.actor()+" (console)", r.PostFormValue("reason")); err != nil {
		h.appError(w, r, v, err)
		return
	}
	if err := h.sessions.audit(r.Context(), v.s, v.project, decision+" escalated URL", id); err != nil {
		h.internal(w, r, v.lang, err)
		return
	}
	redirectDone(w, r, backTo(r, v.link("review", nil)), tf(v.lang, "review.url."+decision+"d", id))
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
