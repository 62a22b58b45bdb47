package httpapi

import (
	"errors"
	"fmt"
	"net/http"
)

// meResponse is GET /v1/me (WIRE.md §9).
type meResponse struct {
	APIKey     meKey     `json:"apiKey"`
	IsTestMode bool      `json:"isTestMode"`
	Project    meProject `json:"project"`
	Team       meTeam    `json:"team"`
}

type meKey struct {
	ID string `json:"id"`
}

type meProject struct {
	ID           string  `json:"id"`
	IsSubAccount bool    `json:"isSubAccount"`
	Name         *string `json:"name"`
}

type meTeam struct {
	ID   string  `json:"id"`
	Name *string `json:"name"`
}

// me answers who the key is: its id, test mode, project and team. A project that sets no team is
// a team of its own, named by the project's id.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	p, err := s.project(r.Context(), key.Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := meResponse{
		APIKey:     meKey{ID: key.ID},
		IsTestMode: key.TestMode(),
		Project:    meProject{ID: key.Project},
		Team:       meTeam{ID: key.Project},
	}
	if p != nil {
		resp.Project.IsSubAccount = p.IsSubAccount()
		if p.Spec.DisplayName != "" {
			resp.Project.Name = &p.Spec.DisplayName
		}
		resp.Team.ID = p.TeamKey()
	}
	writeJSON(w, http.StatusOK, resp)
}

// orInternal returns err, or an internal error with message when err is nil.
func orInternal(err error, message string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", message, err)
	}
	return errors.New(message)
}
