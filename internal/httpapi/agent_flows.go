package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/optional"
)

// agentFlowRoutes are the routes of agents' flows, under the sender's agent and the agent
// itself (docs/agents-wire.md §1.2, §1.8).
func (s *Server) agentFlowRoutes() []route {
	all := apikey.PermissionAll
	var out []route
	for _, p := range []string{"/v1/senders/{senderId}/agent", "/v1/agents/{agentId}"} {
		out = append(out,
			route{method: "POST", path: p + "/flows", access: permission, permission: all, handle: s.createAgentFlow},
			route{method: "GET", path: p + "/flows", access: anyKey, handle: s.listAgentFlows},
			route{method: "GET", path: p + "/flows/{flowId}", access: anyKey, handle: s.getAgentFlow},
			route{method: "PATCH", path: p + "/flows/{flowId}", access: permission, permission: all, handle: s.updateAgentFlow},
			route{method: "DELETE", path: p + "/flows/{flowId}", access: permission, permission: all, handle: s.deleteAgentFlow},
			route{method: "POST", path: p + "/flows/{flowId}/duplicate", access: permission, permission: all, handle: s.duplicateAgentFlow},
		)
	}
	return out
}

// flowJSON is the client's AgentFlow (§3.9), with timeoutMinutes besides.
type flowJSON struct {
	ID             string               `json:"id"`
	AgentID        string               `json:"agentId"`
	Name           string               `json:"name"`
	Description    *string              `json:"description"`
	Enabled        bool                 `json:"enabled"`
	Priority       int32                `json:"priority"`
	Trigger        v1alpha1.FlowTrigger `json:"trigger"`
	Steps          []flowStepJSON       `json:"steps"`
	TimeoutMinutes int32                `json:"timeoutMinutes"`
	CreatedAt      time.Time            `json:"createdAt"`
	UpdatedAt      time.Time            `json:"updatedAt"`
}

type flowStepJSON struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Config     json.RawMessage `json:"config"`
	NextStepID *string         `json:"nextStepId"`
}

func flowView(f agent.Flow) flowJSON {
	out := flowJSON{ID: f.ID, AgentID: f.AgentID, Name: f.Name, Enabled: f.FlowEnabled(), Priority: f.Priority, Trigger: f.Trigger,
		Steps: make([]flowStepJSON, len(f.Steps)), TimeoutMinutes: int32(agent.DefaultFlowTimeout.Minutes()),
		CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
	if f.Description != "" {
		out.Description = &f.Description
	}
	if f.TimeoutMinutes != nil {
		out.TimeoutMinutes = *f.TimeoutMinutes
	}
	for i, st := range f.Steps {
		cfg := json.RawMessage(st.Config.Raw)
		if len(cfg) == 0 {
			cfg = json.RawMessage(`{}`)
		}
		out.Steps[i] = flowStepJSON{ID: st.ID, Type: st.Type, Config: cfg}
		if st.NextStepID != "" {
			next := st.NextStepID
			out.Steps[i].NextStepID = &next
		}
	}
	return out
}

func (s *Server) createAgentFlow(w http.ResponseWriter, r *http.Request) {
	var in agent.FlowInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.agents.CreateFlow(r.Context(), a, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"flow": flowView(f)})
}

func (s *Server) listAgentFlows(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	list := "agent-flows:" + a.Name
	limit, after, err := s.pageRequest(r, key.Project, list)
	enabled, err := enabledQuery(r, err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(f agent.Flow) (time.Time, string) { return f.CreatedAt, f.ID }
	rows := pageInMemory(s.agents.Flows(a, enabled), after, limit, at)
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, list, rows, limit, at, flowView))
}

func (s *Server) getAgentFlow(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.agents.GetFlow(a, r.PathValue("flowId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"flow": flowView(f)})
}

func (s *Server) updateAgentFlow(w http.ResponseWriter, r *http.Request) {
	var in agent.FlowInput
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.agents.UpdateFlow(r.Context(), a, r.PathValue("flowId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"flow": flowView(f)})
}

func (s *Server) deleteAgentFlow(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err == nil {
		err = s.agents.DeleteFlow(r.Context(), a, r.PathValue("flowId"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) duplicateAgentFlow(w http.ResponseWriter, r *http.Request) {
	var in struct {
		NewName optional.Value[string] `json:"newName"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := s.agents.DuplicateFlow(r.Context(), a, r.PathValue("flowId"), in.NewName)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"flow": flowView(f)})
}
