package message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Transports picks how a message goes out: the sandbox for test keys, always; for live keys the
// transport of the provider the sender's channel uses. A *transport.Failure from Route fails the
// message (no provider serves the channel); another error is tried again.
type Transports interface {
	// Routes are m's routes in the order they are tried: one, or a route's Providers
	// (docs/providers.md#routes).
	Routes(ctx context.Context, m db.Message) ([]Route, error)
	// Available refuses at accept what Route could not carry; strict answers as v2 does.
	Available(ctx context.Context, testMode bool, snd *v1alpha1.Sender, channel string, strict bool) error
}

// Route is the transport of one message and what it needs besides the message.
type Route struct {
	Transport transport.Transport
	// AccountToken is the sender's own credential on the channel (a bot token).
	AccountToken string
	// StatusCallback is where the provider reports the message's status changes.
	StatusCallback string
	// External: the transport reaches a real provider, whose sends cannot be taken back; each
	// call is recorded before it is made (status sending), and bounded.
	External bool
	// FromName and DKIM are an email's display name and signing key (its From domain's);
	// ReturnPath its envelope sender when it is not From.
	FromName   string
	DKIM       *transport.DKIMKey
	ReturnPath string
	// AccountID, when set, is the sending account the provider knows the sender's channel by
	// (a WhatsApp phone number id, a page id): the transport's From instead of the address.
	AccountID string
	// Provider is the Provider the message goes through ("namespace/name"; "" for none): its
	// callbacks, and only its, may move the message.
	Provider string
	// Circuit is the Provider's circuit breaker, told of each call's outcome; nil for none.
	Circuit Circuit
	// PaceKey and PerSecond pace single sends from the sender's address through the Provider,
	// shared with its broadcasts (a Provider with pace: all); PerSecond 0: unpaced.
	PaceKey   string
	PerSecond float64
}

// maxPaceSleep is the longest a dispatch waits in place for its paced slot; a longer wait
// snoozes the job without taking one.
const maxPaceSleep = 2 * time.Second

// paceWait waits for the route's next slot when it is near, and takes it; when it is further
// off it returns how long the dispatch should wait without one.
func (s *Service) paceWait(ctx context.Context, route Route) (time.Duration, error) {
	q := db.Planned(s.pool)
	now := s.now().UTC()
	next, err := q.PaceAt(ctx, route.PaceKey)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("read the pace of %s: %w", route.PaceKey, err)
	}
	if wait := next.Sub(now); err == nil && wait > maxPaceSleep {
		return wait, nil
	}
	slot, err := q.TakePaceSlot(ctx, db.TakePaceSlotParams{PaceKey: route.PaceKey, Now: now, StepSeconds: 1 / route.PerSecond})
	if err != nil {
		return 0, fmt.Errorf("take a slot of %s: %w", route.PaceKey, err)
	}
	if wait := slot.Sub(now); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return 0, nil
}

// Circuit is the circuit breaker of the Provider a route goes through.
type Circuit interface {
	// Record says whether the Provider took the call (or refused the message itself, which
	// proves it works), or did not take it or did not answer.
	Record(ctx context.Context, taken bool)
}

// Dispatch retries: a provider that answers "later" (429, 5xx) or cannot be reached is tried
// again after 1, 2, 4 … seconds, at most dispatchBackoffCap apart, DefaultDispatchAttempts calls
// in all (Service.SetDispatchAttempts); then the message fails with ErrProviderUnavailable. A
// crash between a provider's answer and the commit of sent leaves the message sending: the next
// attempt calls the provider again, so a message goes out at most that many times
// (docs/transports.md).
const (
	DefaultDispatchAttempts = 8
	dispatchBackoffCap      = time.Minute
)

// Dispatch error codes of Switchboard's own (docs/transports.md).
const (
	ErrProviderUnavailable = "PROVIDER_UNAVAILABLE"
)

// DispatchArgs hands a queued message to its transport.
type DispatchArgs struct {
	MessageID string `json:"messageId"`
}

// Kind names the job kind.
func (DispatchArgs) Kind() string { return "message.dispatch" }

// DispatchWorker sends queued messages.
type DispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	Service *Service
}

// Timeout bounds one dispatch, the provider's answer included (Twilio's client waits 10 s); it
// stays below worker.RescueStuckJobsAfter, so a dispatch whose process died is run again soon
// after.
func (w *DispatchWorker) Timeout(*river.Job[DispatchArgs]) time.Duration { return 25 * time.Second }

// Work runs the dispatch policies, sends the message through its transport and records the
// outcome with its event.
func (w *DispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	return w.Service.dispatch(ctx, job.Args.MessageID)
}

func (s *Service) dispatch(ctx context.Context, id string) error {
	m, err := s.messagesOf(s.pool, id).GetMessageByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read message %s: %w", id, err)
	}
	if m.Status != "queued" && m.Status != "sending" {
		return nil // already handed over: a repeated job must not send twice
	}
	routes, done, err := s.prepare(ctx, m, nil)
	if err != nil || done {
		return err
	}
	routes = pinned(m, routes)
	for i, route := range routes {
		last := i == len(routes)-1
		moved, err := s.dispatchThrough(ctx, &m, route, last)
		if moved || err != nil {
			return err
		}
	}
	return nil
}

// pinned keeps, of a message whose last call's outcome is unknown (it may have been taken: a
// timeout, or a process that died during the call), only the route through the Provider called:
// another Provider could send it a second time (docs/providers.md#failover).
func pinned(m db.Message, routes []Route) []Route {
	if m.Status != "sending" || m.Provider == nil || m.ProviderRefused || len(routes) < 2 {
		return routes
	}
	for _, r := range routes {
		if r.Provider == *m.Provider {
			return []Route{r}
		}
	}
	return routes
}

// dispatchThrough sends m through one of its routes. moved: the message moved on (sent, failed,
// or waits for a retry) or err says why not; otherwise the Provider proved it did not take the
// message, and the next route may (last: there is none, and the message waits or fails).
func (s *Service) dispatchThrough(ctx context.Context, m *db.Message, route Route, last bool) (moved bool, err error) {
	if route.External {
		if int(m.DispatchAttempts) >= s.dispatchAttempts {
			return true, s.fail(ctx, *m, &transport.Failure{Code: ErrProviderUnavailable,
				Message: fmt.Sprintf("The provider did not take the message in %d attempts.", s.dispatchAttempts)})
		}
		if route.PerSecond > 0 {
			wait, err := s.paceWait(ctx, route)
			if err != nil {
				return true, err
			}
			if wait > 0 {
				return true, river.JobSnooze(wait)
			}
		}
		start := db.StartDispatchParams{ID: m.ID, UpdatedAt: s.now().UTC()}
		if route.Provider != "" {
			start.Provider = &route.Provider
		}
		started, err := db.Planned(s.pool).StartDispatch(ctx, start)
		if errors.Is(err, pgx.ErrNoRows) {
			return true, nil // moved on meanwhile
		}
		if err != nil {
			return true, fmt.Errorf("record the dispatch of message %s: %w", m.ID, err)
		}
		*m = db.Message(started)
	}
	out, err := s.outbound(ctx, *m, route)
	if f := transport.AsFailure(err); f != nil {
		return true, s.fail(ctx, *m, f)
	}
	if err != nil {
		return true, err
	}
	res, err := route.Transport.Send(ctx, out)
	tellCircuit(ctx, route, err)
	if err != nil && transport.NotTaken(err) && route.External {
		if e := db.Planned(s.pool).MarkProviderRefused(ctx, m.ID); e != nil {
			return true, fmt.Errorf("record the refusal of message %s: %w", m.ID, e)
		}
		m.ProviderRefused = true
		if !last {
			return false, nil // the next Provider, in this dispatch
		}
	}
	if f := transport.AsFailure(err); f != nil {
		return true, s.fail(ctx, *m, f)
	}
	if err != nil {
		return true, s.later(ctx, *m, err)
	}
	if _, err := s.applyStatus(ctx, StatusChange{MessageID: m.ID, ProviderMessageID: res.ProviderMessageID,
		Status: transport.StatusSent}); err != nil {
		return true, err
	}
	if f, ok := route.Transport.(transport.Follower); ok {
		f.Follow(m.ID, m.Channel)
	}
	return true, nil
}

// tellCircuit tells the route's circuit breaker what the call proved of its Provider: a failure
// for no answer or a refusal about the Provider, else that it works.
func tellCircuit(ctx context.Context, route Route, err error) {
	if route.Circuit == nil {
		return
	}
	f := transport.AsFailure(err)
	route.Circuit.Record(ctx, err == nil || (f != nil && !f.ProviderFault))
}

// prepare runs the dispatch policies on m and picks its route. done: the policies dealt with
// the message (failed it, or risk review holds it), and there is nothing to send. checked holds
// the answers of the policies a batch dispatch asked for the whole batch, by policy index and
// message id.
func (s *Service) prepare(ctx context.Context, m db.Message, checked map[int]map[string]*transport.Failure) (routes []Route, done bool, err error) {
	// A suspended project's queued messages fail; then risk review: a held message waits for
	// its operator, and goes through the other policies once approved.
	if sus, err := s.suspension(ctx, m.Project, m.TestMode); err != nil {
		return nil, false, err
	} else if sus != nil && m.Direction == "outbound" {
		f := suspendedFailure
		return nil, true, s.fail(ctx, m, &f)
	}
	f, held, err := s.review(ctx, m)
	switch {
	case err != nil:
		return nil, false, err
	case f != nil:
		if err := s.fail(ctx, m, f.Failure); err != nil {
			return nil, true, err
		}
		return nil, true, s.afterRefusal(ctx, m, f.suspendAfter, f.suspendWithin)
	case held:
		return nil, true, nil
	}
	for i, p := range s.dispatchPolicies {
		verdicts, asked := checked[i]
		f := verdicts[m.ID]
		if !asked {
			if f, err = p.CheckDispatch(ctx, m); err != nil {
				return nil, false, err
			}
		}
		if f != nil {
			return nil, true, s.fail(ctx, m, f)
		}
	}
	routes, err = s.transports.Routes(ctx, m)
	if f := transport.AsFailure(err); f != nil {
		return nil, true, s.fail(ctx, m, f)
	}
	if err != nil {
		return nil, false, fmt.Errorf("pick the transport of message %s: %w", m.ID, err)
	}
	if len(routes) == 0 {
		return nil, false, fmt.Errorf("pick the transport of message %s: no route", m.ID)
	}
	return routes, false, nil
}

// fail fails m with f, unless a WhatsApp message can fall back to SMS; a recipient's opt-out
// the provider reported is remembered, so later sends fail without calling it.
func (s *Service) fail(ctx context.Context, m db.Message, f *transport.Failure) error {
	// A suspended project's message does not go out on another channel either.
	if f.Code != ErrSendingSuspended {
		if done, err := s.fallBack(ctx, m, f); done || err != nil {
			return err
		}
	}
	if f.Code == ErrUnsubscribed {
		if err := s.SetOptOut(ctx, m.Project, m.TestMode, m.Originator, m.Recipient, true); err != nil {
			return err
		}
	}
	_, err := s.applyStatus(ctx, StatusChange{MessageID: m.ID, Status: transport.StatusFailed, Failure: f})
	return err
}

// later tries the message again after a backoff, or fails it once its attempts are spent.
func (s *Service) later(ctx context.Context, m db.Message, cause error) error {
	var t *transport.Temporary
	providerCode := ""
	if errors.As(cause, &t) {
		providerCode = t.ProviderCode
	}
	if int(m.DispatchAttempts) >= s.dispatchAttempts {
		return s.fail(ctx, m, &transport.Failure{Code: ErrProviderUnavailable, ProviderCode: providerCode,
			Message: fmt.Sprintf("The provider did not take the message in %d attempts.", s.dispatchAttempts)})
	}
	wait := dispatchBackoff(int(m.DispatchAttempts))
	if t != nil && t.RetryAfter > wait {
		wait = min(t.RetryAfter, dispatchBackoffCap)
	}
	if m.DispatchAttempts == 0 {
		// Not a provider call that was counted (the sandbox, or a failure before the call):
		// let the queue's own retries handle it.
		return fmt.Errorf("send message %s: %w", m.ID, cause)
	}
	return river.JobSnooze(wait)
}

// SetDispatchAttempts bounds the calls to a provider for one message (at least 1).
func (s *Service) SetDispatchAttempts(n int) {
	s.dispatchAttempts = max(n, 1)
}

// dispatchBackoff is the wait after the attempt-th call failed for now: 1 s, doubling, capped.
func dispatchBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := time.Second << min(attempt-1, 10)
	return min(d, dispatchBackoffCap)
}

// outbound is what the transport needs of m.
func (s *Service) outbound(ctx context.Context, m db.Message, r Route) (transport.Outbound, error) {
	q := db.Planned(s.pool)
	attachments, err := outboundAttachments(ctx, q, m)
	if err != nil {
		return transport.Outbound{}, err
	}
	out := transport.Outbound{ID: m.ID, Channel: m.Channel, MessageType: m.MessageType, To: m.Recipient, From: m.Originator,
		Text: deref(m.Body), Subject: deref(m.Subject), Attachments: attachments, AccountToken: r.AccountToken,
		StatusCallback: r.StatusCallback, FromName: r.FromName, DKIM: r.DKIM, ReturnPath: r.ReturnPath}
	if r.AccountID != "" {
		out.From = r.AccountID
	}
	if (m.Channel == string(v1alpha1.ChannelMessenger) || m.Channel == string(v1alpha1.ChannelInstagram)) && m.ConversationID != nil {
		// Outside the contact's window the Send API wants a tag, or takes nothing.
		until, err := q.ConversationWindow(ctx, *m.ConversationID)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return transport.Outbound{}, fmt.Errorf("read the window of message %s: %w", m.ID, err)
		}
		out.WindowUntil = until
	}
	if len(m.Content) > 0 {
		var c transport.Content
		if err := json.Unmarshal(m.Content, &c); err != nil {
			return transport.Outbound{}, fmt.Errorf("read content of message %s: %w", m.ID, err)
		}
		out.Content = &c
		if m.MessageType == "template" && m.Channel == string(v1alpha1.ChannelWhatsApp) {
			if out.Template, err = s.outboundTemplate(ctx, m.Project, m.TestMode, &c); err != nil {
				return transport.Outbound{}, err
			}
		}
		if c.ReactTo != "" {
			target, err := q.GetMessageByID(ctx, c.ReactTo)
			if err == nil && target.ProviderMessageID != nil {
				out.ReactToProviderMessageID = *target.ProviderMessageID
			}
		}
	}
	if len(m.Options) > 0 {
		var o Options
		if err := json.Unmarshal(m.Options, &o); err != nil {
			return transport.Outbound{}, fmt.Errorf("read options of message %s: %w", m.ID, err)
		}
		out.VoiceLanguage, out.HTMLBody, out.ReplyTo, out.Headers = o.VoiceLanguage, o.HTMLBody, o.ReplyTo, o.Headers
	}
	return out, nil
}

// UnsubscribeHeaders makes the one-click unsubscribe header fields of a broadcast's email to
// the broadcast recipient recipientID (unsubscribe.Service): ownURL, when not empty, is the
// broadcast's own link.
type UnsubscribeHeaders interface {
	Headers(recipientID, ownURL string) (map[string]string, error)
}

// SetUnsubscribe makes every email of a broadcast carry one-click unsubscribe header fields.
func (s *Service) SetUnsubscribe(h UnsubscribeHeaders) { s.unsubscribe = h }

// SetOptOut records that recipient asked originator to stop (out true), or to start again.
func (s *Service) SetOptOut(ctx context.Context, project string, testMode bool, originator, recipient string, out bool) error {
	q := db.Planned(s.pool)
	var err error
	if out {
		err = q.OptOut(ctx, db.OptOutParams{Project: project, TestMode: testMode, Originator: originator, Recipient: recipient,
			CreatedAt: s.now().UTC()})
	} else {
		err = q.OptIn(ctx, db.OptInParams{Project: project, TestMode: testMode, Originator: originator, Recipient: recipient})
	}
	if err != nil {
		return fmt.Errorf("record opt-out: %w", err)
	}
	return nil
}
