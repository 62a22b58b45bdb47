package call

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// The relay: the provider recognises the caller's speech and sends each prompt; the session
// gives it to the agent and streams the answer back token by token, keeps the transcript, and
// ends the call when the agent, a timer or the API says so. The messages are ConversationRelay's
// (internal/transport/twilio/relay.go), which the sandbox's caller speaks too.

// Conn is one relay connection: Twilio's WebSocket, or the sandbox's caller in this process.
type Conn interface {
	// Read returns the next message; an error once the connection is closed.
	Read(ctx context.Context) (twilio.RelayMessage, error)
	// Write sends twilio.TextToken or twilio.EndSession.
	Write(ctx context.Context, v any) error
	// Close ends the connection from this side.
	Close() error
}

// Timings of a session.
const (
	// SessionLease is how long a process holds a call's relay without renewing it; past it the
	// call may be taken over, and the sweeper ends a call nobody took over.
	SessionLease   = 30 * time.Second
	sessionRenewal = 10 * time.Second
	// DefaultTurnTimeout bounds one answer: a model still writing then is given up on, the
	// caller hears the apology and the call ends.
	DefaultTurnTimeout = 30 * time.Second
	setupTimeout       = 10 * time.Second
	// endGrace is how long the provider has to close the connection after the session's end.
	endGrace = 5 * time.Second
	// settleWait bounds the wait for an answer to stop once its call ends under it.
	settleWait = 5 * time.Second
)

// The closing lines of calls the session ends.
const (
	maxDurationLine = "We have reached the time limit for this call. Thank you for calling. Goodbye."
	idleLine        = "I haven't heard from you, so I'll end the call now. Goodbye."
)

// errCallEnded stops a session whose call ended elsewhere (the API, a status callback).
var errCallEnded = errors.New("the call ended")

// session is a relay this process holds.
type session struct {
	cancel context.CancelCauseFunc
}

func (s *Service) stopSession(id string) {
	if v, ok := s.sessions.Load(id); ok {
		v.(*session).cancel(errCallEnded)
	}
}

// HandoffData is what the session's end tells the provider (the <Connect> action's answer
// follows it): why the call is ending and, for a transfer, where to.
type HandoffData struct {
	Reason     string `json:"reason"`
	TransferTo string `json:"transferTo,omitempty"`
}

// ServeRelay holds the relay of call id on conn until the call or the connection ends.
func (s *Service) ServeRelay(ctx context.Context, conn Conn, id string) error {
	defer conn.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	setupCtx, stop := context.WithTimeout(ctx, setupTimeout)
	setup, err := conn.Read(setupCtx)
	stop()
	if err != nil {
		return fmt.Errorf("relay of call %s: no setup: %w", id, err)
	}
	if setup.Type != twilio.RelaySetup {
		return fmt.Errorf("relay of call %s: %q before setup", id, setup.Type)
	}
	q := db.Planned(s.Pool)
	c, err := q.CallByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("relay of unknown call %s", id)
	}
	if err != nil {
		return fmt.Errorf("read call %s: %w", id, err)
	}
	if c.ProviderCallID != nil && setup.CallSID != "" && *c.ProviderCallID != setup.CallSID {
		return fmt.Errorf("relay of call %s names another call", id)
	}
	if !Active(c.Status) {
		return conn.Write(ctx, twilio.EndSession{Type: twilio.RelayEnd, HandoffData: handoff(deref(c.EndReason), "")})
	}
	if _, err := q.HoldCallSession(ctx, db.HoldCallSessionParams{ID: id, Until: ptrTime(s.now().Add(SessionLease)), Now: s.now()}); err != nil {
		return fmt.Errorf("hold the relay of call %s: %w", id, err)
	}
	if c.Status != StatusInProgress {
		if err := s.answer(ctx, id, ""); err != nil {
			return err
		}
		if c, err = q.CallByID(ctx, id); err != nil {
			return err
		}
	}
	s.sessions.Store(id, &session{cancel: cancel})
	defer s.sessions.CompareAndDelete(id, s.sessionOf(id))

	r := &relay{s: s, conn: conn, call: c}
	var a v1alpha1.Agent
	if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: c.Project, Name: c.Agent}, &a); err != nil || !a.Spec.Enabled {
		// The agent was deleted or disabled after the call was placed.
		r.say(ctx, Apology)
		return r.end(ctx, EndError, "")
	}
	r.agent = &a
	if r.knowledge, err = s.Speaker.HasKnowledge(ctx, &a); err != nil {
		return fmt.Errorf("read the knowledge of call %s's agent: %w", id, err)
	}
	turns, err := q.CallTurns(ctx, id)
	if err != nil {
		return fmt.Errorf("read the transcript of call %s: %w", id, err)
	}
	if len(turns) == 0 && c.Greeting != nil {
		// The provider read the greeting out as the call connected.
		now := s.now()
		if _, err := r.appendTurn(ctx, db.AppendCallTurnParams{Role: "assistant", Text: *c.Greeting, StartedAt: &now, EndedAt: &now}); err != nil {
			return err
		}
		r.history = append(r.history, llm.Message{Role: llm.RoleAssistant, Text: *c.Greeting})
	}
	for _, t := range turns {
		switch t.Role {
		case "user":
			r.history = append(r.history, llm.Message{Role: llm.RoleUser, Text: t.Text})
		case "assistant":
			r.history = append(r.history, llm.Message{Role: llm.RoleAssistant, Text: t.Text})
		}
	}
	return r.run(ctx)
}

func (s *Service) turnTimeout() time.Duration {
	if s.TurnTimeout > 0 {
		return s.TurnTimeout
	}
	return DefaultTurnTimeout
}

func (s *Service) sessionOf(id string) *session {
	v, _ := s.sessions.Load(id)
	sess, _ := v.(*session)
	return sess
}

// relay is a session's state.
type relay struct {
	s       *Service
	conn    Conn
	call    db.Call
	agent   *v1alpha1.Agent
	history []llm.Message
	writeMu sync.Mutex
	turn    *turn
	// lastAnswer is the seq of the last answer stored, for an interrupt that comes after it.
	lastAnswer int32
	ending     bool
	// knowledge: the agent has knowledge bases (asked once, when the session starts).
	knowledge bool
}

// turn is an answer being written.
type turn struct {
	cancel   context.CancelCauseFunc
	done     chan turnResult
	promptAt time.Time
	// prompted is the storing of the caller's prompt: the answer is stored after it.
	prompted chan error
	stored   bool
	mu       sync.Mutex
	sent     strings.Builder
	first    time.Time
	cut      bool
	// finished: the answer's last words were written (the caller may hang up on hearing them).
	finished bool
}

// promptStored waits for the caller's prompt to be stored.
func (t *turn) promptStored() error {
	if t.stored {
		return nil
	}
	t.stored = true
	return <-t.prompted
}

type turnResult struct {
	answer agent.VoiceAnswer
	err    error
}

func (r *relay) run(ctx context.Context) error {
	frames := make(chan twilio.RelayMessage)
	closed := make(chan error, 1)
	go func() {
		for {
			m, err := r.conn.Read(ctx)
			if err != nil {
				closed <- err
				return
			}
			select {
			case frames <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	limit := time.NewTimer(r.remaining())
	defer limit.Stop()
	idle := newIdle(r.agent)
	defer idle.stop()
	renew := time.NewTicker(sessionRenewal)
	defer renew.Stop()
	var endBy <-chan time.Time
	for {
		var done chan turnResult
		if r.turn != nil {
			done = r.turn.done
		}
		select {
		case <-ctx.Done():
			r.settle(ctx, context.Cause(ctx))
			return nil
		case err := <-closed:
			// The caller hung up, or the provider closed the relay: the provider's report ends
			// the call; a relay lost without one is the sweeper's.
			r.settle(ctx, errCallEnded)
			if !r.ending {
				r.s.Log.V(1).Info("relay closed", "call", r.call.ID, "reason", err.Error())
			}
			return nil
		case <-endBy:
			return nil
		case <-renew.C:
			if _, err := db.Planned(r.s.Pool).HoldCallSession(ctx, db.HoldCallSessionParams{ID: r.call.ID,
				Until: ptrTime(r.s.now().Add(SessionLease)), Now: r.s.now()}); errors.Is(err, pgx.ErrNoRows) {
				return nil // it ended meanwhile
			} else if err != nil && ctx.Err() == nil {
				r.s.Log.Error(err, "renew the relay of a call", "call", r.call.ID)
			}
		case <-limit.C:
			if !r.ending {
				r.settle(ctx, errCallEnded)
				r.say(ctx, maxDurationLine)
				if err := r.end(ctx, EndMaxDuration, ""); err != nil {
					return err
				}
				endBy = time.After(endGrace)
			}
		case <-idle.c():
			if !r.ending && r.turn == nil {
				r.say(ctx, idleLine)
				if err := r.end(ctx, EndIdle, ""); err != nil {
					return err
				}
				endBy = time.After(endGrace)
			}
		case m := <-frames:
			if r.ending {
				continue
			}
			switch m.Type {
			case twilio.RelayPrompt:
				if !m.Last || strings.TrimSpace(m.VoicePrompt) == "" {
					continue
				}
				idle.pause()
				if err := r.prompt(ctx, m.VoicePrompt); err != nil {
					return err
				}
			case twilio.RelayDTMF:
				idle.pause()
				if err := r.prompt(ctx, "(The caller pressed "+m.Digit+" on the keypad.)"); err != nil {
					return err
				}
			case twilio.RelayInterrupt:
				if err := r.interrupt(ctx, m.UtteranceUntilInterrupt); err != nil {
					return err
				}
			case twilio.RelayError:
				r.s.Log.Info("the relay reported an error", "call", r.call.ID, "description", m.Description)
			}
		case res := <-done:
			t := r.turn
			r.turn = nil
			if err := r.answered(ctx, t, res); err != nil {
				return err
			}
			if r.ending {
				endBy = time.After(endGrace)
			} else {
				idle.reset()
			}
		}
	}
}

// remaining is the time left before the call's cap, from its answer.
func (r *relay) remaining() time.Duration {
	start := r.s.now()
	if r.call.AnsweredAt != nil {
		start = *r.call.AnsweredAt
	}
	return max(time.Until(start.Add(r.s.maxDuration(r.call))), time.Millisecond)
}

// prompt stores what the caller said and starts the agent's answer (one spoken over an
// answer still being written cuts it first).
func (r *relay) prompt(ctx context.Context, text string) error {
	if r.turn != nil {
		if err := r.interrupt(ctx, ""); err != nil {
			return err
		}
	}
	now := r.s.now()
	key, err := randid.Name(r.call.ID+"#", 12)
	if err != nil {
		return err
	}
	r.history = append(r.history, llm.Message{Role: llm.RoleUser, Text: text})
	tctx, cancel := context.WithCancelCause(ctx)
	tctx, stop := context.WithTimeout(tctx, r.s.turnTimeout())
	t := &turn{cancel: func(cause error) { cancel(cause); stop() }, done: make(chan turnResult, 1), promptAt: time.Now(),
		prompted: make(chan error, 1)}
	r.turn = t
	// The prompt is stored while the agent answers: nothing waits on it before the first words.
	go func() {
		_, err := r.appendTurn(ctx, db.AppendCallTurnParams{Role: "user", Text: text, StartedAt: &now, EndedAt: &now})
		t.prompted <- err
	}()
	history := append([]llm.Message(nil), r.history...)
	go func() {
		ans, err := r.s.Speaker.Speak(tctx, agent.VoiceTurn{Agent: r.agent, TestMode: r.call.TestMode, Sender: r.call.Sender,
			CallID: r.call.ID, Key: key, History: history, Knowledge: r.knowledge, OnText: func(token string) {
				t.mu.Lock()
				defer t.mu.Unlock()
				if t.cut || token == "" {
					return
				}
				if t.first.IsZero() {
					t.first = time.Now()
				}
				if err := r.write(tctx, twilio.TextToken{Type: twilio.RelayText, Token: token}); err == nil {
					t.sent.WriteString(token)
				}
			}})
		t.mu.Lock()
		if !t.cut && !t.first.IsZero() {
			t.finished = r.write(tctx, twilio.TextToken{Type: twilio.RelayText, Token: "", Last: true}) == nil
		}
		t.mu.Unlock()
		t.done <- turnResult{answer: ans, err: err}
	}()
	return nil
}

// answered stores an answer that ended: its tool calls and what was said, with its latency;
// then what the agent asked for (the end of the call, a transfer), or the apology for an answer
// that failed.
func (r *relay) answered(ctx context.Context, t *turn, res turnResult) error {
	t.cancel(nil)
	if err := t.promptStored(); err != nil {
		return err
	}
	if res.err != nil {
		return res.err
	}
	ans := res.answer
	t.mu.Lock()
	cut := t.cut
	t.mu.Unlock()
	if cut {
		return nil // stored when it was cut
	}
	spoken, err := r.storeAnswer(ctx, t, res, false)
	if err != nil {
		return err
	}
	failed := ans.Status != agent.StatusSuccess && ans.Code != "handed_off"
	switch {
	case failed:
		r.s.Log.Info("the agent could not answer on a call", "call", r.call.ID, "code", ans.Code)
		r.say(ctx, Apology)
		reason := EndError
		if ans.Status == agent.StatusBalanceInsufficient {
			reason = EndInsufficientBalance
		}
		return r.endWith(ctx, reason, "", ans.Message)
	case ans.Transfer && r.agent.Spec.Voice != nil && r.agent.Spec.Voice.TransferPhoneNumber != "":
		if r.agent.Spec.Handoff != nil && r.agent.Spec.Handoff.Message != "" && spoken == "" {
			r.say(ctx, r.agent.Spec.Handoff.Message)
		}
		return r.end(ctx, EndTransfer, r.agent.Spec.Voice.TransferPhoneNumber)
	case ans.Transfer || ans.EndCall:
		return r.end(ctx, EndAgent, "")
	}
	return nil
}

// interrupt cuts the answer the caller spoke over: the turn keeps what they heard (heard, or
// what was sent when the provider did not say).
func (r *relay) interrupt(ctx context.Context, heard string) error {
	now := r.s.now()
	t := r.turn
	if t == nil {
		if r.lastAnswer > 0 && heard != "" {
			// The answer was written, and was being read out.
			return db.Planned(r.s.Pool).CutCallTurn(ctx, db.CutCallTurnParams{CallID: r.call.ID, Seq: r.lastAnswer, Text: heard, EndedAt: &now})
		}
		return nil
	}
	r.turn = nil
	t.mu.Lock()
	t.cut = true
	spoken, first := t.sent.String(), t.first
	t.mu.Unlock()
	t.cancel(agent.ErrInterrupted)
	if err := t.promptStored(); err != nil {
		return err
	}
	if heard == "" {
		heard = spoken
	}
	if heard == "" {
		return nil
	}
	var latency *int32
	if !first.IsZero() {
		ms := int32(first.Sub(t.promptAt).Milliseconds())
		latency = &ms
	}
	seq, err := r.appendTurn(ctx, db.AppendCallTurnParams{Role: "assistant", Text: heard, StartedAt: ptrTime(t.promptAt.UTC()),
		EndedAt: &now, Interrupted: true, LatencyMs: latency})
	r.lastAnswer = seq
	r.history = append(r.history, llm.Message{Role: llm.RoleAssistant, Text: heard})
	return err
}

// settle ends the answer being written when its call ends under it (the caller hung up, the
// call was ended elsewhere, or reached its cap). The answer is stored as far as it was sent:
// whole when its last words went out, since a caller may hang up the moment they hear them,
// and cut otherwise. Nothing more is done for it: the call is ending.
func (r *relay) settle(ctx context.Context, cause error) {
	t := r.turn
	if t == nil {
		return
	}
	r.turn = nil
	t.cancel(cause)
	var res turnResult
	select {
	case res = <-t.done:
	case <-time.After(settleWait):
		res.err = context.DeadlineExceeded // stored as far as it was sent
	}
	t.mu.Lock()
	t.cut = true
	finished := t.finished
	t.mu.Unlock()
	if err := t.promptStored(); err != nil {
		r.s.Log.Error(err, "store the last prompt of a call", "call", r.call.ID)
		return
	}
	if _, err := r.storeAnswer(ctx, t, res, !finished); err != nil {
		r.s.Log.Error(err, "store the last answer of a call", "call", r.call.ID)
	}
}

// storeAnswer stores what the agent said in turn t after the caller's prompt (already stored):
// the tool calls of an answer that ended, and the words sent, with the latency of the first
// one. It returns what was said.
func (r *relay) storeAnswer(ctx context.Context, t *turn, res turnResult, interrupted bool) (string, error) {
	ans := res.answer
	now := r.s.now()
	if res.err == nil {
		for _, call := range ans.ToolCalls {
			summary, _ := json.Marshal(map[string]any{"tool": call.Name, "arguments": call.Arguments})
			if _, err := r.appendTurn(ctx, db.AppendCallTurnParams{Role: "tool", Text: string(summary), StartedAt: &now, EndedAt: &now,
				ExecutionID: nonEmpty(ans.ExecutionID)}); err != nil {
				return "", err
			}
		}
	}
	t.mu.Lock()
	spoken, first := t.sent.String(), t.first
	t.mu.Unlock()
	if spoken == "" {
		return "", nil
	}
	var latency *int32
	if !first.IsZero() {
		ms := int32(first.Sub(t.promptAt).Milliseconds())
		latency = &ms
	}
	seq, err := r.appendTurn(ctx, db.AppendCallTurnParams{Role: "assistant", Text: spoken, StartedAt: ptrTime(t.promptAt.UTC()),
		EndedAt: &now, LatencyMs: latency, Interrupted: interrupted, ExecutionID: nonEmpty(ans.ExecutionID)})
	if err != nil {
		return "", err
	}
	r.lastAnswer = seq
	r.history = append(r.history, llm.Message{Role: llm.RoleAssistant, Text: spoken})
	return spoken, nil
}

// say reads a line out (the apology, a closing line) as one answer.
func (r *relay) say(ctx context.Context, line string) {
	if err := r.write(ctx, twilio.TextToken{Type: twilio.RelayText, Token: line, Last: true}); err != nil {
		return
	}
	now := r.s.now()
	if _, err := r.appendTurn(ctx, db.AppendCallTurnParams{Role: "assistant", Text: line, StartedAt: &now, EndedAt: &now}); err != nil {
		r.s.Log.Error(err, "store a line of a call", "call", r.call.ID)
	}
}

// end records why Switchboard ends the call and ends the relay; the provider then asks what
// next (the <Connect> action): hang up, or the transfer.
func (r *relay) end(ctx context.Context, reason, transferTo string) error {
	return r.endWith(ctx, reason, transferTo, "")
}

func (r *relay) endWith(ctx context.Context, reason, transferTo, message string) error {
	r.ending = true
	if _, err := db.Planned(r.s.Pool).SetCallEnding(ctx, db.SetCallEndingParams{ID: r.call.ID, Ending: &reason,
		TransferTo: nonEmpty(transferTo), Now: r.s.now()}); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("record the end of call %s: %w", r.call.ID, err)
	}
	if message != "" {
		r.s.Log.Info("ending a call", "call", r.call.ID, "reason", reason, "why", message)
	}
	return r.write(ctx, twilio.EndSession{Type: twilio.RelayEnd, HandoffData: handoff(reason, transferTo)})
}

func (r *relay) write(ctx context.Context, v any) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	return r.conn.Write(ctx, v)
}

func (r *relay) appendTurn(ctx context.Context, p db.AppendCallTurnParams) (int32, error) {
	p.CallID, p.Now = r.call.ID, r.s.now()
	seq, err := db.Planned(r.s.Pool).AppendCallTurn(context.WithoutCancel(ctx), p)
	if err != nil {
		return 0, fmt.Errorf("store a turn of call %s: %w", r.call.ID, err)
	}
	return seq, nil
}

func handoff(reason, transferTo string) string {
	b, _ := json.Marshal(HandoffData{Reason: reason, TransferTo: transferTo})
	return string(b)
}

// idleTimer fires when the caller has said nothing for the agent's maxIdleSeconds while no
// answer is being written; without the setting it never fires.
type idleTimer struct {
	d time.Duration
	t *time.Timer
}

func newIdle(a *v1alpha1.Agent) *idleTimer {
	i := &idleTimer{}
	if a.Spec.Voice != nil && a.Spec.Voice.MaxIdleSeconds != nil {
		i.d = time.Duration(*a.Spec.Voice.MaxIdleSeconds) * time.Second
		i.t = time.NewTimer(i.d)
	}
	return i
}

func (i *idleTimer) c() <-chan time.Time {
	if i.t == nil {
		return nil
	}
	return i.t.C
}

func (i *idleTimer) pause() {
	if i.t != nil {
		i.t.Stop()
	}
}

func (i *idleTimer) reset() {
	if i.t != nil {
		i.t.Reset(i.d)
	}
}

func (i *idleTimer) stop() { i.pause() }

func ptrTime(t time.Time) *time.Time { return &t }
