package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/broadcast"
)

// Broadcasts (WIRE.md §4): {broadcast} for one, cursor pages for lists, the bare progress.

func broadcastKey(r *http.Request) broadcast.Key {
	k := keyFrom(r.Context())
	return broadcast.Key{Project: k.Project, TestMode: k.TestMode()}
}

func (s *Server) broadcastPage(w http.ResponseWriter, r *http.Request, list string) (broadcast.Page, int, bool) {
	after, id, limit, ok := s.seekPage(w, r, list)
	return broadcast.Page{AfterTime: after, AfterID: id, Limit: limit + 1}, limit, ok
}

func (s *Server) writeBroadcast(w http.ResponseWriter, r *http.Request, status int, b broadcast.Broadcast, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"broadcast": b})
}

func (s *Server) createBroadcast(w http.ResponseWriter, r *http.Request) {
	var in broadcast.Input
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.broadcasts.Create(r.Context(), broadcastKey(r), in)
	var dup *broadcast.ErrDuplicate
	if errors.As(err, &dup) {
		e := apperror.New(apperror.Conflict, "idempotent_replay",
			"A broadcast was already created with this idempotency key; it is in details.broadcast, and nothing was created again.")
		e.Details = map[string]any{"broadcast": dup.Original}
		err = e
	}
	s.writeBroadcast(w, r, http.StatusCreated, b, err)
}

func (s *Server) listBroadcasts(w http.ResponseWriter, r *http.Request) {
	p, limit, ok := s.broadcastPage(w, r, "broadcasts")
	if !ok {
		return
	}
	k := broadcastKey(r)
	rows, err := s.broadcasts.List(r.Context(), k, r.URL.Query().Get("status"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, k.Project, "broadcasts", rows, limit,
		func(b broadcast.Broadcast) (time.Time, string) { return b.CreatedAt, b.ID }, func(b broadcast.Broadcast) broadcast.Broadcast { return b }))
}

func (s *Server) getBroadcast(w http.ResponseWriter, r *http.Request) {
	b, err := s.broadcasts.Get(r.Context(), broadcastKey(r), r.PathValue("broadcastId"))
	s.writeBroadcast(w, r, http.StatusOK, b, err)
}

func (s *Server) updateBroadcast(w http.ResponseWriter, r *http.Request) {
	var in broadcast.Input
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.broadcasts.Update(r.Context(), broadcastKey(r), r.PathValue("broadcastId"), in)
	s.writeBroadcast(w, r, http.StatusOK, b, err)
}

func (s *Server) deleteBroadcast(w http.ResponseWriter, r *http.Request) {
	if err := s.broadcasts.Delete(r.Context(), broadcastKey(r), r.PathValue("broadcastId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) addBroadcastContacts(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Contacts *[]broadcast.ContactInput `json:"contacts"`
	}
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	var contacts []broadcast.ContactInput
	if req.Contacts != nil {
		contacts = *req.Contacts
	}
	added, err := s.broadcasts.AddContacts(r.Context(), broadcastKey(r), r.PathValue("broadcastId"), contacts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, added)
}

func (s *Server) listBroadcastContacts(w http.ResponseWriter, r *http.Request) {
	p, limit, ok := s.broadcastPage(w, r, "broadcast-contacts")
	if !ok {
		return
	}
	k := broadcastKey(r)
	rows, err := s.broadcasts.Contacts(r.Context(), k, r.PathValue("broadcastId"), r.URL.Query().Get("status"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pageOf(s.cursors, k.Project, "broadcast-contacts", rows, limit,
		func(c broadcast.Contact) (time.Time, string) { return c.CreatedAt, c.ID }, func(c broadcast.Contact) broadcast.Contact { return c }))
}

func (s *Server) removeBroadcastContact(w http.ResponseWriter, r *http.Request) {
	if err := s.broadcasts.RemoveContact(r.Context(), broadcastKey(r), r.PathValue("broadcastId"), r.PathValue("contactId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) broadcastProgress(w http.ResponseWriter, r *http.Request) {
	s.progress(w, r, r.PathValue("broadcastId"))
}

// progress answers the bare progress of broadcast id.
func (s *Server) progress(w http.ResponseWriter, r *http.Request, id string) {
	b, err := s.broadcasts.Get(r.Context(), broadcastKey(r), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.broadcasts.Progress(b))
}

func (s *Server) sendBroadcast(w http.ResponseWriter, r *http.Request) {
	s.send(w, r, r.PathValue("broadcastId"), s.writeBroadcast)
}

// send sends broadcast id for review (optionally with {scheduledAt}), answered by write in the
// request's generation.
func (s *Server) send(w http.ResponseWriter, r *http.Request, id string,
	write func(http.ResponseWriter, *http.Request, int, broadcast.Broadcast, error)) {
	var req struct {
		ScheduledAt *string `json:"scheduledAt"`
	}
	if err := decodeJSON(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.broadcasts.Send(r.Context(), broadcastKey(r), id, req.ScheduledAt)
	write(w, r, http.StatusOK, b, err)
}

func (s *Server) rescheduleBroadcast(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ScheduledAt *string `json:"scheduledAt"`
	}
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.broadcasts.Reschedule(r.Context(), broadcastKey(r), r.PathValue("broadcastId"), req.ScheduledAt)
	s.writeBroadcast(w, r, http.StatusOK, b, err)
}

func (s *Server) cancelBroadcast(w http.ResponseWriter, r *http.Request) {
	b, err := s.broadcasts.Cancel(r.Context(), broadcastKey(r), r.PathValue("broadcastId"))
	s.writeBroadcast(w, r, http.StatusOK, b, err)
}

func (s *Server) escalateBroadcast(w http.ResponseWriter, r *http.Request) {
	b, err := s.broadcasts.Escalate(r.Context(), broadcastKey(r), r.PathValue("broadcastId"))
	s.writeBroadcast(w, r, http.StatusOK, b, err)
}

func (s *Server) retryBroadcastReview(w http.ResponseWriter, r *http.Request) {
	b, err := s.broadcasts.RetryReview(r.Context(), broadcastKey(r), r.PathValue("broadcastId"))
	s.writeBroadcast(w, r, http.StatusOK, b, err)
}
