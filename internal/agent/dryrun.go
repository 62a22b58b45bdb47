package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/llm"
)

// TestInput is a dry run's request (POST /v1/agents/{agentId}/test, the client's AgentTest).
type TestInput struct {
	// Message is what the contact says.
	Message *string `json:"message"`
	// ExecuteTools runs the tools the model calls; off, a call is reported and the run stops.
	ExecuteTools *bool `json:"executeTools"`
	// History is the conversation before Message, oldest first.
	History []TestTurn `json:"history"`
	// UseKnowledgeBase asks for retrieval from the agent's knowledge bases (default on).
	UseKnowledgeBase *bool `json:"useKnowledgeBase"`
}

// TestTurn is one earlier turn of a dry run's conversation.
type TestTurn struct {
	Role    *string `json:"role"`
	Content *string `json:"content"`
}

// Bounds of a dry run's request.
const (
	MaxTestMessage = 32000 // characters of the message and of each turn
	MaxTestHistory = 100   // turns; the context window is at most 100 messages
)

// Validate lists every invalid field of in.
func (in TestInput) Validate() []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	switch {
	case in.Message == nil || strings.TrimSpace(*in.Message) == "":
		bad("message", "is required")
	case len([]rune(*in.Message)) > MaxTestMessage:
		bad("message", fmt.Sprintf("must be at most %d characters", MaxTestMessage))
	}
	if len(in.History) > MaxTestHistory {
		bad("history", fmt.Sprintf("must have at most %d items", MaxTestHistory))
	}
	for i, t := range in.History {
		if t.Role == nil || (*t.Role != string(llm.RoleUser) && *t.Role != string(llm.RoleAssistant)) {
			bad(fmt.Sprintf("history[%d].role", i), "must be user or assistant")
		}
		switch {
		case t.Content == nil:
			bad(fmt.Sprintf("history[%d].content", i), "is required")
		case len([]rune(*t.Content)) > MaxTestMessage:
			bad(fmt.Sprintf("history[%d].content", i), fmt.Sprintf("must be at most %d characters", MaxTestMessage))
		}
	}
	return errs
}

// TestResult is what a dry run came to (the client's AgentTestResult).
type TestResult struct {
	Success bool `json:"success"`
	// Text is what the agent would reply; nil when it would not (an error, a tool call that was
	// not run, a handoff without words).
	Text  *string `json:"text"`
	Error *string `json:"error"`
	// InputTokens and OutputTokens count every model call; LatencyMs the whole run.
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	LatencyMs    int64 `json:"latencyMs"`
	// KnowledgeChunksUsed counts the chunks retrieval gave the model.
	KnowledgeChunksUsed int `json:"knowledgeChunksUsed"`
	// Warnings are what is true of the agent that a dry run cannot prove.
	Warnings []string `json:"warnings"`
	// ExecutedToolCalls are the tools that ran, in order (executeTools only).
	ExecutedToolCalls []ExecutedToolCall `json:"executedToolCalls"`
}

// ExecutedToolCall is a tool a dry run ran.
type ExecutedToolCall struct {
	Name  string  `json:"name"`
	OK    bool    `json:"ok"`
	Error *string `json:"error"`
}

// Test dry-runs agent a against in (a test key's run calls the sandbox model): 400 listing
// every invalid field of in.
func (s *Service) Test(ctx context.Context, a *v1alpha1.Agent, testMode bool, in TestInput) (TestResult, error) {
	if errs := in.Validate(); len(errs) > 0 {
		return TestResult{}, apperror.InvalidFields(errs...)
	}
	if s.Runtime == nil {
		return TestResult{}, errors.New("dry-run agent: this process runs no agents")
	}
	// As long as an execution may take: a caller waits for the answer.
	ctx, cancel := context.WithTimeout(ctx, JobTimeout)
	defer cancel()
	return s.Runtime.DryRun(ctx, a, testMode, in)
}

// DryRun runs the agent's model on a message as an execution would (its prompt, its models in
// order, its tools, at most MaxSteps calls, its token budget) and returns what it would reply.
// It writes nothing and sends nothing: no execution row, no reply, no handoff, no money. A tool
// the model calls runs only when in.ExecuteTools (a real, signed call without the execution and
// conversation headers); otherwise the call is reported in the warnings and the run stops there.
// in must be valid (Validate). An error is Switchboard's own (reading the agent's senders or
// keys); a model's failure is the result's.
func (r *Runtime) DryRun(ctx context.Context, a *v1alpha1.Agent, testMode bool, in TestInput) (TestResult, error) {
	start := r.clock()
	res := TestResult{Warnings: []string{}, ExecutedToolCalls: []ExecutedToolCall{}}
	warn := func(format string, args ...any) { res.Warnings = append(res.Warnings, fmt.Sprintf(format, args...)) }
	done := func() (TestResult, error) {
		res.LatencyMs = r.clock().Sub(start).Milliseconds()
		return res, nil
	}
	fail := func(msg string) (TestResult, error) {
		res.Success, res.Text, res.Error = false, nil, &msg
		return done()
	}
	message := *in.Message
	executeTools := in.ExecuteTools != nil && *in.ExecuteTools

	if !a.Spec.Enabled {
		warn("The agent is disabled: it answers no real message until it is enabled.")
	}
	reach, err := r.reachWarnings(ctx, a)
	if err != nil {
		return TestResult{}, err
	}
	res.Warnings = append(res.Warnings, reach...)
	if a.Spec.IncludeContactMetadata {
		warn("includeContactMetadata is on, but a dry run has no contact: in a real conversation the contact's name and metadata are added to the system prompt.")
	}
	if bh := a.Spec.BusinessHours; bh != nil {
		if open, err := IsOpen(bh, r.clock()); err == nil && !open {
			what := "no answer"
			if bh.OutsideHoursMessage != "" {
				what = "the outside-hours message"
			}
			warn("It is outside the agent's business hours now: a real message would get %s instead.", what)
		}
	}
	if h := a.Spec.Handoff; h != nil && matchesKeyword(message, h.Keywords) {
		warn("The message is a handoff keyword: a real conversation would be handed to a human, without calling the model (nothing was handed over here).")
		res.Success = true
		if h.Message != "" {
			res.Text = &h.Message
		}
		return done()
	}

	req, tools := ModelRequest(a)
	req.Messages = testContext(in.History, contextWindow(a), message)
	if r.Knowledge != nil && (in.UseKnowledgeBase == nil || *in.UseKnowledgeBase) {
		passages, err := r.Knowledge.Retrieve(ctx, a, testMode, message, knowledge.DefaultChunk)
		if err != nil {
			return TestResult{}, err
		}
		req.System += KnowledgeContext(passages)
		res.KnowledgeChunksUsed = len(passages)
	}
	if names := enabledToolNames(a); len(names) > 0 && !executeTools {
		warn("The agent's tools (%s) are offered to the model but a dry run does not execute them: set executeTools to run them.", strings.Join(names, ", "))
	}
	cands, err := r.candidates(ctx, a, testMode)
	if err != nil {
		return TestResult{}, err
	}
	budget := int64(DefaultTokenBudget)
	if a.Spec.TokenBudget != nil {
		budget = int64(*a.Spec.TokenBudget)
	}
	var out outcome
	for n := 0; n < MaxSteps; n++ {
		resp, _, err := r.chat(ctx, "" /* a dry run is not charged */, cands, req, &out)
		res.InputTokens, res.OutputTokens = out.usage.InputTokens, out.usage.OutputTokens
		if err != nil {
			return fail(err.Error())
		}
		if resp.Stop == llm.StopFiltered {
			return fail("The model's provider filtered the answer.")
		}
		spent := out.usage.InputTokens+out.usage.OutputTokens >= budget
		if len(resp.ToolCalls) == 0 || spent {
			if resp.Text == "" {
				return fail("The model gave no answer" + budgetNote(out, budget) + ".")
			}
			if len(resp.ToolCalls) > 0 {
				warn("The token budget (%d) ran out: the model's tool calls were dropped and its text is the answer, as in a real execution.", budget)
			}
			res.Success, res.Text = true, &resp.Text
			return done()
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		stopped := false
		for _, call := range resp.ToolCalls {
			t, known := tools[call.Name]
			switch {
			case call.Name == HandoffTool && a.Spec.Handoff != nil && a.Spec.Handoff.Tool:
				warn("The model called %s: a real conversation would be handed to a human (nothing was handed over here).", HandoffTool)
				text := a.Spec.Handoff.Message
				if text == "" {
					text = resp.Text
				}
				res.Success, res.Text = true, nil
				if text != "" {
					res.Text = &text
				}
				return done()
			case call.Name == StartFlowTool && len(intentFlows(a)) > 0:
				warn("The model started the flow %s: a real conversation would run it step by step (a dry run runs no flow).", compactArgs(call.Arguments))
				res.Success, res.Text = true, nil
				if resp.Text != "" {
					res.Text = &resp.Text
				}
				return done()
			case !known:
				// As in an execution: the model is told the valid names, and goes on.
				msg := fmt.Sprintf("There is no tool %q. The tools are: %s.", call.Name, strings.Join(toolNames(req.Tools), ", "))
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, ToolName: call.Name, Text: msg, IsError: true})
			case !executeTools:
				warn("The model called %s with %s; a dry run does not execute tools (set executeTools to run it).", call.Name, compactArgs(call.Arguments))
				stopped = true
			default:
				tr := r.CallTool(ctx, a, t, call.Arguments, "", "")
				ran := ExecutedToolCall{Name: call.Name, OK: tr.OK}
				text := tr.Body
				if !tr.OK {
					ran.Error = &tr.Error
					text = tr.Error
					if tr.Body != "" {
						text += ": " + tr.Body
					}
				}
				res.ExecutedToolCalls = append(res.ExecutedToolCalls, ran)
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, ToolName: call.Name, Text: text, IsError: !tr.OK})
			}
		}
		if stopped {
			res.Success, res.Text = true, nil
			if resp.Text != "" {
				res.Text = &resp.Text
			}
			return done()
		}
	}
	return fail(fmt.Sprintf("The model still called tools after %d steps.", MaxSteps))
}

// ModelRequest is what an agent's model is asked, but the conversation: the system prompt, the
// bounds, and the tools it is offered (its enabled tools, and handoff_to_human when the agent
// hands off by tool), with the enabled tools by name.
func ModelRequest(a *v1alpha1.Agent) (llm.Request, map[string]v1alpha1.AgentTool) {
	req := llm.Request{System: a.Spec.SystemPrompt, MaxTokens: llm.DefaultMaxTokens}
	if a.Spec.MaxTokens != nil {
		req.MaxTokens = int(*a.Spec.MaxTokens)
	}
	if a.Spec.Temperature != "" {
		if t, err := strconv.ParseFloat(a.Spec.Temperature, 64); err == nil {
			req.Temperature = &t
		}
	}
	tools := map[string]v1alpha1.AgentTool{}
	for _, t := range a.Spec.Tools {
		if t.ToolEnabled() {
			tools[t.Name] = t
			req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters.Raw})
		}
	}
	if flows := intentFlows(a); len(flows) > 0 {
		req.Tools = append(req.Tools, startFlowTool(flows))
	}
	if a.Spec.Handoff != nil && a.Spec.Handoff.Tool {
		req.Tools = append(req.Tools, llm.Tool{Name: HandoffTool, Description: "Hand the conversation to a human when you cannot help or the contact asks for a person.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"required":[]}`)})
	}
	return req, tools
}

func contextWindow(a *v1alpha1.Agent) int {
	if a.Spec.ContextWindowMessages != nil {
		return int(*a.Spec.ContextWindowMessages)
	}
	return DefaultContextWindow
}

// testContext is the conversation a dry run's model sees, as an execution's: at most window
// messages, the last being the message, so the history keeps its last window-1 turns; turns
// without text are left out, as messages without a body are.
func testContext(history []TestTurn, window int, message string) []llm.Message {
	keep := max(window, 1) - 1
	history = history[max(len(history)-keep, 0):]
	var out []llm.Message
	for _, t := range history {
		if t.Content == nil || *t.Content == "" || t.Role == nil {
			continue
		}
		out = append(out, llm.Message{Role: llm.Role(*t.Role), Text: *t.Content})
	}
	return append(out, llm.Message{Role: llm.RoleUser, Text: message})
}

func enabledToolNames(a *v1alpha1.Agent) []string {
	var names []string
	for _, t := range a.Spec.Tools {
		if t.ToolEnabled() {
			names = append(names, t.Name)
		}
	}
	return names
}

// compactArgs shows a call's arguments in a warning, cut at 200 bytes.
func compactArgs(args json.RawMessage) string {
	s := strings.TrimSpace(string(args))
	if s == "" {
		s = "{}"
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// messageChannels are the channels on which an agent can receive messages: one-way SMS cannot
// receive, and voice carries calls.
func messageChannels(chans []v1alpha1.Channel) []v1alpha1.Channel {
	return slices.DeleteFunc(slices.Clone(chans), func(c v1alpha1.Channel) bool {
		return c == v1alpha1.ChannelSMSOneway || c == v1alpha1.ChannelVoice
	})
}

// reachWarnings say why a real message may never reach the agent, though a dry run answers: no
// sender, a sender another agent holds, no channel it triggers on, text not among its types.
func (r *Runtime) reachWarnings(ctx context.Context, a *v1alpha1.Agent) ([]string, error) {
	var out []string
	if len(a.Spec.Senders) == 0 {
		out = append(out, "The agent has no sender: it answers no real message until a sender is connected.")
	}
	for _, c := range a.Status.Conflicts {
		sender, holder, _ := strings.Cut(c, "=")
		out = append(out, fmt.Sprintf("Sender %s answers with an older agent (%s): this agent does not answer there.", sender, holder))
	}
	var receiving []v1alpha1.Channel
	for _, name := range a.Spec.Senders {
		var s v1alpha1.Sender
		err := r.Reader.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: name}, &s)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("read sender %s of agent %s: %w", name, a.Name, err)
		}
		if err != nil {
			out = append(out, fmt.Sprintf("Sender %s does not exist.", name))
			continue
		}
		for _, c := range messageChannels(s.Spec.ActiveChannels()) {
			if !slices.Contains(receiving, c) {
				receiving = append(receiving, c)
			}
		}
	}
	if len(a.Spec.Senders) > 0 {
		answered := slices.DeleteFunc(slices.Clone(receiving), func(c v1alpha1.Channel) bool {
			return len(a.Spec.TriggerOnChannels) > 0 && !slices.Contains(a.Spec.TriggerOnChannels, c)
		})
		if len(answered) == 0 && len(a.Spec.TriggerOnChannels) > 0 {
			out = append(out, fmt.Sprintf("None of the agent's senders (%s) has a channel it triggers on (%s) switched on: it answers dry runs but no real message.",
				strings.Join(a.Spec.Senders, ", "), joinChannels(a.Spec.TriggerOnChannels)))
		} else if len(answered) == 0 {
			out = append(out, fmt.Sprintf("None of the agent's senders (%s) has a channel switched on that receives messages: it answers dry runs but no real message.",
				strings.Join(a.Spec.Senders, ", ")))
		}
	}
	if types := a.Spec.TriggerOnMessageTypes; len(types) > 0 && !slices.Contains(types, "text") {
		out = append(out, fmt.Sprintf("The agent does not answer text messages (triggerOnMessageTypes: %s): a real text like this one gets no answer.",
			strings.Join(types, ", ")))
	}
	return out, nil
}

func joinChannels(chans []v1alpha1.Channel) string {
	names := make([]string, len(chans))
	for i, c := range chans {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}
