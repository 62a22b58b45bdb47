package httpapi

import (
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
	// TotalSpent is what the project has spent, in cents (its ledger's charges less refunds).
	TotalSpent float64 `json:"totalSpent"`
}

type meTeam struct {
	ID   string  `json:"id"`
	Name *string `json:"name"`
}

// me answers who the key is: its id, test mode, project and team. A project that sets no team is
// a team of its own, named by the project's id.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	key, p := keyFrom(r.Context()), projectFrom(r.Context())
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
	if s.balances != nil {
		spent, err := s.balances.Spent(r.Context(), key.Project)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		resp.Project.TotalSpent = spent[key.Project].Cents()
	}
	writeJSON(w, http.StatusOK, resp)
}
