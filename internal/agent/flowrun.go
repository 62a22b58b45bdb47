package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/flow"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// StartFlowTool is the tool an agent with intent flows offers the model: it starts the flow the
// contact wants, which then runs as written.
const StartFlowTool = "start_flow"

// DefaultFlowTimeout ends a conversation's run of a flow that waited this long for an answer.
const DefaultFlowTimeout = 24 * time.Hour

// maxFlowActions bounds one execution's actions in a flow (the flow package ends a run past 50).
const maxFlowActions = 64

// validFlows are the agent's flows that the flow package finds nothing wrong with: a flow
// applied with kubectl that does not validate never runs (the Agent's status says why).
func validFlows(a *v1alpha1.Agent) []v1alpha1.AgentFlow {
	bad := map[int]bool{}
	for _, e := range flow.Validate(a.Spec.Flows, a.Spec.Tools) {
		var i int
		if _, err := fmt.Sscanf(e.Path, "flows[%d]", &i); err == nil {
			bad[i] = true
		}
	}
	var out []v1alpha1.AgentFlow
	for i, f := range a.Spec.Flows {
		if !bad[i] {
			out = append(out, f)
		}
	}
	return out
}

// intentFlows are the enabled, valid flows the model may start.
func intentFlows(a *v1alpha1.Agent) []v1alpha1.AgentFlow {
	var out []v1alpha1.AgentFlow
	for _, f := range validFlows(a) {
		if f.FlowEnabled() && f.Trigger.Type == "intent" {
			out = append(out, f)
		}
	}
	return out
}

// startFlowTool offers the model the intent flows, by name.
func startFlowTool(flows []v1alpha1.AgentFlow) llm.Tool {
	names := make([]string, len(flows))
	var desc strings.Builder
	desc.WriteString("Start a scripted conversation when the contact wants one of these:")
	for i, f := range flows {
		names[i] = f.Name
		fmt.Fprintf(&desc, "\n- %s: %s", f.Name, f.Trigger.Intent)
	}
	params, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"flow"},
		"properties": map[string]any{"flow": map[string]any{"type": "string", "enum": names}}})
	return llm.Tool{Name: StartFlowTool, Description: desc.String(), Parameters: params}
}

// flowTurn runs the conversation's flow, when it is in one or the message starts one. handled
// is false when no flow takes the message (the model answers it).
func (r *Runtime) flowTurn(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, history []db.RecentConversationMessagesRow,
	inbound string) (out outcome, handled bool, err error) {
	unlock, err := r.lockConversation(ctx, ex.ConversationID)
	if err != nil {
		return outcome{}, false, err
	}
	defer unlock()
	q := db.Planned(r.Pool)
	sess, err := q.GetFlowSession(ctx, ex.ConversationID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return outcome{}, false, fmt.Errorf("read the flow of conversation %s: %w", ex.ConversationID, err)
	default:
		f := findValidFlow(a, sess.FlowID)
		if f == nil || sess.Agent != a.Name || (sess.ExpiresAt.Before(r.clock()) && sess.LastMessageID != ex.InboundMessageID) {
			// Timed out, or its flow is gone: the conversation is out of it.
			if err := q.EndFlowSession(ctx, ex.ConversationID); err != nil {
				return outcome{}, false, err
			}
			break
		}
		var st flow.State
		if err := json.Unmarshal(sess.State, &st); err != nil {
			return outcome{}, false, fmt.Errorf("decode the flow state of conversation %s: %w", ex.ConversationID, err)
		}
		// The message goes to the flow when it waits for one and has not had it yet (a run of
		// this execution that died may have given it already); a flow interrupted between
		// actions goes on first.
		in := flow.Input{}
		if sess.LastMessageID != ex.InboundMessageID && st.Waiting {
			in.Message = &inbound
		}
		out, err := r.driveFlow(ctx, ex, a, f, st, in)
		return out, true, err
	}
	first := true
	for _, m := range history {
		if m.ID != ex.InboundMessageID {
			first = false
		}
	}
	flows := validFlows(a)
	f := flow.Pick(flows, inbound, first)
	if f == nil {
		return outcome{}, false, nil
	}
	out, err = r.driveFlow(ctx, ex, a, f, flow.Start(f), flow.Input{})
	return out, true, err
}

// startFlow runs the intent flow the model asked for (by name).
func (r *Runtime) startFlow(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, args json.RawMessage) (outcome, bool, error) {
	var in struct {
		Flow string `json:"flow"`
	}
	_ = json.Unmarshal(args, &in)
	for _, f := range intentFlows(a) {
		if strings.EqualFold(f.Name, in.Flow) {
			unlock, err := r.lockConversation(ctx, ex.ConversationID)
			if err != nil {
				return outcome{}, true, err
			}
			defer unlock()
			out, err := r.driveFlow(ctx, ex, a, &f, flow.Start(&f), flow.Input{})
			return out, true, err
		}
	}
	return outcome{}, false, nil
}

func findValidFlow(a *v1alpha1.Agent, id string) *v1alpha1.AgentFlow {
	for _, f := range validFlows(a) {
		if f.ID == id {
			return &f
		}
	}
	return nil
}

// driveFlow takes the flow's actions until it waits for the contact or ends. The state is saved
// after each action and every text sent is keyed by the execution and the action's number, so
// a run started again after a crash goes on from the last saved action and sends nothing twice.
func (r *Runtime) driveFlow(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, f *v1alpha1.AgentFlow,
	st flow.State, in flow.Input) (outcome, error) {
	out := outcome{status: StatusSuccess, code: "flow:" + f.ID}
	q := db.Planned(r.Pool)
	timeout := DefaultFlowTimeout
	if f.TimeoutMinutes != nil {
		timeout = time.Duration(*f.TimeoutMinutes) * time.Minute
	}
	save := func(st flow.State) error {
		state, err := json.Marshal(st)
		if err != nil {
			return err
		}
		now := r.clock().UTC()
		return q.SaveFlowSession(ctx, db.SaveFlowSessionParams{ConversationID: ex.ConversationID, Project: ex.Project,
			TestMode: ex.TestMode, Agent: a.Name, FlowID: f.ID, State: state, LastMessageID: ex.InboundMessageID,
			ExpiresAt: now.Add(timeout), Now: now})
	}
	end := func() error { return q.EndFlowSession(ctx, ex.ConversationID) }
	var texts []string
	for range maxFlowActions {
		act, next, err := flow.Next(f, st, in)
		if err != nil {
			out.status, out.code, out.message = StatusError, "flow_failed", err.Error()
			return out, end()
		}
		in = flow.Input{}
		switch act.Kind {
		case flow.Send, flow.Ask:
			m, err := r.Replies.Reply(ctx, ex.Project, ex.TestMode, ex.ConversationID, act.Text, ex.ID+"/"+strconv.Itoa(act.Seq),
				map[string]string{"agentId": a.Name, "agentExecutionId": ex.ID, "flowId": f.ID, "flowStepId": act.StepID})
			if err != nil {
				out.status, out.code, out.message = StatusError, "reply_refused", err.Error()
				return out, end()
			}
			out.replyID = m.ID
			texts = append(texts, act.Text)
		case flow.Store:
			if err := q.SetContactField(ctx, db.SetContactFieldParams{ConversationID: ex.ConversationID, Field: act.Field,
				Value: act.Value, Now: r.clock().UTC()}); err != nil {
				return out, fmt.Errorf("store %s of conversation %s: %w", act.Field, ex.ConversationID, err)
			}
		case flow.CallTool:
			t, ok := toolNamed(a, act.Tool)
			args, _ := json.Marshal(act.Arguments)
			res := ToolResult{Error: "the tool is gone or disabled"}
			if ok {
				res = r.CallTool(ctx, a, t, args, ex.ID, ex.ConversationID)
			}
			out.toolCalls++
			out.steps = append(out.steps, step{Provider: "flow", Model: f.ID, ToolCalls: []toolStep{{Name: act.Tool, Arguments: args,
				OK: res.OK, Error: res.Error, Ms: res.Duration.Milliseconds()}}})
			in.ToolResult = &flow.ToolResult{OK: res.OK, Body: res.Body}
		case flow.Generate:
			text, err := r.generate(ctx, ex, a, act.Text, &out)
			if err != nil {
				out.status, out.code, out.message = StatusError, "model_error", err.Error()
				return out, end()
			}
			in.Generated = &text
		case flow.Transfer:
			if err := end(); err != nil {
				return out, err
			}
			handed, err := r.handOff(ctx, ex, a, "flow", act.Text)
			handed.steps, handed.toolCalls, handed.usage = out.steps, out.toolCalls, out.usage
			if handed.replyID == "" {
				handed.replyID = out.replyID
			}
			return handed, err
		case flow.Wait:
			out.text = strings.Join(texts, "\n")
			return out, save(next)
		case flow.End, flow.EndFailed:
			if act.Kind == flow.EndFailed {
				out.status, out.code, out.message = StatusError, "flow_failed", act.Text
			}
			out.text = strings.Join(texts, "\n")
			return out, end()
		}
		if err := save(next); err != nil {
			return out, err
		}
		st = next
	}
	out.status, out.code, out.message = StatusError, "flow_failed", "The flow took too many actions without waiting for the contact."
	return out, end()
}

// generate is a flow's llm step: the agent's model, with the conversation and the step's
// instruction, no tools.
func (r *Runtime) generate(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, instruction string, out *outcome) (string, error) {
	req, _ := ModelRequest(a)
	req.Tools = nil
	req.System += "\n\n" + instruction
	history, err := r.history(ctx, ex.ConversationID, contextWindow(a)+1)
	if err != nil {
		return "", err
	}
	req.Messages = context_(history, contextWindow(a))
	cands, err := r.candidates(ctx, a, ex.TestMode)
	if err != nil {
		return "", err
	}
	resp, c, err := r.chat(ctx, ex.Project, cands, req, out)
	if err != nil {
		return "", err
	}
	out.provider, out.model = string(c.provider), c.model
	if resp.Text == "" {
		return "", errors.New("the model gave no answer")
	}
	return resp.Text, nil
}

func toolNamed(a *v1alpha1.Agent, name string) (v1alpha1.AgentTool, bool) {
	for _, t := range a.Spec.Tools {
		if t.Name == name && t.ToolEnabled() {
			return t, true
		}
	}
	return v1alpha1.AgentTool{}, false
}

// lockConversation holds a lock on the conversation's flow until unlock: two of its messages
// answered at once do not both take the flow's next step. The lock is a connection's, so a
// worker that dies lets it go.
func (r *Runtime) lockConversation(ctx context.Context, conversationID string) (unlock func(), err error) {
	conn, err := r.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 7))`, "flow:"+conversationID); err != nil {
		conn.Release()
		return nil, fmt.Errorf("lock the flow of conversation %s: %w", conversationID, err)
	}
	return func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 7))`, "flow:"+conversationID)
		conn.Release()
	}, nil
}
