package httpapi

import (
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
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
	var projects v1alpha1.ProjectList
	if err := s.reader.List(r.Context(), &projects, client.InNamespace(key.Project)); err != nil {
		s.writeError(w, r, fmt.Errorf("read project %s: %w", key.Project, err))
		return
	}
	resp := meResponse{
		APIKey:     meKey{ID: key.ID},
		IsTestMode: key.TestMode(),
		Project:    meProject{ID: key.Project},
		Team:       meTeam{ID: key.Project},
	}
	if p := v1alpha1.NamespaceProject(projects.Items); p != nil {
		resp.Project.IsSubAccount = p.IsSubAccount()
		if p.Spec.DisplayName != "" {
			resp.Project.Name = &p.Spec.DisplayName
		}
		if p.Spec.Team != "" {
			resp.Team.ID = p.Spec.Team
		}
	}
	writeJSON(w, http.StatusOK, resp)
}
