package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/flow"
	"github.com/switchboard-io/switchboard/internal/optional"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// The REST API's flows of an agent (docs/agents.md, "Flows"). A flow lives in the Agent's
// spec.flows, so GitOps ships it with the agent; the times the client shows are kept in an
// annotation, FlowTimesAnnotation, as tools' are.

// FlowTimesAnnotation holds, as JSON, when the REST API created and last changed each flow.
const FlowTimesAnnotation = "messaging.switchboard.io/flow-times"

// MaxFlows bounds an agent's flows (the CRD's own bound).
const MaxFlows = 50

// FlowInput is a flow's create or update body (the client's FlowCreateParams and
// FlowUpdateParams): a field left out changes nothing.
type FlowInput struct {
	Name        optional.Value[string]               `json:"name"`
	Description optional.Value[string]               `json:"description"`
	Enabled     optional.Value[bool]                 `json:"enabled"`
	Priority    optional.Value[int32]                `json:"priority"`
	Steps       optional.Value[[]FlowStepInput]      `json:"steps"`
	Trigger     optional.Value[v1alpha1.FlowTrigger] `json:"trigger"`
}

// FlowStepInput is a step as the client sends it.
type FlowStepInput struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Config     json.RawMessage `json:"config"`
	NextStepID *string         `json:"nextStepId"`
}

// Flow is a flow of an agent as the API shows it.
type Flow struct {
	v1alpha1.AgentFlow
	AgentID              string
	CreatedAt, UpdatedAt time.Time
}

// apply writes the fields in gives into f, and says what is wrong with them.
func (in FlowInput) apply(f *v1alpha1.AgentFlow) []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	if in.Name.Set {
		switch n := strings.TrimSpace(in.Name.Value); {
		case in.Name.Null || n == "":
			bad("name", "must not be empty")
		case utf8.RuneCountInString(n) > 200:
			bad("name", "must be at most 200 characters")
		default:
			f.Name = n
		}
	}
	if in.Description.Set {
		if utf8.RuneCountInString(in.Description.Value) > 2000 {
			bad("description", "must be at most 2000 characters")
		}
		f.Description = in.Description.Value
	}
	if in.Enabled.Set {
		if in.Enabled.Null {
			bad("enabled", "must be true or false")
		}
		f.Enabled = &in.Enabled.Value
	}
	if in.Priority.Set {
		if in.Priority.Null || in.Priority.Value < 0 || in.Priority.Value > 1000 {
			bad("priority", "must be an integer from 0 to 1000")
		}
		f.Priority = in.Priority.Value
	}
	if in.Trigger.Set {
		t := in.Trigger.Value
		switch {
		case in.Trigger.Null:
			bad("trigger", "is required")
		case t.Type != "keyword" && t.Type != "intent" && t.Type != "always" && t.Type != "manual":
			bad("trigger.type", "must be one of keyword, intent, always, manual")
		default:
			f.Trigger = t
		}
	}
	if in.Steps.Set {
		if in.Steps.Null || len(in.Steps.Value) == 0 {
			bad("steps", "must have at least one step")
		} else if len(in.Steps.Value) > 100 {
			bad("steps", "must have at most 100 steps")
		}
		f.Steps = f.Steps[:0:0]
		for i, st := range in.Steps.Value {
			step := v1alpha1.FlowStep{ID: st.ID, Type: st.Type}
			if st.NextStepID != nil {
				step.NextStepID = *st.NextStepID
			}
			if len(st.Config) > 0 && string(st.Config) != "null" {
				var probe map[string]any
				if json.Unmarshal(st.Config, &probe) != nil {
					bad(fmt.Sprintf("steps[%d].config", i), "must be an object")
					continue
				}
				step.Config = apiextensionsv1.JSON{Raw: st.Config}
			}
			f.Steps = append(f.Steps, step)
		}
	}
	return errs
}

// flowProblems are what flow.Validate says of the agent's flow at index i, its paths made the
// body's (steps[2].config.tool rather than flows[3].steps[2].config.tool).
func flowProblems(a *v1alpha1.Agent, i int) []apperror.FieldError {
	prefix := fmt.Sprintf("flows[%d].", i)
	var out []apperror.FieldError
	for _, e := range flow.Validate(a.Spec.Flows, a.Spec.Tools) {
		if rest, ok := strings.CutPrefix(e.Path, prefix); ok {
			out = append(out, apperror.FieldError{Path: rest, Message: e.Message})
		} else if e.Path == fmt.Sprintf("flows[%d]", i) {
			out = append(out, apperror.FieldError{Path: "name", Message: e.Message})
		}
	}
	return out
}

// Flows returns the agent's flows, newest first (then by id); only the enabled or disabled
// ones when enabled is set.
func (s *Service) Flows(a *v1alpha1.Agent, enabled *bool) []Flow {
	var out []Flow
	for _, f := range a.Spec.Flows {
		if enabled == nil || f.FlowEnabled() == *enabled {
			out = append(out, flowOf(a, f))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out
}

// GetFlow returns a flow of the agent.
func (s *Service) GetFlow(a *v1alpha1.Agent, id string) (Flow, error) {
	f, ok := findFlow(a, id)
	if !ok {
		return Flow{}, noFlow(id)
	}
	return flowOf(a, *f), nil
}

// CreateFlow adds a flow to the agent.
func (s *Service) CreateFlow(ctx context.Context, a *v1alpha1.Agent, in FlowInput) (Flow, error) {
	var f v1alpha1.AgentFlow
	errs := in.apply(&f)
	for path, set := range map[string]bool{"name": in.Name.Set, "steps": in.Steps.Set, "trigger": in.Trigger.Set} {
		if !set {
			errs = append(errs, apperror.FieldError{Path: path, Message: "is required"})
		}
	}
	if len(errs) > 0 {
		return Flow{}, apperror.InvalidFields(sortFields(errs)...)
	}
	id, err := randid.Name("flow-", 12)
	if err != nil {
		return Flow{}, err
	}
	f.ID = id
	return s.writeFlow(ctx, a, f, true)
}

// UpdateFlow changes the fields in gives; the rest stay.
func (s *Service) UpdateFlow(ctx context.Context, a *v1alpha1.Agent, id string, in FlowInput) (Flow, error) {
	cur, ok := findFlow(a, id)
	if !ok {
		return Flow{}, noFlow(id)
	}
	f := *cur.DeepCopy()
	if errs := in.apply(&f); len(errs) > 0 {
		return Flow{}, apperror.InvalidFields(sortFields(errs)...)
	}
	return s.writeFlow(ctx, a, f, false)
}

// DuplicateFlow copies a flow under a new name. The copy is disabled, so that two flows do not
// start on the same messages until one is changed.
func (s *Service) DuplicateFlow(ctx context.Context, a *v1alpha1.Agent, id string, newName optional.Value[string]) (Flow, error) {
	cur, ok := findFlow(a, id)
	if !ok {
		return Flow{}, noFlow(id)
	}
	if !newName.Set {
		return Flow{}, apperror.InvalidFields(apperror.FieldError{Path: "newName", Message: "is required"})
	}
	f := *cur.DeepCopy()
	if errs := (FlowInput{Name: newName}).apply(&f); len(errs) > 0 {
		return Flow{}, apperror.InvalidFields(apperror.FieldError{Path: "newName", Message: errs[0].Message})
	}
	off := false
	f.Enabled = &off
	nid, err := randid.Name("flow-", 12)
	if err != nil {
		return Flow{}, err
	}
	f.ID = nid
	return s.writeFlow(ctx, a, f, true)
}

// writeFlow puts f in the agent (added when create), checked with the agent's other flows.
func (s *Service) writeFlow(ctx context.Context, a *v1alpha1.Agent, f v1alpha1.AgentFlow, create bool) (Flow, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	updated, err := s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		i := len(a.Spec.Flows)
		if create {
			if len(a.Spec.Flows) >= MaxFlows {
				return apperror.New(apperror.Invalid, "limit_exceeded", fmt.Sprintf("An agent has at most %d flows.", MaxFlows))
			}
			a.Spec.Flows = append(a.Spec.Flows, f)
		} else {
			for j := range a.Spec.Flows {
				if a.Spec.Flows[j].ID == f.ID {
					i = j
				}
			}
			if i == len(a.Spec.Flows) {
				return noFlow(f.ID)
			}
			a.Spec.Flows[i] = f
		}
		for _, other := range a.Spec.Flows {
			if other.ID != f.ID && strings.EqualFold(other.Name, f.Name) {
				return apperror.InvalidFields(apperror.FieldError{Path: "name", Message: fmt.Sprintf("the agent has a flow named %q already", other.Name)})
			}
		}
		if errs := flowProblems(a, i); len(errs) > 0 {
			return apperror.InvalidFields(sortFields(errs)...)
		}
		var created *time.Time
		if create {
			created = &now
		}
		setFlowTimes(a, f.ID, created, now)
		return nil
	})
	if err != nil {
		return Flow{}, err
	}
	saved, _ := findFlow(updated, f.ID)
	return flowOf(updated, *saved), nil
}

// DeleteFlow removes a flow; one that conversations are in the middle of cannot be deleted (409).
func (s *Service) DeleteFlow(ctx context.Context, a *v1alpha1.Agent, id string) error {
	if _, ok := findFlow(a, id); !ok {
		return noFlow(id)
	}
	active, err := db.Planned(s.pool).ActiveFlowSessions(ctx, db.ActiveFlowSessionsParams{Project: a.Namespace, Agent: a.Name,
		FlowID: id, Now: time.Now().UTC()})
	if err != nil {
		return err
	}
	if active > 0 {
		e := apperror.New(apperror.Conflict, "flow_has_active_sessions",
			fmt.Sprintf("%d conversations are in the middle of this flow: disable it, and delete it once they end or time out.", active))
		e.Details = map[string]any{"activeSessions": active}
		return e
	}
	_, err = s.Change(ctx, a, func(a *v1alpha1.Agent) error {
		out := a.Spec.Flows[:0]
		for _, f := range a.Spec.Flows {
			if f.ID != id {
				out = append(out, f)
			}
		}
		a.Spec.Flows = out
		setFlowTimes(a, "", nil, time.Time{})
		return nil
	})
	return err
}

func findFlow(a *v1alpha1.Agent, id string) (*v1alpha1.AgentFlow, bool) {
	for i := range a.Spec.Flows {
		if a.Spec.Flows[i].ID == id {
			return &a.Spec.Flows[i], true
		}
	}
	return nil, false
}

func noFlow(id string) error { return apperror.NotFoundf("No flow %s.", id) }

func setFlowTimes(a *v1alpha1.Agent, id string, created *time.Time, updated time.Time) {
	setItemTimes(a, FlowTimesAnnotation, id, created, updated, func(k string) bool { _, ok := findFlow(a, k); return ok })
}

func flowOf(a *v1alpha1.Agent, f v1alpha1.AgentFlow) Flow {
	out := Flow{AgentFlow: f, AgentID: a.Name, CreatedAt: a.CreationTimestamp.UTC(), UpdatedAt: UpdatedAt(a)}
	if tt, ok := itemTimes(a, FlowTimesAnnotation)[f.ID]; ok {
		out.CreatedAt, out.UpdatedAt = tt.CreatedAt.UTC(), tt.UpdatedAt.UTC()
	}
	return out
}
