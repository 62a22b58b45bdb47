package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/optional"
)

// Test runs listed by default, and at most.
const (
	defaultToolRuns = 20
	maxToolRuns     = 100
)

// agentToolRoutes are the routes of agents' tools and executions, under the sender's agent
// (/v1/senders/{senderId}/agent/…) and the agent itself (/v1/agents/{agentId}/…, the mirror
// docs/agents-wire.md §1.2 names).
func (s *Server) agentToolRoutes() []route {
	all := apikey.PermissionAll
	var out []route
	for _, p := range []string{"/v1/senders/{senderId}/agent", "/v1/agents/{agentId}"} {
		out = append(out,
			route{method: "POST", path: p + "/tools", access: permission, permission: all, handle: s.createAgentTool},
			route{method: "GET", path: p + "/tools", access: anyKey, handle: s.listAgentTools},
			route{method: "GET", path: p + "/tools/{toolId}", access: anyKey, handle: s.getAgentTool},
			route{method: "PATCH", path: p + "/tools/{toolId}", access: permission, permission: all, handle: s.updateAgentTool},
			route{method: "DELETE", path: p + "/tools/{toolId}", access: permission, permission: all, handle: s.deleteAgentTool},
			route{method: "POST", path: p + "/tools/{toolId}/test", access: permission, permission: all, handle: s.testAgentTool},
			route{method: "GET", path: p + "/tools/{toolId}/test-runs", access: anyKey, handle: s.listAgentToolRuns},
			route{method: "POST", path: p + "/tools/{toolId}/webhook/secret", access: permission, permission: all, handle: s.rotateAgentToolSecret},
			route{method: "GET", path: p + "/executions", access: anyKey, handle: s.listAgentExecutions},
			route{method: "GET", path: p + "/executions/{executionId}", access: anyKey, handle: s.getAgentExecution},
		)
	}
	return out
}

// toolJSON is the client's AgentTool (docs/agents-wire.md §3.5); webhookSecret only in the
// answer of the request that set it.
type toolJSON struct {
	ID            string          `json:"id"`
	AgentID       string          `json:"agentId"`
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	Enabled       bool            `json:"enabled"`
	Parameters    json.RawMessage `json:"parameters"`
	WebhookURL    string          `json:"webhookUrl"`
	WebhookSecret string          `json:"webhookSecret,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	UpdatedAt     time.Time       `json:"updatedAt"`
}

func toolView(t agent.Tool) toolJSON {
	params := json.RawMessage(t.Parameters.Raw)
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	return toolJSON{ID: t.ID, AgentID: t.AgentID, Name: t.Name, Description: t.Description, Enabled: t.ToolEnabled(),
		Parameters: params, WebhookURL: t.WebhookURL, WebhookSecret: t.Secret, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// toolRunJSON is the client's ToolTestRun (§3.6).
type toolRunJSON struct {
	ID         string          `json:"id"`
	ToolID     string          `json:"toolId"`
	CreatedAt  time.Time       `json:"createdAt"`
	DurationMs int32           `json:"durationMs"`
	Success    bool            `json:"success"`
	Error      *string         `json:"error"`
	Params     json.RawMessage `json:"params"`
	Response   *string         `json:"response"`
	StatusCode *int32          `json:"statusCode"`
}

func toolRunView(r agent.ToolRun) toolRunJSON {
	params := r.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	return toolRunJSON{ID: r.ID, ToolID: r.ToolID, CreatedAt: r.CreatedAt, DurationMs: r.DurationMs, Success: r.Success,
		Error: r.Error, Params: params, Response: r.Response, StatusCode: r.StatusCode}
}

// executionJSON is the client's AgentExecution (§3.7), with errorCode and steps besides.
type executionJSON struct {
	ID                  string          `json:"id"`
	AgentID             string          `json:"agentId"`
	Status              string          `json:"status"`
	InputTokens         int64           `json:"inputTokens"`
	OutputTokens        int64           `json:"outputTokens"`
	LatencyMs           int32           `json:"latencyMs"`
	Cost                float64         `json:"cost"`
	CreatedAt           time.Time       `json:"createdAt"`
	InboundMessageID    string          `json:"inboundMessageId"`
	ResponseMessageID   *string         `json:"responseMessageId"`
	ResponseText        *string         `json:"responseText"`
	ErrorMessage        *string         `json:"errorMessage"`
	ErrorCode           *string         `json:"errorCode"`
	KnowledgeChunksUsed *int32          `json:"knowledgeChunksUsed"`
	KnowledgeChunks     json.RawMessage `json:"knowledgeChunks,omitempty"`
	ToolCalls           int32           `json:"toolCalls"`
	Steps               json.RawMessage `json:"steps"`
}

func executionView(e agent.Execution) executionJSON {
	steps := e.Steps
	if len(steps) == 0 || string(steps) == "null" {
		steps = json.RawMessage(`[]`)
	}
	return executionJSON{ID: e.ID, AgentID: e.AgentID, Status: e.Status, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
		LatencyMs: e.LatencyMs, Cost: e.CostUSD, CreatedAt: e.CreatedAt, InboundMessageID: e.InboundMessageID,
		ResponseMessageID: e.ResponseMessageID, ResponseText: e.ResponseText, ErrorMessage: e.ErrorMessage, ErrorCode: e.ErrorCode,
		KnowledgeChunksUsed: e.KnowledgeChunks, KnowledgeChunks: e.Knowledge, ToolCalls: e.ToolCalls, Steps: steps}
}

func (s *Server) createAgentTool(w http.ResponseWriter, r *http.Request) {
	var in agent.ToolInput
	if err := decodeJSON(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.agents.CreateTool(r.Context(), a, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"tool": toolView(t)})
}

func (s *Server) listAgentTools(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	list := "agent-tools:" + a.Name
	limit, after, err := s.pageRequest(r, key.Project, list)
	enabled, err := enabledQuery(r, err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(t agent.Tool) (time.Time, string) { return t.CreatedAt, t.ID }
	rows := pageInMemory(s.agents.Tools(a, enabled), after, limit, at)
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, list, rows, limit, at, toolView))
}

// enabledQuery reads the enabled filter of a list (nil: absent); a bad value joins err.
func enabledQuery(r *http.Request, err error) (*bool, error) {
	switch v := r.URL.Query().Get("enabled"); v {
	case "":
		return nil, err
	case "true", "false":
		b := v == "true"
		return &b, err
	default:
		return nil, joinFields(err, apperror.FieldError{Path: "enabled", Message: "must be true or false"})
	}
}

// pageInMemory is the part of items (newest first) after the cursor's position, at most
// limit+1 of them, for lists kept in an object rather than a table.
func pageInMemory[T any](items []T, after *position, limit int, at func(T) (time.Time, string)) []T {
	rows := items
	if t, id := after.seek(); t != nil {
		rows = rows[:0:0]
		for _, it := range items {
			ct, cid := at(it)
			if ct.UnixMicro() < t.UnixMicro() || (ct.UnixMicro() == t.UnixMicro() && cid < *id) {
				rows = append(rows, it)
			}
		}
	}
	if len(rows) > limit+1 {
		rows = rows[:limit+1]
	}
	return rows
}

// joinFields adds a field error to err, an invalid_request of pageRequest or nil.
func joinFields(err error, fe apperror.FieldError) error {
	var errs []apperror.FieldError
	if e := apperror.As(err); e != nil {
		if prev, ok := e.Details["errors"].([]apperror.FieldError); ok {
			errs = append(errs, prev...)
		}
	}
	return apperror.InvalidFields(append(errs, fe)...)
}

func (s *Server) getAgentTool(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.agents.Tool(a, r.PathValue("toolId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tool": toolView(t)})
}

func (s *Server) updateAgentTool(w http.ResponseWriter, r *http.Request) {
	var in agent.ToolInput
	if err := decodeJSON(r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.agents.UpdateTool(r.Context(), a, r.PathValue("toolId"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tool": toolView(t)})
}

func (s *Server) deleteAgentTool(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err == nil {
		err = s.agents.DeleteTool(r.Context(), a, r.PathValue("toolId"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) testAgentTool(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TestParams optional.Value[json.RawMessage] `json:"testParams"`
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
	run, err := s.agents.TestTool(r.Context(), keyFrom(r.Context()).TestMode(), a, r.PathValue("toolId"), in.TestParams)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A tool that failed is a run with success false: the test itself worked.
	writeJSON(w, http.StatusOK, map[string]any{"run": toolRunView(run)})
}

func (s *Server) listAgentToolRuns(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r, defaultToolRuns, maxToolRuns)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	runs, err := s.agents.ToolRuns(r.Context(), a, r.PathValue("toolId"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items := make([]toolRunJSON, len(runs))
	for i, run := range runs {
		items[i] = toolRunView(run)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) rotateAgentToolSecret(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	secret, err := s.agents.RotateToolSecret(r.Context(), a, r.PathValue("toolId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"secret": secret})
}

func (s *Server) listAgentExecutions(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	key := keyFrom(r.Context())
	list := "agent-executions:" + a.Name
	limit, after, err := s.pageRequest(r, key.Project, list)
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains(agent.ExecutionStatuses, status) {
		// Said here too, so that a bad limit or cursor and a bad status come in one answer.
		err = joinFields(err, apperror.FieldError{Path: "status", Message: "must be one of " + strings.Join(agent.ExecutionStatuses, ", ")})
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, id := after.seek()
	rows, err := s.agents.Executions(r.Context(), key.TestMode(), a, status, t, id, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	at := func(e agent.Execution) (time.Time, string) { return e.CreatedAt, e.ID }
	writeJSON(w, http.StatusOK, pageOf(s.cursors, key.Project, list, rows, limit, at, executionView))
}

func (s *Server) getAgentExecution(w http.ResponseWriter, r *http.Request) {
	a, err := s.agentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.agents.Execution(r.Context(), keyFrom(r.Context()).TestMode(), a, r.PathValue("executionId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"execution": executionView(e)})
}
