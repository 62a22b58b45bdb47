package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// The statuses of a finished execution (the client's).
const (
	StatusSuccess             = "success"
	StatusError               = "error"
	StatusFiltered            = "filtered"
	StatusRateLimited         = "rate_limited"
	StatusBalanceInsufficient = "balance_insufficient"
)

// HandoffTool is the tool a handoff-enabled agent is offered.
const HandoffTool = "handoff_to_human"

// step is one model call of an execution, as recorded.
type step struct {
	Provider     string     `json:"provider"`
	Model        string     `json:"model"`
	InputTokens  int64      `json:"inputTokens"`
	OutputTokens int64      `json:"outputTokens"`
	Ms           int64      `json:"ms"`
	CostMicros   int64      `json:"costMicros,omitempty"`
	Error        string     `json:"error,omitempty"`
	ToolCalls    []toolStep `json:"toolCalls,omitempty"`
}

type toolStep struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	OK        bool            `json:"ok"`
	Error     string          `json:"error,omitempty"`
	Ms        int64           `json:"ms"`
}

// outcome is what an execution came to.
type outcome struct {
	status, code, message string
	text                  string
	provider, model       string
	steps                 []step
	toolCalls             int
	usage                 llm.Usage
	replyID               string
	// knowledge is what retrieval gave the model.
	knowledge []knowledge.Passage
	// cost is what the steps on the installation's model cost the project.
	cost billing.Micros
}

// Execute runs a claimed execution to its end. An error is Switchboard's own (the database):
// the execution is run again (Executor), and the reply, keyed by the execution's id, is still
// sent once.
func (r *Runtime) Execute(ctx context.Context, ex db.AgentExecution) error {
	start := r.clock()
	stop := r.holdLease(ctx, ex.ID)
	out, err := r.run(ctx, ex)
	stop()
	if err != nil {
		return err
	}
	if out.status != StatusSuccess && out.status != StatusBalanceInsufficient && out.cost > 0 {
		// Tokens the installation's model used for an answer that was not sent are paid too,
		// as far as the balance can.
		if _, err := r.charge(ctx, ex, out.cost); err != nil {
			return err
		}
	}
	return r.finish(ctx, ex, out, r.clock().Sub(start))
}

func (r *Runtime) run(ctx context.Context, ex db.AgentExecution) (outcome, error) {
	var a v1alpha1.Agent
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ex.Project, Name: ex.Agent}, &a)
	if client.IgnoreNotFound(err) != nil {
		return outcome{}, fmt.Errorf("read agent %s/%s: %w", ex.Project, ex.Agent, err)
	}
	if err != nil || !a.Spec.Enabled {
		return outcome{status: StatusFiltered, code: "agent_disabled", message: "The agent was deleted or disabled before it answered."}, nil
	}
	q := db.Planned(r.Pool)
	window := contextWindow(&a)
	history, err := r.history(ctx, ex.ConversationID, window+1)
	if err != nil {
		return outcome{}, fmt.Errorf("read the conversation of execution %s: %w", ex.ID, err)
	}
	inbound := inboundText(history, ex.InboundMessageID)

	if h := a.Spec.Handoff; h != nil && matchesKeyword(inbound, h.Keywords) {
		return r.handOff(ctx, ex, &a, "keyword", "")
	}
	if handed, err := q.IsHandedOff(ctx, ex.ConversationID); err != nil || handed {
		return outcome{status: StatusFiltered, code: "handed_off", message: "The conversation is with a human."}, err
	}
	if bh := a.Spec.BusinessHours; bh != nil {
		open, err := IsOpen(bh, r.clock())
		if err != nil {
			return outcome{status: StatusError, code: "invalid_business_hours", message: err.Error()}, nil
		}
		if !open {
			return r.closed(ctx, ex, bh)
		}
	}

	if len(a.Spec.Flows) > 0 {
		if out, handled, err := r.flowTurn(ctx, ex, &a, history, inbound); handled || err != nil {
			return out, err
		}
	}
	req, tools := ModelRequest(&a)
	req.Messages = context_(history, window)
	if a.Spec.IncludeContactMetadata {
		req.System += contactContext(ctx, q, ex.ConversationID)
	}
	cands, budget, passages, refused, err := r.prepare(ctx, ex, &a, &req, inbound)
	if err != nil || refused != nil {
		return *refused, err
	}
	out, err := r.converse(ctx, ex, &a, req, cands, tools, budget, nil)
	out.knowledge = passages
	return out, err
}

// prepare is what an execution needs before its first model call: the models to call (a
// project that cannot pay for the installation's model gets refused instead), its token
// budget, and the knowledge retrieved for question ("" retrieves none), added to req's system
// prompt.
func (r *Runtime) prepare(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, req *llm.Request, question string) (
	cands []candidate, budget int64, passages []knowledge.Passage, refused *outcome, err error) {
	if cands, err = r.candidates(ctx, a, ex.TestMode); err != nil {
		return nil, 0, nil, &outcome{}, err
	}
	if len(cands) > 0 && cands[0].installation {
		if ok, err := r.canPay(ctx, ex.Project); err != nil || !ok {
			return nil, 0, nil, &outcome{status: StatusBalanceInsufficient, code: "insufficient_balance",
				message: "The project's balance cannot pay for the installation's model."}, err
		}
	}
	budget = int64(DefaultTokenBudget)
	if a.Spec.TokenBudget != nil {
		budget = int64(*a.Spec.TokenBudget)
	}
	if r.Knowledge != nil && question != "" {
		if passages, err = r.Knowledge.Retrieve(ctx, a, ex.TestMode, question, knowledge.DefaultChunk); err != nil {
			return nil, 0, nil, &outcome{}, fmt.Errorf("retrieve for execution %s: %w", ex.ID, err)
		}
		req.System += KnowledgeContext(passages)
	}
	return cands, budget, passages, nil, nil
}

// KnowledgeContext is the part of the system prompt that gives the model the retrieved chunks,
// numbered, with their documents' titles; none: nothing.
func KnowledgeContext(passages []knowledge.Passage) string {
	if len(passages) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n" + llm.KnowledgeHeading)
	for i, p := range passages {
		fmt.Fprintf(&b, "\n\n[%d] %s\n%s", i+1, p.Title, p.Text)
	}
	return b.String()
}

// converse calls the models and the tools until the model answers, at most MaxSteps calls. On
// a call (voice not nil) the answer was streamed as it came and is only paid for, the handoff
// tool transfers the call and end_call ends it; otherwise the answer is sent as a reply.
func (r *Runtime) converse(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, req llm.Request, cands []candidate,
	tools map[string]v1alpha1.AgentTool, budget int64, voice *voiceState) (outcome, error) {
	var out outcome
	for n := 0; n < MaxSteps; n++ {
		resp, c, err := r.chat(ctx, ex.Project, cands, req, &out)
		if err != nil {
			var le *llm.Error
			out.status, out.code, out.message = StatusError, "model_error", err.Error()
			if errors.As(err, &le) {
				out.code = "model_" + string(le.Kind)
				if le.Kind == llm.KindRateLimited {
					out.status = StatusRateLimited
				}
			}
			return out, nil
		}
		out.provider, out.model = string(c.provider), c.model
		if resp.Stop == llm.StopFiltered {
			out.status, out.code, out.message = StatusFiltered, "content_filtered", "The model's provider filtered the answer."
			return out, nil
		}
		if voice != nil {
			voice.spoken = joinSpoken(voice.spoken, resp.Text)
		}
		if len(resp.ToolCalls) == 0 || out.usage.InputTokens+out.usage.OutputTokens >= budget {
			if voice != nil {
				out.text = voice.spoken
				return r.paid(ctx, ex, out, voice)
			}
			if resp.Text == "" {
				out.status, out.code, out.message = StatusError, "no_answer", "The model gave no answer"+budgetNote(out, budget)+"."
				return out, nil
			}
			out.text = resp.Text
			return r.reply(ctx, ex, a, out)
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		last := &out.steps[len(out.steps)-1]
		for _, call := range resp.ToolCalls {
			out.toolCalls++
			if voice != nil && (call.Name == EndCallTool || call.Name == HandoffTool && a.Spec.Handoff != nil && a.Spec.Handoff.Tool) {
				last.ToolCalls = append(last.ToolCalls, toolStep{Name: call.Name, Arguments: call.Arguments, OK: true})
				voice.endCall, voice.transfer = call.Name == EndCallTool, call.Name == HandoffTool
				voice.tools = append(voice.tools, call)
				out.text = voice.spoken
				return r.paid(ctx, ex, out, voice)
			}
			if call.Name == StartFlowTool && len(a.Spec.Flows) > 0 && voice == nil {
				last.ToolCalls = append(last.ToolCalls, toolStep{Name: call.Name, Arguments: call.Arguments, OK: true})
				started, ok, err := r.startFlow(ctx, ex, a, call.Arguments)
				if ok || err != nil {
					started.steps = append(out.steps, started.steps...)
					started.toolCalls += out.toolCalls
					started.usage.InputTokens += out.usage.InputTokens
					started.usage.OutputTokens += out.usage.OutputTokens
					if started.provider == "" {
						started.provider, started.model = out.provider, out.model
					}
					return started, err
				}
			}
			if call.Name == HandoffTool && a.Spec.Handoff != nil && a.Spec.Handoff.Tool {
				last.ToolCalls = append(last.ToolCalls, toolStep{Name: call.Name, Arguments: call.Arguments, OK: true})
				handed, err := r.handOff(ctx, ex, a, "tool", resp.Text)
				handed.steps, handed.toolCalls, handed.usage, handed.provider, handed.model = out.steps, out.toolCalls, out.usage, out.provider, out.model
				return handed, err
			}
			t, ok := tools[call.Name]
			if !ok {
				msg := fmt.Sprintf("There is no tool %q. The tools are: %s.", call.Name, strings.Join(toolNames(req.Tools), ", "))
				last.ToolCalls = append(last.ToolCalls, toolStep{Name: call.Name, Arguments: call.Arguments, Error: "unknown tool"})
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, ToolName: call.Name, Text: msg, IsError: true})
				continue
			}
			res := r.CallTool(ctx, a, t, call.Arguments, ex.ID, ex.ConversationID)
			if voice != nil {
				voice.tools = append(voice.tools, call)
			}
			last.ToolCalls = append(last.ToolCalls, toolStep{Name: call.Name, Arguments: call.Arguments, OK: res.OK, Error: res.Error,
				Ms: res.Duration.Milliseconds()})
			text := res.Body
			if !res.OK {
				text = res.Error
				if res.Body != "" {
					text += ": " + res.Body
				}
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, ToolName: call.Name, Text: text, IsError: !res.OK})
		}
	}
	out.status, out.code, out.message = StatusError, "too_many_steps", fmt.Sprintf("The model still called tools after %d steps.", MaxSteps)
	return out, nil
}

// holdLease renews the execution's lease until the returned stop is called.
func (r *Runtime) holdLease(ctx context.Context, id string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(LeaseRenewal)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				until := r.clock().Add(Lease).UTC()
				if _, err := db.Planned(r.Pool).RenewAgentExecutionLease(ctx, db.RenewAgentExecutionLeaseParams{ID: id, LeaseUntil: &until}); err != nil && ctx.Err() == nil {
					r.Log.Error(err, "renew the lease of an execution", "execution", id)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

func budgetNote(out outcome, budget int64) string {
	if out.usage.InputTokens+out.usage.OutputTokens >= budget {
		return fmt.Sprintf(" within its token budget (%d)", budget)
	}
	return ""
}

// chat asks each candidate in turn until one answers; a retryable failure moves to the next,
// any other ends the execution. Each call is a step of out.
func (r *Runtime) chat(ctx context.Context, project string, cands []candidate, req llm.Request, out *outcome) (*llm.Response, *candidate, error) {
	var last error
	for i := range cands {
		c := &cands[i]
		if c.problem != "" {
			last = &llm.Error{Kind: llm.KindUnauthorized, Message: c.problem}
			out.steps = append(out.steps, step{Provider: string(c.provider), Model: c.model, Error: c.problem})
			continue
		}
		req.Model = c.model
		start := r.clock()
		resp, err := c.client.Chat(ctx, req)
		s := step{Provider: string(c.provider), Model: c.model, Ms: r.clock().Sub(start).Milliseconds()}
		if err != nil {
			s.Error = err.Error()
			out.steps = append(out.steps, s)
			last = err
			if llm.Retryable(err) || isProblem(err) {
				continue
			}
			return nil, nil, err
		}
		s.InputTokens, s.OutputTokens = resp.Usage.InputTokens, resp.Usage.OutputTokens
		cost, err := r.stepCost(ctx, project, c, resp.Usage.InputTokens, resp.Usage.OutputTokens)
		if err != nil {
			return nil, nil, err
		}
		s.CostMicros, out.cost = int64(cost), out.cost+cost
		out.usage.InputTokens += resp.Usage.InputTokens
		out.usage.OutputTokens += resp.Usage.OutputTokens
		out.steps = append(out.steps, s)
		return resp, c, nil
	}
	return nil, nil, last
}

func isProblem(err error) bool {
	var le *llm.Error
	return errors.As(err, &le) && le.Status == 0 && le.Kind == llm.KindUnauthorized
}

// reply sends the answer, keyed by the execution, once its tokens are paid for.
func (r *Runtime) reply(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, out outcome) (outcome, error) {
	paid, err := r.charge(ctx, ex, out.cost)
	if err != nil {
		return out, err
	}
	if !paid {
		out.status, out.code, out.message = StatusBalanceInsufficient, "insufficient_balance",
			"The project's balance cannot pay for the installation's model; no reply was sent."
		return out, nil
	}
	m, err := r.Replies.Reply(ctx, ex.Project, ex.TestMode, ex.ConversationID, out.text, ex.ID,
		map[string]string{"agentId": a.Name, "agentExecutionId": ex.ID})
	if err != nil {
		out.status, out.code, out.message = StatusError, "reply_refused", err.Error()
		if strings.Contains(err.Error(), "insufficient") {
			out.status = StatusBalanceInsufficient
		}
		return out, nil
	}
	out.status, out.replyID = StatusSuccess, m.ID
	return out, nil
}

// handOff gives the conversation to a human, and tells the contact when the agent has words
// for it.
func (r *Runtime) handOff(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, reason, modelText string) (outcome, error) {
	if err := db.Planned(r.Pool).HandOff(ctx, db.HandOffParams{ConversationID: ex.ConversationID, Project: ex.Project,
		TestMode: ex.TestMode, Agent: a.Name, Reason: reason, CreatedAt: r.clock().UTC()}); err != nil {
		return outcome{}, fmt.Errorf("hand conversation %s off: %w", ex.ConversationID, err)
	}
	// A flow's transfer says its own words; otherwise the agent's handoff message, else the model's.
	text := modelText
	if reason != "flow" && a.Spec.Handoff != nil && a.Spec.Handoff.Message != "" {
		text = a.Spec.Handoff.Message
	}
	if text == "" {
		return outcome{status: StatusSuccess, code: "handed_off", message: "Handed to a human (" + reason + ")."}, nil
	}
	out, err := r.reply(ctx, ex, a, outcome{text: text})
	out.code = "handed_off"
	return out, err
}

// closed answers a message that came outside business hours: the agent's note, once a
// conversation a day (its idempotency key is the conversation's and the day's).
func (r *Runtime) closed(ctx context.Context, ex db.AgentExecution, bh *v1alpha1.BusinessHours) (outcome, error) {
	out := outcome{status: StatusFiltered, code: "outside_business_hours", message: "The message came outside business hours."}
	if bh.OutsideHoursMessage == "" {
		return out, nil
	}
	day := r.clock().UTC().Format("2006-01-02")
	m, err := r.Replies.Reply(ctx, ex.Project, ex.TestMode, ex.ConversationID, bh.OutsideHoursMessage,
		"agent-closed-"+ex.ConversationID+"-"+day, map[string]string{"agentId": ex.Agent, "agentExecutionId": ex.ID})
	if err == nil {
		out.replyID, out.text = m.ID, bh.OutsideHoursMessage
	}
	return out, nil
}

// finish records the outcome.
func (r *Runtime) finish(ctx context.Context, ex db.AgentExecution, out outcome, took time.Duration) error {
	steps, err := json.Marshal(out.steps)
	if err != nil {
		return err
	}
	var chunks *int32
	var used []byte
	if out.knowledge != nil || r.Knowledge != nil {
		n := int32(len(out.knowledge))
		chunks = &n
		type usedChunk struct {
			ChunkID         string  `json:"chunkId"`
			DocumentID      string  `json:"documentId"`
			KnowledgeBaseID string  `json:"knowledgeBaseId"`
			Score           float64 `json:"score"`
		}
		list := make([]usedChunk, len(out.knowledge))
		for i, p := range out.knowledge {
			list[i] = usedChunk{ChunkID: p.ChunkID, DocumentID: p.DocumentID, KnowledgeBaseID: p.KnowledgeBaseID, Score: p.Score}
		}
		if used, err = json.Marshal(list); err != nil {
			return err
		}
	}
	nilIf := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	_, err = db.Planned(r.Pool).FinishAgentExecution(ctx, db.FinishAgentExecutionParams{ID: ex.ID, Status: out.status,
		Provider: nilIf(out.provider), Model: nilIf(out.model), Steps: steps, ToolCalls: int32(out.toolCalls),
		KnowledgeChunks: chunks, Knowledge: used,
		InputTokens: out.usage.InputTokens, OutputTokens: out.usage.OutputTokens, LatencyMs: int32(took.Milliseconds()),
		ResponseText: nilIf(out.text), ResponseMessageID: nilIf(out.replyID), ErrorCode: nilIf(out.code),
		ErrorMessage: nilIf(out.message), Now: ptr(r.clock().UTC())})
	if err != nil {
		return fmt.Errorf("finish execution %s: %w", ex.ID, err)
	}
	return nil
}

// inboundText is the text of the execution's inbound message.
func inboundText(history []db.RecentConversationMessagesRow, id string) string {
	for _, m := range history {
		if m.ID == id && m.Body != nil {
			return *m.Body
		}
	}
	return ""
}

// context_ is the conversation as the model sees it, oldest first: the contact's messages as
// the user's, the project's as the assistant's; at most window of them.
func context_(history []db.RecentConversationMessagesRow, window int) []llm.Message {
	var out []llm.Message
	for i := min(len(history), max(window, 1)) - 1; i >= 0; i-- {
		m := history[i]
		if m.Body == nil || *m.Body == "" {
			continue
		}
		role := llm.RoleUser
		if m.Direction == "outbound" {
			role = llm.RoleAssistant
		}
		out = append(out, llm.Message{Role: role, Text: *m.Body})
	}
	return out
}

func contactContext(ctx context.Context, q *db.Queries, conversationID string) string {
	c, err := q.ConversationContact(ctx, conversationID)
	if err != nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nAbout the contact:")
	if c.DisplayName != nil {
		fmt.Fprintf(&b, "\nName: %s", *c.DisplayName)
	} else if c.ProfileName != nil {
		fmt.Fprintf(&b, "\nName: %s", *c.ProfileName)
	}
	if len(c.Metadata) > 2 {
		fmt.Fprintf(&b, "\nMetadata: %s", c.Metadata)
	}
	return b.String()
}

func matchesKeyword(text string, keywords []string) bool {
	t := strings.ToLower(strings.Join(strings.Fields(text), " "))
	return t != "" && slices.ContainsFunc(keywords, func(k string) bool {
		return strings.ToLower(strings.Join(strings.Fields(k), " ")) == t
	})
}

func toolNames(tools []llm.Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

func ptr[T any](v T) *T { return &v }
