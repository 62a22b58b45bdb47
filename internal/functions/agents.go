package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/functionrun"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// The agent a function declares (defineAgent) is an Agent resource the function owns, named
// after it; its tools (defineTool) are the function's.

// ManagedAgentName is the Agent a function's defineAgent makes.
func ManagedAgentName(f *v1alpha1.Function) string { return "fn-" + f.Name }

// agentConfig is what defineAgent takes that Switchboard uses.
type agentConfig struct {
	Name         string   `json:"name"`
	SenderID     string   `json:"senderId"`
	SenderIDs    []string `json:"senderIds"`
	Provider     string   `json:"provider"`
	Model        string   `json:"model"`
	Prompt       string   `json:"prompt"`
	SystemPrompt string   `json:"systemPrompt"`
	Temperature  *float64 `json:"temperature"`
	MaxTokens    *int32   `json:"maxTokens"`
	Enabled      *bool    `json:"enabled"`
}

var toolIDUnsafe = regexp.MustCompile(`[^a-z0-9_-]`)

// SyncAgent makes the function's Agent what its active deployment declares: made or updated
// when it calls defineAgent, deleted when it no longer does. A model other than the
// installation's (zavu) reads its key from the function's secret <PROVIDER>_API_KEY.
func (s *Service) SyncAgent(ctx context.Context, f *v1alpha1.Function) error {
	row, err := db.Planned(s.pool).ActiveFunctionManifest(ctx, string(f.UID))
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read the active deployment of %s: %w", f.Name, err)
	}
	var m functionrun.Manifest
	if len(row.Manifest) > 0 {
		if err := json.Unmarshal(row.Manifest, &m); err != nil {
			return fmt.Errorf("decode the manifest of deployment %s: %w", row.ID, err)
		}
	}
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: ManagedAgentName(f)}}
	if len(m.Agent) == 0 || string(m.Agent) == "null" {
		// A function whose code no longer declares an agent no longer has one.
		var cur v1alpha1.Agent
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(a), &cur); err == nil && metav1.IsControlledBy(&cur, f) {
			return client.IgnoreNotFound(s.client.Delete(ctx, &cur))
		}
		return nil
	}
	var cfg agentConfig
	if err := json.Unmarshal(m.Agent, &cfg); err != nil {
		return fmt.Errorf("decode the agent of function %s: %w", f.Name, err)
	}
	_, err = controllerutil.CreateOrUpdate(ctx, s.client, a, func() error {
		if a.CreationTimestamp.IsZero() {
			if a.Annotations == nil {
				a.Annotations = map[string]string{}
			}
			a.Annotations[agent.CreatedAtAnnotation] = s.now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
		} else if !metav1.IsControlledBy(a, f) {
			return fmt.Errorf("agent %s exists and is not function %s's", a.Name, f.Name)
		}
		if a.Labels == nil {
			a.Labels = map[string]string{}
		}
		a.Labels[v1alpha1.FunctionLabel] = f.Name
		applyAgentConfig(a, f, cfg, m.Tools)
		return controllerutil.SetControllerReference(f, a, s.client.Scheme())
	})
	if apierrors.IsInvalid(err) {
		// The declared agent is not one the API server takes (a provider it does not know, a
		// prompt too long): the deployment stays, without its agent, and the reason is logged
		// by the caller.
		return fmt.Errorf("the agent function %s declares is refused: %w", f.Name, err)
	}
	return err
}

func applyAgentConfig(a *v1alpha1.Agent, f *v1alpha1.Function, cfg agentConfig, tools []functionrun.ToolManifest) {
	a.Spec.DisplayName = strings.TrimSpace(cfg.Name)
	if a.Spec.DisplayName == "" {
		a.Spec.DisplayName = f.Spec.DisplayName
	}
	a.Spec.Provider = v1alpha1.ModelProvider(cfg.Provider)
	if a.Spec.Provider == "" {
		a.Spec.Provider = v1alpha1.ModelZavu
	}
	a.Spec.Model = cfg.Model
	a.Spec.SystemPrompt = cfg.Prompt
	if a.Spec.SystemPrompt == "" {
		a.Spec.SystemPrompt = cfg.SystemPrompt
	}
	a.Spec.Senders = nil
	for _, id := range append([]string{cfg.SenderID}, cfg.SenderIDs...) {
		if id != "" && !slices.Contains(a.Spec.Senders, id) {
			a.Spec.Senders = append(a.Spec.Senders, id)
		}
	}
	a.Spec.Enabled = cfg.Enabled == nil || *cfg.Enabled
	a.Spec.Temperature = ""
	if cfg.Temperature != nil {
		a.Spec.Temperature = strconv.FormatFloat(*cfg.Temperature, 'f', -1, 64)
	}
	a.Spec.MaxTokens = cfg.MaxTokens
	a.Spec.APIKeyRef = nil
	if a.Spec.Provider != v1alpha1.ModelZavu {
		a.Spec.APIKeyRef = &v1alpha1.SecretKeyRef{Name: SecretName(f), Key: strings.ToUpper(string(a.Spec.Provider)) + "_API_KEY"}
	}
	a.Spec.Tools = nil
	for _, t := range tools {
		id := toolIDUnsafe.ReplaceAllString(strings.ToLower(t.Name), "_")
		if id == "" || id[0] == '_' || id[0] == '-' {
			id = "t" + id
		}
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		a.Spec.Tools = append(a.Spec.Tools, v1alpha1.AgentTool{ID: id, Name: t.Name, Description: t.Description,
			Parameters: apiextensionsv1.JSON{Raw: params}, Function: f.Name})
	}
}

// Tools runs the tools functions declare for agents (agent.FunctionTools): a call is a run of
// the function with a tool event, answered by its return value.
type Tools struct {
	Reader  client.Reader
	Invoker *Invoker
}

// CallTool runs function's tool with args.
func (t *Tools) CallTool(ctx context.Context, a *v1alpha1.Agent, function, tool string, args json.RawMessage, executionID, conversationID string) agent.ToolResult {
	var f v1alpha1.Function
	if err := t.Reader.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: function}, &f); err != nil || f.DeletionTimestamp != nil {
		return agent.ToolResult{Error: fmt.Sprintf("the project has no function %s", function)}
	}
	if f.Spec.Paused {
		return agent.ToolResult{Error: fmt.Sprintf("function %s is paused", function)}
	}
	data := map[string]any{"tool": tool, "arguments": args, "agentId": a.Name, "executionId": executionID, "conversationId": conversationID}
	out, err := t.Invoker.Call(ctx, &f, "tool", data)
	switch {
	case errors.Is(err, ErrNotDeployed):
		return agent.ToolResult{Error: fmt.Sprintf("function %s has no active deployment", function)}
	case err != nil:
		return agent.ToolResult{Error: "the function could not be run"}
	case out.Reason != functionrun.ReasonNone:
		return agent.ToolResult{Error: fmt.Sprintf("the tool failed (%s): %s", out.Reason, firstLine(out.Error))}
	}
	body := string(out.Value)
	if len(body) > agent.MaxToolResponse {
		body = body[:agent.MaxToolResponse]
	}
	return agent.ToolResult{OK: true, StatusCode: 200, Body: body}
}
