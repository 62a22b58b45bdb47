package call

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// The sandbox's numbers (docs/calls.md#sandbox): what the scripted caller at each does.
const (
	// SandboxBusy is busy.
	SandboxBusy = "+15005550020"
	// SandboxNoAnswer rings and is not answered.
	SandboxNoAnswer = "+15005550021"
	// SandboxFails cannot be reached.
	SandboxFails = "+15005550022"
	// SandboxVoicemail is answered by a machine (the agent's voicemailAction applies).
	SandboxVoicemail = "+15005550023"
	// SandboxHangsUp hangs up while the agent answers its first question.
	SandboxHangsUp = "+15005550024"
	// SandboxTalksPrefix: +150055501NN asks NN questions (00: listens to the greeting and hangs
	// up), then hangs up.
	SandboxTalksPrefix = "+150055501"
	// SandboxDefaultTurns is how many questions a caller at any other number asks.
	SandboxDefaultTurns = 3
)

// Sandbox is the carrier of test keys' calls: a scripted caller in this process answers (or
// not, by the number called) and speaks ConversationRelay's messages to the session, so a test
// call runs the same session, agent runtime, transcript, events and money as a live one.
type Sandbox struct {
	Service *Service
	// Ring is the time from dialing to an answer (or to busy, no answer); 0 is 300 ms.
	Ring time.Duration
	// Pause is the caller's silence before each question; 0 is 200 ms.
	Pause time.Duration

	mu    sync.Mutex
	calls map[string]*sandboxCall // by the sandbox's call id
}

type sandboxCall struct {
	callID string
	cancel context.CancelFunc
	pipe   *pipe
}

var _ Carrier = (*Sandbox)(nil)

// Place implements Carrier: the scripted caller runs until the call ends, outside the request.
func (b *Sandbox) Place(_ context.Context, p Placement) (string, error) {
	sid, err := randid.Name("SB", 32)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	sc := &sandboxCall{callID: p.CallID, cancel: cancel}
	b.mu.Lock()
	if b.calls == nil {
		b.calls = map[string]*sandboxCall{}
	}
	b.calls[sid] = sc
	b.mu.Unlock()
	go func() {
		defer func() {
			cancel()
			b.mu.Lock()
			delete(b.calls, sid)
			b.mu.Unlock()
		}()
		if err := b.run(ctx, sid, sc, p); err != nil && ctx.Err() == nil {
			b.Service.Log.Error(err, "sandbox call failed", "call", p.CallID)
		}
	}()
	return sid, nil
}

// Hangup implements Carrier: the caller's line goes dead (the API ends the call itself).
func (b *Sandbox) Hangup(_ context.Context, sid string, _ bool) error {
	if sc := b.call(sid); sc != nil {
		sc.cancel()
	}
	return nil
}

// Say implements Carrier: the machine records the message, and the call ends.
func (b *Sandbox) Say(ctx context.Context, sid, _, _ string) error {
	sc := b.call(sid)
	if sc == nil {
		return nil
	}
	sc.cancel()
	_, _, err := b.Service.end(context.WithoutCancel(ctx), sc.callID, ending{status: StatusCompleted, reason: EndVoicemail})
	return err
}

// Status implements Carrier: a call this process no longer runs is lost (its caller died with
// the process that ran it).
func (b *Sandbox) Status(_ context.Context, sid string) (Progress, error) {
	if b.call(sid) != nil {
		return Progress{}, nil
	}
	return Progress{Status: StatusCompleted}, nil
}

func (b *Sandbox) call(sid string) *sandboxCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[sid]
}

func (b *Sandbox) pause(ctx context.Context, d, fallback time.Duration) bool {
	if d <= 0 {
		d = fallback
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// run plays the caller of p.To.
func (b *Sandbox) run(ctx context.Context, sid string, sc *sandboxCall, p Placement) error {
	s := b.Service
	if !b.pause(ctx, b.Ring, 300*time.Millisecond) {
		return nil
	}
	switch p.To {
	case SandboxBusy:
		return s.Advance(ctx, p.CallID, Progress{Status: StatusBusy})
	case SandboxNoAnswer:
		if !b.pause(ctx, 2*b.Ring, 600*time.Millisecond) {
			return nil
		}
		return s.Advance(ctx, p.CallID, Progress{Status: StatusNoAnswer})
	case SandboxFails:
		return s.Advance(ctx, p.CallID, Progress{Status: StatusFailed, Error: "The sandbox's number cannot be reached."})
	case SandboxVoicemail:
		if err := s.answer(ctx, p.CallID, "machine_end_beep"); err != nil {
			return err
		}
		if p.MachineDetection {
			return s.Machine(ctx, p.CallID, "machine_end_beep")
		}
	default:
		if err := s.answer(ctx, p.CallID, "human"); err != nil {
			return err
		}
	}
	questions, hangUpMidAnswer := sandboxScript(p.To)
	pp := newPipe()
	sc.pipe = pp
	served := make(chan error, 1)
	go func() { served <- s.ServeRelay(ctx, pp, p.CallID) }()
	limit := time.NewTimer(p.TimeLimit)
	defer limit.Stop()
	reason, err := b.talk(ctx, pp, sid, questions, hangUpMidAnswer, limit.C)
	pp.Close()
	if serr := <-served; serr != nil && err == nil && ctx.Err() == nil {
		err = serr
	}
	if ctx.Err() != nil {
		return err // hung up through the API, which ends the call itself
	}
	if _, _, endErr := s.end(context.WithoutCancel(ctx), p.CallID, ending{status: StatusCompleted, reason: reason}); endErr != nil {
		return endErr
	}
	return err
}

// talk asks the questions, each after the answer to the previous one, and returns why the call
// ended: the session's end (the call's own reason), the caller hanging up, or the time limit.
func (b *Sandbox) talk(ctx context.Context, pp *pipe, sid string, questions int, hangUpMidAnswer bool, limit <-chan time.Time) (string, error) {
	if err := pp.send(ctx, twilio.RelayMessage{Type: twilio.RelaySetup, SessionID: "VX" + sid[2:], CallSID: sid,
		Direction: "outbound-api", CallStatus: "in-progress"}); err != nil {
		return EndHangup, nil
	}
	for i := 0; i < questions; i++ {
		if !b.pause(ctx, b.Pause, 200*time.Millisecond) {
			return EndHangup, nil
		}
		text := fmt.Sprintf("Question %d: what can you tell me?", i+1)
		if i == questions-1 && questions > 1 {
			text = "Thank you, that is all I needed."
		}
		if err := pp.send(ctx, twilio.RelayMessage{Type: twilio.RelayPrompt, VoicePrompt: text, Lang: "en-US", Last: true}); err != nil {
			return EndHangup, nil
		}
		for answered := false; !answered; {
			select {
			case <-limit:
				return EndMaxDuration, nil
			case v, ok := <-pp.toCaller:
				if !ok {
					return EndHangup, nil
				}
				switch m := v.(type) {
				case twilio.EndSession:
					return EndHangup, nil // the call's own reason (ending) wins
				case twilio.TextToken:
					if hangUpMidAnswer && i == 0 {
						return EndHangup, nil
					}
					answered = m.Last
				}
			case <-pp.done:
				return EndHangup, nil
			case <-ctx.Done():
				return EndHangup, nil
			}
		}
	}
	return EndHangup, nil
}

// sandboxScript is how many questions the caller at to asks, and whether it hangs up during
// the first answer.
func sandboxScript(to string) (int, bool) {
	if to == SandboxHangsUp {
		return 1, true
	}
	if strings.HasPrefix(to, SandboxTalksPrefix) && len(to) == len(SandboxTalksPrefix)+2 {
		if n, err := strconv.Atoi(to[len(SandboxTalksPrefix):]); err == nil {
			return n, false
		}
	}
	return SandboxDefaultTurns, false
}

// pipe is a relay connection within the process: the session's end is a Conn, the caller's
// sends and receives on its channels.
type pipe struct {
	toServer chan twilio.RelayMessage
	toCaller chan any
	done     chan struct{}
	once     sync.Once
}

func newPipe() *pipe {
	return &pipe{toServer: make(chan twilio.RelayMessage, 16), toCaller: make(chan any, 1024), done: make(chan struct{})}
}

// Read implements Conn.
func (p *pipe) Read(ctx context.Context) (twilio.RelayMessage, error) {
	select {
	case m := <-p.toServer:
		return m, nil
	case <-p.done:
		return twilio.RelayMessage{}, io.EOF
	case <-ctx.Done():
		return twilio.RelayMessage{}, ctx.Err()
	}
}

// Write implements Conn.
func (p *pipe) Write(ctx context.Context, v any) error {
	select {
	case <-p.done:
		return io.EOF
	default:
	}
	select {
	case p.toCaller <- v:
		return nil
	case <-p.done:
		return io.EOF
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close implements Conn.
func (p *pipe) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *pipe) send(ctx context.Context, m twilio.RelayMessage) error {
	select {
	case p.toServer <- m:
		return nil
	case <-p.done:
		return io.EOF
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Machine applies the agent's voicemailAction to call id, which an answering machine picked up
// (the provider's detection said answeredBy): leave_message reads its voicemailMessage out and
// hangs up, hangup hangs up; with neither the agent talks to the machine as to anyone.
func (s *Service) Machine(ctx context.Context, id, answeredBy string) error {
	q := db.Planned(s.Pool)
	c, err := q.CallByID(ctx, id)
	if err != nil {
		return fmt.Errorf("read call %s: %w", id, err)
	}
	if !Active(c.Status) {
		return nil
	}
	if err := q.SetCallAnsweredBy(ctx, db.SetCallAnsweredByParams{ID: id, AnsweredBy: &answeredBy, Now: s.now()}); err != nil {
		return err
	}
	a, err := s.agentOf(ctx, c)
	if err != nil || a == nil || a.Spec.Voice == nil || a.Spec.Voice.VoicemailAction == "" {
		return err
	}
	if _, err := q.SetCallEnding(ctx, db.SetCallEndingParams{ID: id, Ending: ptr(EndVoicemail), Now: s.now()}); err != nil {
		return fmt.Errorf("record the end of call %s: %w", id, err)
	}
	s.stopSession(id)
	carrier, err := s.carrierOf(ctx, c.Provider)
	if err != nil || c.ProviderCallID == nil {
		return err
	}
	if msg := a.Spec.Voice.VoicemailMessage; a.Spec.Voice.VoicemailAction == "leave_message" && msg != "" {
		now := s.now()
		if _, err := q.AppendCallTurn(ctx, db.AppendCallTurnParams{CallID: id, Role: "assistant", Text: msg, StartedAt: &now,
			EndedAt: &now, Now: now}); err != nil {
			return err
		}
		return carrier.Say(ctx, *c.ProviderCallID, msg, SpeechOf(a, deref(c.Language), "").Language)
	}
	if err := carrier.Hangup(ctx, *c.ProviderCallID, true); err != nil {
		return err
	}
	if c.Provider == ProviderSandbox {
		_, _, err = s.end(context.WithoutCancel(ctx), id, ending{status: StatusCompleted, reason: EndVoicemail})
	}
	return err
}

// ErrUnknownCall is a provider's call Switchboard does not hold.
var ErrUnknownCall = errors.New("no such call")
