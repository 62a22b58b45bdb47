package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Calls (internal/call): each prompt of a caller is an execution like an inbound message's,
// with the same model, fallbacks, tools, knowledge and money, run at once by the process that
// holds the call, its answer streamed to the caller as the model writes it instead of sent
// as a reply.

// EndCallTool is the tool an agent on a call is offered to hang up.
const EndCallTool = "end_call"

// ErrInterrupted is the cause of the cancellation of an answer the caller spoke over.
var ErrInterrupted = errors.New("the caller spoke over the answer")

// voicePrompt is added to the agent's system prompt on a call.
const voicePrompt = "\n\nYou are speaking with the caller on a phone call: your words are read out by a speech " +
	"synthesiser. Answer in short spoken sentences, without lists, markdown, links, code or emoji. When the " +
	"conversation is over, say goodbye and call " + EndCallTool + "."

// VoiceTurn is a caller's prompt for an agent to answer.
type VoiceTurn struct {
	Agent    *v1alpha1.Agent
	TestMode bool
	Sender   string
	CallID   string
	// Key names the prompt (the call and its turn): a prompt is answered by one execution.
	Key string
	// History is the call so far, oldest first, ending with the caller's prompt.
	History []llm.Message
	// OnText receives the answer as the model writes it.
	OnText func(text string)
	// Knowledge says the agent has knowledge bases to retrieve from (asked once a call, with
	// HasKnowledge, rather than before every answer).
	Knowledge bool
}

// HasKnowledge says whether a has knowledge bases.
func (r *Runtime) HasKnowledge(ctx context.Context, a *v1alpha1.Agent) (bool, error) {
	if r.Knowledge == nil {
		return false, nil
	}
	return db.Planned(r.Pool).HasKnowledge(ctx, db.HasKnowledgeParams{Project: a.Namespace, Agent: a.Name})
}

// VoiceAnswer is what the agent did with a prompt.
type VoiceAnswer struct {
	ExecutionID string
	// Text is everything the agent said (what OnText received).
	Text string
	// Status is the execution's status; Code and Message say why when it is not success.
	Status, Code, Message string
	// EndCall: the agent hung up; Transfer: it handed the call to a human.
	EndCall, Transfer bool
	// ToolCalls are the tools it called, for the transcript.
	ToolCalls []llm.ToolCall
}

// voiceState is what converse keeps of a turn on a call.
type voiceState struct {
	spoken            string
	endCall, transfer bool
	tools             []llm.ToolCall
	// recorded waits for the execution's row, written while the model answers (it is not on
	// the way to the first words): its charge and outcome need it.
	recorded func() error
}

// Speak answers a caller's prompt: it records an execution, streams the model's answer through
// t.OnText, charges its tokens, and finishes the execution. An error is Switchboard's own.
func (r *Runtime) Speak(ctx context.Context, t VoiceTurn) (VoiceAnswer, error) {
	start := r.clock()
	id, err := randid.Name("exe_", 16)
	if err != nil {
		return VoiceAnswer{}, err
	}
	a := voiceAgent(t.Agent)
	p := db.InsertCallExecutionParams{ID: id, Project: a.Namespace, TestMode: t.TestMode, Agent: a.Name, Sender: t.Sender,
		CallID: t.CallID, InboundMessageID: t.Key, Now: start.UTC(), LeaseUntil: ptr(start.Add(2 * Lease).UTC())}
	ex := db.AgentExecution{ID: id, Project: p.Project, TestMode: p.TestMode, Agent: p.Agent, Sender: p.Sender,
		ConversationID: t.CallID, InboundMessageID: t.Key, CallID: &t.CallID, Status: "running", CreatedAt: p.Now}
	inserted := make(chan error, 1)
	go func() {
		_, err := db.Planned(r.Pool).InsertCallExecution(context.WithoutCancel(ctx), p)
		if errors.Is(err, pgx.ErrNoRows) {
			err = fmt.Errorf("prompt %s of call %s was answered already", t.Key, t.CallID)
		}
		inserted <- err
	}()
	voice := &voiceState{recorded: sync.OnceValue(func() error { return <-inserted })}
	out, err := r.speak(ctx, ex, a, t, voice)
	if rerr := voice.recorded(); rerr != nil {
		return VoiceAnswer{}, fmt.Errorf("record the execution of call %s: %w", t.CallID, rerr)
	}
	if err != nil && ctx.Err() == nil {
		return VoiceAnswer{}, err
	}
	if ctx.Err() != nil {
		// Cut short: the caller spoke over it, or hung up; a turn that ran out of time failed.
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrInterrupted):
			out.status, out.code, out.message = StatusFiltered, "interrupted", "The caller spoke over the answer."
		case !errors.Is(cause, context.DeadlineExceeded):
			out.status, out.code, out.message = StatusFiltered, "call_ended", "The call ended during the answer."
		case out.status == StatusSuccess || out.status == "":
			out.status, out.code, out.message = StatusError, "model_timeout", "The model did not finish its answer in time."
		}
	}
	if out.status != StatusSuccess && out.status != StatusBalanceInsufficient && out.cost > 0 {
		if _, err := r.charge(ctx, ex, out.cost); err != nil {
			return VoiceAnswer{}, err
		}
	}
	// The turn's record outlives a caller who hung up mid-answer.
	if err := r.finish(context.WithoutCancel(ctx), ex, out, r.clock().Sub(start)); err != nil {
		return VoiceAnswer{}, err
	}
	return VoiceAnswer{ExecutionID: ex.ID, Text: voice.spoken, Status: out.status, Code: out.code, Message: out.message,
		EndCall: voice.endCall, Transfer: voice.transfer, ToolCalls: voice.tools}, nil
}

func (r *Runtime) speak(ctx context.Context, ex db.AgentExecution, a *v1alpha1.Agent, t VoiceTurn, voice *voiceState) (outcome, error) {
	prompt := ""
	if n := len(t.History); n > 0 {
		prompt = t.History[n-1].Text
	}
	if h := a.Spec.Handoff; h != nil && matchesKeyword(prompt, h.Keywords) {
		voice.transfer = true
		return outcome{status: StatusSuccess, code: "handed_off", message: "Handed to a human (keyword)."}, nil
	}
	req, tools := ModelRequest(a)
	req.Tools = withoutTool(req.Tools, StartFlowTool) // flows answer text conversations only
	req.Tools = append(req.Tools, llm.Tool{Name: EndCallTool, Description: "Hang up the call once the conversation is over and you said goodbye.",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"required":[]}`)})
	req.System += voicePrompt
	window := contextWindow(a)
	req.Messages = t.History[max(len(t.History)-max(window, 1), 0):]
	req.OnText = t.OnText
	question := ""
	if t.Knowledge {
		question = prompt
	}
	cands, budget, passages, refused, err := r.prepare(ctx, ex, a, &req, question)
	if err != nil || refused != nil {
		return *refused, err
	}
	out, err := r.converse(ctx, ex, a, req, cands, tools, budget, voice)
	out.knowledge = passages
	return out, err
}

// paid ends a turn on a call: the answer was streamed already; its tokens are paid for.
func (r *Runtime) paid(ctx context.Context, ex db.AgentExecution, out outcome, voice *voiceState) (outcome, error) {
	if err := voice.recorded(); err != nil {
		return out, err
	}
	ok, err := r.charge(ctx, ex, out.cost)
	if err != nil {
		return out, err
	}
	if !ok {
		out.status, out.code, out.message = StatusBalanceInsufficient, "insufficient_balance",
			"The project's balance cannot pay for the installation's model."
		return out, nil
	}
	out.status = StatusSuccess
	return out, nil
}

// voiceAgent is a with the model its voice settings name for calls, if any.
func voiceAgent(a *v1alpha1.Agent) *v1alpha1.Agent {
	if a.Spec.Voice == nil || a.Spec.Voice.Model == "" || a.Spec.Voice.Model == a.Spec.Model {
		return a
	}
	c := a.DeepCopy()
	c.Spec.Model = a.Spec.Voice.Model
	return c
}

func withoutTool(tools []llm.Tool, name string) []llm.Tool {
	out := tools[:0:0]
	for _, t := range tools {
		if t.Name != name {
			out = append(out, t)
		}
	}
	return out
}

// joinSpoken puts what a model said after a tool call after what it said before.
func joinSpoken(before, more string) string {
	if before == "" || more == "" || strings.HasSuffix(before, " ") || strings.HasPrefix(more, " ") {
		return before + more
	}
	return before + " " + more
}
