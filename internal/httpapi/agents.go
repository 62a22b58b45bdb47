package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// agentJSON is the client's Agent (docs/agents-wire.md §3.0). The API key is never shown.
type agentJSON struct {
	ID                     string          `json:"id"`
	Name                   string          `json:"name"`
	Provider               string          `json:"provider"`
	Model                  string          `json:"model"`
	SystemPrompt           string          `json:"systemPrompt"`
	Enabled                bool            `json:"enabled"`
	SenderID               string          `json:"senderId"`
	SenderIDs              []string        `json:"senderIds"`
	ContextWindowMessages  int32           `json:"contextWindowMessages"`
	IncludeContactMetadata bool            `json:"includeContactMetadata"`
	MaxTokens              *int32          `json:"maxTokens"`
	Temperature            *float64        `json:"temperature"`
	TriggerOnChannels      []string        `json:"triggerOnChannels"`
	TriggerOnMessageTypes  []string        `json:"triggerOnMessageTypes"`
	Voice                  *agent.Voice    `json:"voice,omitempty"`
	Stats                  *agentStatsJSON `json:"stats,omitempty"`
	CreatedAt              time.Time       `json:"createdAt"`
	UpdatedAt              time.Time       `json:"updatedAt"`
}

type agentStatsJSON struct {
	TotalCost        float64 `json:"totalCost"`
	TotalInvocations int64   `json:"totalInvocations"`
	TotalTokensUsed  int64   `json:"totalTokensUsed"`
}

func agentView(a *v1alpha1.Agent, stats *agent.Stats) agentJSON {
	out := agentJSON{ID: a.Name, Name: a.Spec.DisplayName, Provider: string(a.Spec.Provider), Model: a.Spec.Model,
		SystemPrompt: a.Spec.SystemPrompt, Enabled: a.Spec.Enabled, SenderIDs: []string{}, MaxTokens: a.Spec.MaxTokens,
		ContextWindowMessages: agent.DefaultContextWindow, IncludeContactMetadata: a.Spec.IncludeContactMetadata,
		TriggerOnChannels: []string{}, TriggerOnMessageTypes: a.Spec.TriggerOnMessageTypes,
		CreatedAt: agent.CreatedAt(a), UpdatedAt: agent.UpdatedAt(a)}
	out.SenderIDs = append(out.SenderIDs, a.Spec.Senders...)
	if len(a.Spec.Senders) > 0 {
		out.SenderID = a.Spec.Senders[0]
	}
	if a.Spec.ContextWindowMessages != nil {
		out.ContextWindowMessages = *a.Spec.ContextWindowMessages
	}
	if a.Spec.Temperature != "" {
		if t, err := strconv.ParseFloat(a.Spec.Temperature, 64); err == nil {
			out.Temperature = &t
		}
	}
	for _, c := range a.Spec.TriggerOnChannels {
		out.TriggerOnChannels = append(out.TriggerOnChannels, string(c))
	}
	if out.TriggerOnMessageTypes == nil {
		out.TriggerOnMessageTypes = []string{"text"}
	}
	if v := a.Spec.Voice; v != nil {
		out.Voice = agent.VoiceView(v)
	}
	if stats != nil {
		out.Stats = &agentStatsJSON{TotalCost: stats.CostUSD, TotalInvocations: stats.Invocations, TotalTokensUsed: stats.Tokens}
	}
	return out
}

// agentOf is the agent a route names: /v1/agents/{agentId}/… or /v1/senders/{senderId}/agent/….
func (s *Server) agentOf(r *http.Request) (*v1alpha1.Agent, error) {
	key := keyFrom(r.Context())
	if id := r.PathValue("agentId"); id != "" {
		return s.agents.Get(r.Context(), key.Project, id)
	}
	return s.agents.OfSender(r.Context(), key.Project, r.PathValue("senderId"))
}

// agentAnswer renders one agent with its stats.
func (s *Server) agentAnswer(ctx context.Context, w http.ResponseWriter, r *http.Request, status int, a *v1alpha1.Agent) {
	key := keyFrom(ctx)
	stats, err := s.agents.Stats(ctx, key.Project, key.TestMode(), a.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"agent": agentView(a, &stats)})
}

func (s *Server) agentRoutes() []route {
	all := apikey.PermissionAll
	return []route{
		{method: "POST", path: "/v1/agents", access: permission, permission: all, handle: s.createAgent},
		{method: "GET", path: "/v1/agents", access: anyKey, handle: s.listAgents},
		{method: "GET", path: "/v1/agents/{agentId}", access: anyKey, handle: s.getAgent},
		{method: "PATCH", path: "/v1/agents/{agentId}", access: permission, permission: all, handle: s.updateAgent},
		{method: "DELETE", path: "/v1/agents/{agentId}", access: permission, permission: all, handle: s.deleteAgent},
		{method: "POST", path: "/v1/agents/{agentId}/senders", access: permission, permission: all, handle: s.connectAgentSender},
		{method: "DELETE", path: "/v1/agents/{agentId}/senders/{senderId}", access: permission, permission: all, handle: s.disconnectAgentSender},
		{method: "POST", path: "/v1/senders/{senderId}/agent", access: permission, permission: all, handle: s.createSenderAgent},
		{method: "GET", path: "/v1/senders/{senderId}/agent", access: anyKey, handle: s.getAgent},
		{method: "PATCH", path: "/v1/senders/{senderId}/agent", access: permission, permission: all, handle: s.updateAgent},
		{method: "DELETE", path: "/v1/senders/{senderId}/agent", access: permission, permission: all, handle: s.deleteAgent},
		{method: "GET", path: "/v1/senders/{senderId}/agent/stats", access: anyKey, handle: s.agentStats},
	}
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) {
	var in agent.Input
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agents.Create(r.Context(), keyFrom(r.Context()).Project, "", in, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswer(r.Context(), w, r, http.StatusCreated, a)
}

func (s *Server) createSenderAgent(w http.ResponseWriter, r *http.Request) {
	var in agent.Input
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agents.Create(r.Context(), keyFrom(r.Context()).Project, r.PathValue("senderId"), in, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswer(r.Context(), w, r, http.StatusCreated, a)
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	key := keyFrom(r.Context())
	limit, after, err := s.pageRequest(r, key.Project, "agents")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items, err := s.agents.List(r.Context(), key.Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rows := agentsAfter(items, after, limit)
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, "agents", rows, limit, agentPosition, func(a v1alpha1.Agent) agentJSON {
		return agentView(&a, nil)
	}))
}

// agentsAfter is the part of a project's agents (newest first) a list page shows: those after
// the cursor's position, at most limit+1 (pageOf tells by the extra one that there is more).
func agentsAfter(items []v1alpha1.Agent, after *position, limit int) []v1alpha1.Agent {
	rows := items
	if t, id := after.seek(); t != nil {
		rows = nil
		for _, a := range items {
			at := agent.CreatedAt(&a)
			if at.Before(*t) || (at.Equal(*t) && a.Name < *id) {
				rows = append(rows, a)
			}
		}
	}
	if len(rows) > limit+1 {
		rows = rows[:limit+1]
	}
	return rows
}

// agentPosition is an agent's place in a list: its creation, then its name.
func agentPosition(a v1alpha1.Agent) (time.Time, string) { return agent.CreatedAt(&a), a.Name }

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswer(r.Context(), w, r, http.StatusOK, a)
}

func (s *Server) updateAgent(w http.ResponseWriter, r *http.Request) {
	var in agent.Input
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if a, err = s.agents.Update(r.Context(), a, in); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswer(r.Context(), w, r, http.StatusOK, a)
}

func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err == nil {
		err = s.agents.Delete(r.Context(), a)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) connectAgentSender(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SenderID *string `json:"senderId"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.SenderID == nil || *in.SenderID == "" {
		s.writeError(w, r, apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: "is required"}))
		return
	}
	a, err := s.agentOf(r)
	if err == nil {
		a, err = s.agents.Connect(r.Context(), a, *in.SenderID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswer(r.Context(), w, r, http.StatusOK, a)
}

func (s *Server) disconnectAgentSender(w http.ResponseWriter, r *http.Request) {
	a, err := s.agents.Get(r.Context(), keyFrom(r.Context()).Project, r.PathValue("agentId"))
	if err == nil {
		_, err = s.agents.Disconnect(r.Context(), a, r.PathValue("senderId"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) agentStats(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	st, err := s.agents.Stats(r.Context(), key.Project, key.TestMode(), a.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"totalInvocations": st.Invocations, "successCount": st.Successes,
		"errorCount": st.Errors, "totalTokensUsed": st.Tokens, "totalCost": st.CostUSD, "avgLatencyMs": st.AvgLatencyMs})
}
