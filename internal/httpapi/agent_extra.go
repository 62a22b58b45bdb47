package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/sender"
)

// agentExtraRoutes are the routes of voices, agent templates, the dry run and /v2/agents.
// GET /v1/agents/voices is a literal path: ServeMux prefers it to GET /v1/agents/{agentId}.
func (s *Server) agentExtraRoutes() []route {
	all := apikey.PermissionAll
	return []route{
		{method: "GET", path: "/v1/agents/voices", access: anyKey, handle: s.listVoices},
		{method: "POST", path: "/v1/agents/{agentId}/test", access: permission, permission: all, handle: s.testAgent},
		{method: "GET", path: "/v1/agent-templates", access: anyKey, handle: s.listAgentTemplates},
		{method: "GET", path: "/v1/agent-templates/{templateId}", access: anyKey, handle: s.getAgentTemplate},

		{method: "GET", path: "/v2/agents", access: anyKey, handle: s.listAgentsV2},
		{method: "POST", path: "/v2/agents", access: permission, permission: all, handle: s.createAgentV2},
		{method: "GET", path: "/v2/agents/{agentId}", access: anyKey, handle: s.getAgentV2},
		{method: "PATCH", path: "/v2/agents/{agentId}", access: permission, permission: all, handle: s.updateAgentV2},
		{method: "DELETE", path: "/v2/agents/{agentId}", access: permission, permission: all, handle: s.deleteAgent},
		{method: "POST", path: "/v2/agents/{agentId}/channels", access: permission, permission: all, handle: s.connectAgentChannel},
		{method: "DELETE", path: "/v2/agents/{agentId}/channels/{address}/{type}", access: permission, permission: all, handle: s.disconnectAgentChannel},
	}
}

func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) {
	book := s.voices
	if book == nil {
		var err error
		if book, err = agent.LoadVoicebook(""); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	list, err := book.Voices(r.URL.Query().Get("language"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) listAgentTemplates(w http.ResponseWriter, r *http.Request) {
	items, err := agent.Templates()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) getAgentTemplate(w http.ResponseWriter, r *http.Request) {
	t, err := agent.TemplateByID(r.PathValue("templateId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"template": t})
}

// testAgent is the dry run: the bare AgentTestResult, 200 even when the model failed.
func (s *Server) testAgent(w http.ResponseWriter, r *http.Request) {
	var in agent.TestInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.agents.Test(r.Context(), a, keyFrom(r.Context()).TestMode(), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// agentV2JSON is a v2 agent: the v1 Agent's fields with channel links instead of sender links,
// and no stats (they stay on v1).
type agentV2JSON struct {
	ID                     string             `json:"id"`
	Name                   string             `json:"name"`
	Provider               string             `json:"provider"`
	Model                  string             `json:"model"`
	SystemPrompt           string             `json:"systemPrompt"`
	Enabled                bool               `json:"enabled"`
	Channels               []agentChannelJSON `json:"channels"`
	ContextWindowMessages  int32              `json:"contextWindowMessages"`
	IncludeContactMetadata bool               `json:"includeContactMetadata"`
	MaxTokens              *int32             `json:"maxTokens"`
	Temperature            *float64           `json:"temperature"`
	TriggerOnChannels      []string           `json:"triggerOnChannels"`
	TriggerOnMessageTypes  []string           `json:"triggerOnMessageTypes"`
	Voice                  *agent.Voice       `json:"voice,omitempty"`
	CreatedAt              time.Time          `json:"createdAt"`
	UpdatedAt              time.Time          `json:"updatedAt"`
}

// agentChannelJSON is a channel an agent answers on: a channel of one of its senders that can
// receive and that its triggerOnChannels admit, with the v1 sender behind it.
type agentChannelJSON struct {
	Address    string `json:"address"`
	Type       string `json:"type"`
	Active     bool   `json:"active"`
	V1SenderID string `json:"v1SenderId"`
}

// agentViewV2 renders a with its channel links, found among the project's channel entries.
func agentViewV2(a *v1alpha1.Agent, entries []sender.Address) agentV2JSON {
	v := agentView(a, nil)
	out := agentV2JSON{ID: v.ID, Name: v.Name, Provider: v.Provider, Model: v.Model, SystemPrompt: v.SystemPrompt,
		Enabled: v.Enabled, Channels: []agentChannelJSON{}, ContextWindowMessages: v.ContextWindowMessages,
		IncludeContactMetadata: v.IncludeContactMetadata, MaxTokens: v.MaxTokens, Temperature: v.Temperature,
		TriggerOnChannels: v.TriggerOnChannels, TriggerOnMessageTypes: v.TriggerOnMessageTypes, Voice: v.Voice,
		CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
	for _, name := range a.Spec.Senders {
		for _, e := range entries {
			if e.Sender.Name == name && agent.AnswersOn(a, e.Type) {
				out.Channels = append(out.Channels, agentChannelJSON{Address: e.Address, Type: string(e.Type), Active: e.Active, V1SenderID: name})
			}
		}
	}
	return out
}

// agentAnswerV2 renders one agent as v2 does.
func (s *Server) agentAnswerV2(ctx context.Context, w http.ResponseWriter, r *http.Request, status int, a *v1alpha1.Agent) {
	entries, err := s.senders.Addresses(ctx, keyFrom(ctx).Project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, map[string]any{"agent": agentViewV2(a, entries)})
}

func (s *Server) listAgentsV2(w http.ResponseWriter, r *http.Request) {
	project := keyFrom(r.Context()).Project
	limit, after, err := s.pageRequest(r, project, "agents")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items, err := s.agents.List(r.Context(), project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	entries, err := s.senders.Addresses(r.Context(), project)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rows := agentsAfter(items, after, limit)
	writeJSON(w, http.StatusOK, pageOf(s.cursors, project, "agents", rows, limit, agentPosition, func(a v1alpha1.Agent) agentV2JSON {
		return agentViewV2(&a, entries)
	}))
}

// createAgentV2 makes an agent with no channel, disabled unless the body enables it. Every
// missing required field is listed at once, apiKey among them unless provider is zavu.
func (s *Server) createAgentV2(w http.ResponseWriter, r *http.Request) {
	var in agent.Input
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agents.Create(r.Context(), keyFrom(r.Context()).Project, "", in, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswerV2(r.Context(), w, r, http.StatusCreated, a)
}

func (s *Server) getAgentV2(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswerV2(r.Context(), w, r, http.StatusOK, a)
}

func (s *Server) updateAgentV2(w http.ResponseWriter, r *http.Request) {
	var in agent.Input
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err == nil {
		a, err = s.agents.Update(r.Context(), a, in)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswerV2(r.Context(), w, r, http.StatusOK, a)
}

// connectAgentChannel makes the agent answer on the sender holding the channel.
func (s *Server) connectAgentChannel(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Address *string `json:"address"`
		Type    *string `json:"type"`
	}
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	var errs []apperror.FieldError
	if in.Address == nil || *in.Address == "" {
		errs = append(errs, apperror.FieldError{Path: "address", Message: "is required"})
	}
	typ := v1alpha1.Channel("")
	switch {
	case in.Type == nil || *in.Type == "":
		errs = append(errs, apperror.FieldError{Path: "type", Message: "is required"})
	case !slices.Contains(v1alpha1.AllChannels, v1alpha1.Channel(*in.Type)):
		errs = append(errs, apperror.FieldError{Path: "type", Message: fmt.Sprintf("must be one of %v", v1alpha1.AllChannels)})
	default:
		typ = v1alpha1.Channel(*in.Type)
	}
	if len(errs) > 0 {
		s.writeError(w, r, apperror.InvalidFields(errs...))
		return
	}
	ctx, project := r.Context(), keyFrom(r.Context()).Project
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	snd, err := s.senders.SenderAt(ctx, project, *in.Address, typ)
	if err == nil {
		a, err = s.agents.ConnectChannel(ctx, a, snd, *in.Address, typ)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.agentAnswerV2(ctx, w, r, http.StatusOK, a)
}

// disconnectAgentChannel stops the agent answering on the sender holding the channel.
func (s *Server) disconnectAgentChannel(w http.ResponseWriter, r *http.Request) {
	ctx, project := r.Context(), keyFrom(r.Context()).Project
	address, typ := r.PathValue("address"), v1alpha1.Channel(r.PathValue("type"))
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	snd, err := s.senders.SenderAt(ctx, project, address, typ)
	if err == nil {
		err = s.agents.DisconnectChannel(ctx, a, snd, address, typ)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
