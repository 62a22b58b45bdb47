package httpapi

import (
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
)

// urlRoutes are URL verification (docs/urls.md): the URLs a project sends are verified before
// its live SMS and email go.
func (s *Server) urlRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/urls", access: permission, permission: apikey.PermissionAll, handle: s.submitURL},
		{method: "GET", path: "/v1/urls", access: anyKey, handle: s.listURLs},
		{method: "GET", path: "/v1/urls/{urlId}", access: anyKey, handle: s.getURL},
		{method: "POST", path: "/v1/urls/{urlId}/escalate", access: permission, permission: apikey.PermissionAll, handle: s.escalateURL},
	}
}

func (s *Server) submitURL(w http.ResponseWriter, r *http.Request) {
	var in struct {
		URL string `json:"url"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, created, err := s.urls.Submit(r.Context(), keyFrom(r.Context()), in.URL)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK // submitted before: as it stands
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, map[string]any{"url": u})
}

func (s *Server) listURLs(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	limit, after, err := s.pageRequest(r, key.Project, "urls")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, id := after.seek()
	rows, err := s.urls.List(r.Context(), key, urlcheck.Page{Status: r.URL.Query().Get("status"), BeforeTime: t, BeforeID: id, Limit: int32(limit + 1)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(u urlcheck.URL) (time.Time, string) { return u.CreatedAt, u.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "urls", rows, limit, at, func(u urlcheck.URL) urlcheck.URL { return u }))
}

func (s *Server) getURL(w http.ResponseWriter, r *http.Request) {
	u, err := s.urls.Get(r.Context(), keyFrom(r.Context()), r.PathValue("urlId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": u})
}

func (s *Server) escalateURL(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := s.urls.Escalate(r.Context(), keyFrom(r.Context()), r.PathValue("urlId"), in.Reason)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "The URL is escalated: an operator reviews it.", "url": u})
}
