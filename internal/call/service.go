package call

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/agent"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Carrier places and ends calls through one telephony provider account.
type Carrier interface {
	// Place dials p.To from p.From and hands the call to the relay once answered; it returns
	// the provider's id of the call.
	Place(ctx context.Context, p Placement) (string, error)
	// Hangup ends an answered call, or cancels one not answered yet.
	Hangup(ctx context.Context, providerCallID string, answered bool) error
	// Say reads text out in language on the call, then hangs up (a voicemail message).
	Say(ctx context.Context, providerCallID, text, language string) error
	// Status asks the provider where the call is (the sweeper's reconciliation).
	Status(ctx context.Context, providerCallID string) (Progress, error)
}

// Carriers finds the carrier of a sender's calls.
type Carriers interface {
	// VoiceCarrier is the carrier of the sender's voice channel and its Provider's
	// namespace/name; an error a caller should see is an *apperror.Error.
	VoiceCarrier(ctx context.Context, snd *v1alpha1.Sender) (Carrier, string, error)
	// CarrierOf is the carrier of the Provider namespace/name.
	CarrierOf(ctx context.Context, provider string) (Carrier, error)
}

// Placement is a call to place.
type Placement struct {
	CallID   string
	To, From string
	Speech   Speech
	// TimeLimit is how long the provider lets the call last.
	TimeLimit time.Duration
	// MachineDetection asks the provider to tell an answering machine from a person.
	MachineDetection bool
}

// Admission is what a call must pass of the sending policies (message.Service).
type Admission interface {
	// CheckCall refuses a suspended project (403), before the call's transaction.
	CheckCall(ctx context.Context, project string, testMode bool) error
	// TakeCall takes from the project's daily voice ceiling inside tx (429).
	TakeCall(ctx context.Context, tx pgx.Tx, project string, testMode bool) error
	// ReviewCall is the risk review's refusal of an outbound call ("" to place it).
	ReviewCall(ctx context.Context, callID, project string, testMode bool, to, text string) (string, error)
}

// Speaker answers a caller's prompts (agent.Runtime).
type Speaker interface {
	Speak(ctx context.Context, t agent.VoiceTurn) (agent.VoiceAnswer, error)
	HasKnowledge(ctx context.Context, a *v1alpha1.Agent) (bool, error)
}

// Service keeps calls.
type Service struct {
	Pool *pgxpool.Pool
	// Reader reads Senders, Agents, Projects and PriceLists (the informer cache).
	Reader   client.Reader
	Events   *delivery.Service
	Carriers Carriers
	Admit    Admission
	Speaker  Speaker
	// Prices prices calls (the PriceList's voice prices); nil charges nothing.
	Prices *billing.Prices
	// Minute is a minute of maxDurationMinutes (tests shorten it); 0 is a minute.
	Minute time.Duration
	// TurnTimeout bounds one answer (DefaultTurnTimeout when 0).
	TurnTimeout time.Duration
	// Sandbox places test keys' calls (and those of senders whose transport is sandbox).
	Sandbox *Sandbox
	Clock   func() time.Time
	Log     logr.Logger

	sessions sync.Map // call id → *session held by this process
}

// Input is POST /v1/calls.
type Input struct {
	To                 string
	Greeting           *string
	Language           *string
	MaxDurationMinutes *float64
	Metadata           map[string]string
	SenderID           string
}

// Limits of a call's settings.
const (
	MaxGreeting        = 1000
	MaxMetadataEntries = 50
	MaxMetadataValue   = 500
	MaxDurationMinutes = 240
	// DefaultMaxDurationMinutes holds a call whose agent sets no maxCallDurationMinutes.
	DefaultMaxDurationMinutes = 30
)

var (
	e164        = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	languageTag = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$`)
)

// Create places an outbound call answered by the voice agent of the sender.
func (s *Service) Create(ctx context.Context, key apikey.Key, in Input) (Call, error) {
	if err := in.validate(); err != nil {
		return Call{}, err
	}
	project, test := key.Project, key.TestMode()
	snd, a, err := s.voiceSender(ctx, project, in.SenderID)
	if err != nil {
		return Call{}, err
	}
	speech := SpeechOf(a, deref(in.Language), deref(in.Greeting))
	id, err := randid.Name("call_", 20)
	if err != nil {
		return Call{}, err
	}
	maxSeconds := int32(maxMinutes(a, in.MaxDurationMinutes) * 60)
	metadata, err := json.Marshal(orEmpty(in.Metadata))
	if err != nil {
		return Call{}, err
	}
	row := db.InsertCallParams{ID: id, Project: project, TestMode: test, Sender: snd.Name, Agent: a.Name, Direction: Outbound,
		FromNumber: snd.Spec.PhoneNumber, ToNumber: in.To, Status: StatusQueued, Greeting: nonEmpty(speech.Greeting),
		Language: nonEmpty(speech.Language), MaxDurationSeconds: maxSeconds, Metadata: metadata, CreatedAt: s.now()}

	carrier, provider, err := s.carrier(ctx, snd, test)
	if err != nil {
		return Call{}, err
	}
	row.Provider = provider
	if refused, err := s.Admit.ReviewCall(ctx, id, project, test, in.To, speech.Greeting); err != nil {
		return Call{}, err
	} else if refused != "" {
		// A call is never held for review: the review's refusal fails it (spec: Risk review).
		return s.refused(ctx, row, EndRiskRejected, refused)
	}
	var price billing.Micros
	var acct billing.Account
	priced := false
	if !test {
		if price, acct, priced, err = s.minutePrice(ctx, project, in.To); err != nil {
			return Call{}, err
		}
	}
	if err := s.Admit.CheckCall(ctx, project, test); err != nil {
		return Call{}, err
	}
	// Nothing inside the transaction reads through the pool: a burst of calls holding every
	// connection must not wait on one more.
	var c db.Call
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if err := s.Admit.TakeCall(ctx, tx, project, test); err != nil {
			return err
		}
		if priced && price > 0 {
			// The first minute is set aside; the call is charged what it lasted when it ends.
			if err := billing.Reserve(ctx, tx, acct, price, "call "+id, s.now()); err != nil {
				if e := apperror.As(err); e != nil && e.Code == "insufficient_balance" {
					return apperror.New(apperror.PaymentRequired, "insufficient_balance",
						"The project's balance cannot pay for a minute of this call; add credit (switchboard balance credit) and call again.")
				}
				return err
			}
			row.ReservedMicros = int64(price)
		}
		var err error
		c, err = db.Planned(tx).InsertCall(ctx, row)
		return err
	})
	if err != nil {
		return Call{}, err
	}
	sid, err := carrier.Place(ctx, Placement{CallID: c.ID, To: c.ToNumber, From: c.FromNumber, Speech: speech,
		TimeLimit: s.timeLimit(c), MachineDetection: a.Spec.Voice.VoicemailAction != ""})
	if err != nil {
		s.Log.Info("placing a call failed", "call", c.ID, "provider", provider, "error", err.Error())
		c, _, endErr := s.end(context.WithoutCancel(ctx), c.ID, ending{status: StatusFailed, reason: EndFailed, message: placeError(err)})
		if endErr != nil {
			return Call{}, endErr
		}
		return view(c, nil), nil
	}
	if c, err = s.dialed(ctx, c.ID, sid); err != nil {
		return Call{}, err
	}
	return view(c, nil), nil
}

// dialed records that the provider took the call (its id), with call.initiated. A call that
// moved on meanwhile (a fast provider's callbacks) keeps its state and gets the id.
func (s *Service) dialed(ctx context.Context, id, providerCallID string) (db.Call, error) {
	var c db.Call
	err := pgx.BeginFunc(context.WithoutCancel(ctx), s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		var err error
		c, err = q.DialedCall(ctx, db.DialedCallParams{ID: id, ProviderCallID: &providerCallID, Now: s.now()})
		if errors.Is(err, pgx.ErrNoRows) {
			c, err = q.CallByID(ctx, id)
			return err
		}
		if err != nil {
			return fmt.Errorf("record the dialing of call %s: %w", id, err)
		}
		_, err = s.Events.Enqueue(ctx, tx, event(EventInitiated, c, false))
		return err
	})
	return c, err
}

// refused records a call that was never placed, failed with reason, with call.failed.
func (s *Service) refused(ctx context.Context, row db.InsertCallParams, reason, message string) (Call, error) {
	now := s.now()
	row.Status, row.EndReason, row.ErrorMessage, row.Finished = StatusFailed, &reason, &message, &now
	var c db.Call
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		var err error
		if c, err = q.InsertCall(ctx, row); err != nil {
			return err
		}
		zero, cost := int32(0), int64(0)
		c.DurationSeconds = &zero
		if err := q.SettleCall(ctx, db.SettleCallParams{ID: c.ID, CostMicros: &cost, Now: &now}); err != nil {
			return err
		}
		c.CostMicros = &cost
		_, err = s.Events.Enqueue(ctx, tx, event(EventFailed, c, true))
		return err
	})
	return view(c, nil), err
}

// own is the key's call id: 404 for another project's, or another mode's.
func (s *Service) own(ctx context.Context, key apikey.Key, id string) (db.Call, error) {
	c, err := db.Planned(s.Pool).GetCall(ctx, db.GetCallParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, apperror.NotFoundf("No call %s.", id)
	}
	if err != nil {
		return c, fmt.Errorf("read call %s: %w", id, err)
	}
	return c, nil
}

// Get returns a call with its transcript.
func (s *Service) Get(ctx context.Context, key apikey.Key, id string) (Call, error) {
	c, err := s.own(ctx, key, id)
	if err != nil {
		return Call{}, err
	}
	turns, err := db.Planned(s.Pool).CallTurns(ctx, c.ID)
	if err != nil {
		return Call{}, fmt.Errorf("read the transcript of call %s: %w", id, err)
	}
	if turns == nil {
		turns = []db.CallTurn{}
	}
	return view(c, turns), nil
}

// Filter narrows a call list.
type Filter struct {
	Direction, Status string
	// Before is the cursor: the list goes on after this call.
	BeforeTime *time.Time
	BeforeID   string
	Limit      int32
}

// List returns the key's calls, the most recent first, without transcripts.
func (s *Service) List(ctx context.Context, key apikey.Key, f Filter) ([]Call, error) {
	var errs []apperror.FieldError
	if f.Direction != "" && f.Direction != Inbound && f.Direction != Outbound {
		errs = append(errs, apperror.FieldError{Path: "direction", Message: "must be inbound or outbound"})
	}
	if f.Status != "" && !knownStatus[f.Status] {
		errs = append(errs, apperror.FieldError{Path: "status", Message: "must be one of queued, ringing, in_progress, completed, failed, busy, no_answer, canceled"})
	}
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(errs...)
	}
	rows, err := db.Planned(s.Pool).ListCalls(ctx, db.ListCallsParams{Project: key.Project, TestMode: key.TestMode(),
		Direction: nonEmpty(f.Direction), Status: nonEmpty(f.Status), BeforeTime: f.BeforeTime, BeforeID: nonEmpty(f.BeforeID),
		MaxRows: f.Limit})
	if err != nil {
		return nil, fmt.Errorf("list calls of %s: %w", key.Project, err)
	}
	out := make([]Call, len(rows))
	for i, c := range rows {
		out[i] = view(c, nil)
	}
	return out, nil
}

var knownStatus = map[string]bool{StatusQueued: true, StatusRinging: true, StatusInProgress: true, StatusCompleted: true,
	StatusFailed: true, StatusBusy: true, StatusNoAnswer: true, StatusCanceled: true}

// Hangup ends a ringing or answered call (POST /v1/calls/{id}/hangup): the provider is told,
// and the call ends now with endReason api_hangup (the provider's report, which follows,
// changes nothing). A call in another status is 409.
func (s *Service) Hangup(ctx context.Context, key apikey.Key, id string) (Call, error) {
	q := db.Planned(s.Pool)
	c, err := s.own(ctx, key, id)
	if err != nil {
		return Call{}, err
	}
	if c.Status != StatusRinging && c.Status != StatusInProgress {
		return Call{}, apperror.New(apperror.Conflict, "call_not_active",
			fmt.Sprintf("Call %s is %s: only a ringing or in-progress call can be hung up.", id, c.Status))
	}
	if _, err := q.SetCallEnding(ctx, db.SetCallEndingParams{ID: id, Ending: ptr(EndAPI), Now: s.now()}); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Call{}, fmt.Errorf("record the hangup of call %s: %w", id, err)
	}
	if c.ProviderCallID != nil {
		carrier, err := s.carrierOf(ctx, c.Provider)
		if err != nil {
			return Call{}, err
		}
		if err := carrier.Hangup(ctx, *c.ProviderCallID, c.Status == StatusInProgress); err != nil {
			return Call{}, apperror.New(apperror.Unavailable, "provider_unavailable",
				"The telephony provider did not take the hangup; try again: "+placeError(err))
		}
	}
	status := StatusCompleted
	if c.Status == StatusRinging {
		status = StatusCanceled
	}
	ended, _, err := s.end(ctx, id, ending{status: status, reason: EndAPI})
	if err != nil {
		return Call{}, err
	}
	return view(ended, nil), nil
}

// carrier is the carrier of the sender's calls: the sandbox for test keys and sandboxed senders.
func (s *Service) carrier(ctx context.Context, snd *v1alpha1.Sender, test bool) (Carrier, string, error) {
	if test || snd.Spec.Transport == v1alpha1.TransportSandbox {
		return s.Sandbox, ProviderSandbox, nil
	}
	if s.Carriers == nil {
		return nil, "", apperror.New(apperror.Invalid, "invalid_request", "This installation places no live calls.")
	}
	return s.Carriers.VoiceCarrier(ctx, snd)
}

func (s *Service) carrierOf(ctx context.Context, provider string) (Carrier, error) {
	if provider == ProviderSandbox {
		return s.Sandbox, nil
	}
	return s.Carriers.CarrierOf(ctx, provider)
}

// voiceSender is the sender a call goes from (id, else the project's default sender) and the
// agent answering on it: the sender needs voice on a phone number, the agent voice enabled.
func (s *Service) voiceSender(ctx context.Context, project, id string) (*v1alpha1.Sender, *v1alpha1.Agent, error) {
	var snd *v1alpha1.Sender
	if id != "" {
		var err error
		if snd, err = kubewrite.Read[v1alpha1.Sender](ctx, s.Reader, project, id, "sender"); err != nil {
			return nil, nil, err
		}
	} else {
		var list v1alpha1.SenderList
		if err := s.Reader.List(ctx, &list, client.InNamespace(project)); err != nil {
			return nil, nil, fmt.Errorf("list senders of %s: %w", project, err)
		}
		if snd = v1alpha1.DefaultSender(list.Items); snd == nil {
			return nil, nil, apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: "is required: the project has no default sender"})
		}
	}
	if snd.Spec.PhoneNumber == "" || snd.Spec.Voice == nil || !snd.Spec.Voice.Enabled {
		return nil, nil, apperror.InvalidFields(apperror.FieldError{Path: "senderId",
			Message: fmt.Sprintf("sender %s has no voice-enabled phone number (enableVoice)", snd.Name)})
	}
	a, err := agent.AnsweringAgent(ctx, s.Reader, project, snd.Name)
	if err != nil {
		return nil, nil, err
	}
	if a == nil || !a.Spec.Enabled || a.Spec.Voice == nil || !a.Spec.Voice.Enabled {
		return nil, nil, apperror.InvalidFields(apperror.FieldError{Path: "senderId",
			Message: fmt.Sprintf("sender %s has no enabled agent with voice enabled to hold the call", snd.Name)})
	}
	return snd, a, nil
}

// minutePrice is what a started minute of a call to number costs project, with the account
// that pays it; priced is false when nothing prices it.
func (s *Service) minutePrice(ctx context.Context, project, number string) (billing.Micros, billing.Account, bool, error) {
	if s.Prices == nil {
		return 0, billing.Account{}, false, nil
	}
	list, err := s.Prices.For(ctx, project)
	if err != nil || list == nil {
		return 0, billing.Account{}, false, err
	}
	q, ok, err := billing.QuoteOf(list, string(v1alpha1.ChannelVoice), number, "")
	if err != nil || !ok {
		return 0, billing.Account{}, false, err
	}
	p, err := kubewrite.ProjectOf(ctx, s.Reader, project)
	if err != nil {
		return 0, billing.Account{}, false, err
	}
	acct, err := s.Prices.Account(ctx, project, p, list)
	return q.Price, acct, err == nil, err
}

// timeLimit is how long the provider lets c last: its cap and a little more, so that the
// relay's own timer, which says goodbye, ends it first.
func (s *Service) timeLimit(c db.Call) time.Duration {
	return s.maxDuration(c) + 30*time.Second
}

func (s *Service) maxDuration(c db.Call) time.Duration {
	minute := s.Minute
	if minute <= 0 {
		minute = time.Minute
	}
	return time.Duration(c.MaxDurationSeconds) * minute / 60
}

func maxMinutes(a *v1alpha1.Agent, asked *float64) float64 {
	if asked != nil {
		return *asked
	}
	if a.Spec.Voice != nil && a.Spec.Voice.MaxCallDurationMinutes != nil {
		return float64(*a.Spec.Voice.MaxCallDurationMinutes)
	}
	return DefaultMaxDurationMinutes
}

func (in Input) validate() error {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	switch {
	case strings.TrimSpace(in.To) == "":
		bad("to", "is required")
	case !e164.MatchString(in.To):
		bad("to", "must be a phone number in E.164 format, such as +14155551234")
	}
	if in.Greeting != nil && len([]rune(*in.Greeting)) > MaxGreeting {
		bad("greeting", fmt.Sprintf("must be at most %d characters", MaxGreeting))
	}
	if in.Language != nil && *in.Language != "auto" && !languageTag.MatchString(*in.Language) {
		bad("language", "must be a BCP-47 language tag such as en, es or pt-BR, or auto")
	}
	if m := in.MaxDurationMinutes; m != nil && (*m < 1 || *m > MaxDurationMinutes || *m != float64(int(*m))) {
		bad("maxDurationMinutes", fmt.Sprintf("must be a whole number of minutes from 1 to %d", MaxDurationMinutes))
	}
	if len(in.Metadata) > MaxMetadataEntries {
		bad("metadata", fmt.Sprintf("must have at most %d entries", MaxMetadataEntries))
	}
	for k, v := range in.Metadata {
		if k == "" || len(k) > 40 || len(v) > MaxMetadataValue {
			bad("metadata."+k, fmt.Sprintf("keys must be 1 to 40 characters and values at most %d", MaxMetadataValue))
		}
	}
	if len(errs) > 0 {
		return apperror.InvalidFields(errs...)
	}
	return nil
}

// placeError is what a failed placement says, without the provider's credentials (the
// transports' errors carry none).
func placeError(err error) string {
	if e := apperror.As(err); e != nil && e.Kind != apperror.Internal {
		return e.Message
	}
	return err.Error()
}

func ptr[T any](v T) *T { return &v }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// Through is id when call id went through provider (namespace/name), "" otherwise: a provider's
// callback moves only its own calls.
func (s *Service) Through(ctx context.Context, id, provider string) (string, error) {
	if id == "" {
		return "", nil
	}
	c, err := db.Planned(s.Pool).CallByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && c.Provider != provider) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read call %s: %w", id, err)
	}
	return c.ID, nil
}
