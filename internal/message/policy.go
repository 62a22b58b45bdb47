package message

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// The policies of the send path are ordered lists of small checks (DESIGN.md §3). A new rule
// (risk review, sending limits, balance, email pre-flight) is one type and one entry in a list
// that defaultPolicies builds.
//
//   - AcceptPolicy runs before a message is accepted: its error is the answer to the send, and
//     nothing is stored.
//   - DispatchPolicy runs when a worker takes the message, before its transport is called: a
//     Failure fails the message with its errorCode, and the provider is never called.
//   - FallbackPolicy runs before a WhatsApp message its transport refused goes out as SMS
//     (when the send asked for the checked fallback): a Failure fails it instead.

// AcceptPolicy refuses a message before it is accepted.
type AcceptPolicy interface {
	CheckAccept(ctx context.Context, o *Outbound) error
}

// DispatchPolicy fails a message before its transport is called; it returns nil to let it go.
type DispatchPolicy interface {
	CheckDispatch(ctx context.Context, m db.Message) (*transport.Failure, error)
}

// BatchDispatchPolicy is a DispatchPolicy that can check a batch dispatch's messages at once:
// one answer per message, in order, each what CheckDispatch would say.
type BatchDispatchPolicy interface {
	DispatchPolicy
	CheckDispatchAll(ctx context.Context, ms []db.Message) ([]*transport.Failure, error)
}

// FallbackPolicy fails a message before it falls back from WhatsApp to SMS.
type FallbackPolicy interface {
	CheckFallback(ctx context.Context, m db.Message, snd *v1alpha1.Sender) (*transport.Failure, error)
}

// Carries says whether channel can carry messageType to the recipient (a transport's own
// limits, such as Telegram's lack of templates or where MMS goes); the registry answers it.
type Carries func(channel, messageType, to string) bool

// defaultPolicies are the lists in the order they run.
func (s *Service) defaultPolicies(carries Carries) {
	s.acceptPolicies = []AcceptPolicy{
		// A suspended project sends nothing: before anything else is checked.
		notSuspended{s: s},
		// A template on a channel other than WhatsApp goes as its rendered text: before the
		// channel's own limits are checked.
		templateResolved{reader: s.reader},
		channelCarries{carries: carries},
		transportAvailable{transports: s.transports},
		whatsAppWindow{windows: s, now: s.now},
	}
	s.dispatchPolicies = []DispatchPolicy{
		optedOut{pool: s},
	}
	s.fallbackPolicies = []FallbackPolicy{
		smsConnectionOn{},
		tenDLCApproved{}, // SetTenDLC gives it the registrations
	}
}

// channelCarries refuses a message type the channel's transport cannot carry, naming the channel.
type channelCarries struct{ carries Carries }

func (p channelCarries) CheckAccept(_ context.Context, o *Outbound) error {
	if p.carries == nil || p.carries(o.Channel, o.MessageType, o.To) {
		return nil
	}
	return apperror.InvalidFields(apperror.FieldError{Path: "messageType",
		Message: fmt.Sprintf("%s cannot carry %s messages to %s", o.Channel, o.MessageType, o.To)})
}

// transportAvailable refuses a live message that no transport could carry (no Provider
// serves the sender's channel), rather than accepting it only to fail it.
type transportAvailable struct{ transports Transports }

func (p transportAvailable) CheckAccept(ctx context.Context, o *Outbound) error {
	if p.transports == nil || o.sender == nil {
		return nil
	}
	return p.transports.Available(ctx, o.TestMode, o.sender, o.Channel, o.strict)
}

// windowReader reads when a conversation's WhatsApp window closes (nil: never opened).
type windowReader interface {
	whatsAppWindow(ctx context.Context, conversation string) (*time.Time, error)
}

// whatsAppWindow refuses a free-form WhatsApp message to a contact who has not written in the
// last 24 hours; templates open conversations outside the window (spec: What the service does 3).
type whatsAppWindow struct {
	windows windowReader
	now     func() time.Time
}

func (p whatsAppWindow) CheckAccept(ctx context.Context, o *Outbound) error {
	if o.Channel != string(v1alpha1.ChannelWhatsApp) || o.MessageType == "template" {
		return nil
	}
	until, err := p.windows.whatsAppWindow(ctx, o.ConversationID())
	if err != nil {
		return err
	}
	if until != nil && until.After(p.now()) {
		return nil
	}
	e := apperror.New(apperror.Invalid, "whatsapp_window_closed",
		"The contact has not written in the last 24 hours, so WhatsApp allows only template messages; send a template (messageType template) to start the conversation.")
	e.Details = map[string]any{"channel": "whatsapp", "windowExpiresAt": until}
	return e
}

func (s *Service) whatsAppWindow(ctx context.Context, conversation string) (*time.Time, error) {
	until, err := db.Planned(s.pool).ConversationWindow(ctx, conversation)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read conversation window: %w", err)
	}
	return until, nil
}

// EmailPreflight runs the spec's email pre-flight on a recipient (emailcheck.Checker): it
// returns the errorCode to fail the message with, or "". An unsubscribe on the suppression list
// refuses the mail only when refuseUnsubscribed is set; other entries refuse it always.
type EmailPreflight interface {
	Preflight(ctx context.Context, project string, testMode bool, address string, refuseUnsubscribed bool) (code, message string, err error)
}

// unsubscribeScopes reads whether a project's unsubscribes refuse single sends too.
type unsubscribeScopes interface {
	unsubscribesRefuseAll(ctx context.Context, project string) (bool, error)
}

// emailPreflight fails an email to a malformed address, a suppressed one, or a domain that
// takes no mail, before the relay is asked. An unsubscribe refuses a broadcast's mail, and a
// single send only when the project's spec.email.unsubscribeScope is all: providers tell
// marketing from transactional mail, and an unsubscribe from the one must not stop the other.
type emailPreflight struct {
	checks EmailPreflight
	scopes unsubscribeScopes
}

func (p emailPreflight) CheckDispatch(ctx context.Context, m db.Message) (*transport.Failure, error) {
	if m.Channel != string(v1alpha1.ChannelEmail) {
		return nil, nil
	}
	refuseUnsubscribed := m.BroadcastContactID != nil
	if !refuseUnsubscribed {
		all, err := p.scopes.unsubscribesRefuseAll(ctx, m.Project)
		if err != nil {
			return nil, err
		}
		refuseUnsubscribed = all
	}
	code, msg, err := p.checks.Preflight(ctx, m.Project, m.TestMode, m.Recipient, refuseUnsubscribed)
	if err != nil || code == "" {
		return nil, err
	}
	return &transport.Failure{Code: code, Message: msg}, nil
}

// SetEmailPreflight adds the email pre-flight to the dispatch policies.
func (s *Service) SetEmailPreflight(checks EmailPreflight) {
	s.dispatchPolicies = append(s.dispatchPolicies, emailPreflight{checks: checks, scopes: s})
}

// unsubscribesRefuseAll reads the project's spec.email.unsubscribeScope (from the informer's
// cache): true when its unsubscribes refuse single sends too.
func (s *Service) unsubscribesRefuseAll(ctx context.Context, project string) (bool, error) {
	p, err := s.project(ctx, project)
	if err != nil {
		return false, err
	}
	return p.UnsubscribesRefuseAll(), nil
}

// ErrUnsubscribed is the errorCode of a message to a recipient who asked the number to stop.
const ErrUnsubscribed = "RECIPIENT_UNSUBSCRIBED"

// optOutReader says whether a recipient asked a number to stop.
type optOutReader interface {
	optedOut(ctx context.Context, m db.Message) (bool, error)
	// optedOutAll answers optedOut for each of ms, in one read a project and mode.
	optedOutAll(ctx context.Context, ms []db.Message) ([]bool, error)
}

// optedOut fails an SMS to a recipient who replied STOP to its number: the provider would
// refuse it (Twilio's 21610) or, worse, deliver it against the recipient's wish. STOP is a
// messaging keyword: calls from the number are not affected.
type optedOut struct{ pool optOutReader }

func (p optedOut) CheckDispatch(ctx context.Context, m db.Message) (*transport.Failure, error) {
	if !smsChannel(m.Channel) {
		return nil, nil
	}
	out, err := p.pool.optedOut(ctx, m)
	if err != nil || !out {
		return nil, err
	}
	f := unsubscribed
	return &f, nil
}

// CheckDispatchAll implements BatchDispatchPolicy.
func (p optedOut) CheckDispatchAll(ctx context.Context, ms []db.Message) ([]*transport.Failure, error) {
	var sms []db.Message
	var at []int
	for i, m := range ms {
		if smsChannel(m.Channel) {
			sms, at = append(sms, m), append(at, i)
		}
	}
	fs := make([]*transport.Failure, len(ms))
	if len(sms) == 0 {
		return fs, nil
	}
	out, err := p.pool.optedOutAll(ctx, sms)
	if err != nil {
		return nil, err
	}
	for j, o := range out {
		if o {
			f := unsubscribed
			fs[at[j]] = &f
		}
	}
	return fs, nil
}

var unsubscribed = transport.Failure{Code: ErrUnsubscribed,
	Message: "The recipient replied STOP to this number; they receive no messages from it until they reply START."}

func smsChannel(channel string) bool {
	return channel == string(v1alpha1.ChannelSMS) || channel == string(v1alpha1.ChannelSMSOneway)
}

func (s *Service) optedOut(ctx context.Context, m db.Message) (bool, error) {
	out, err := db.Planned(s.pool).IsOptedOut(ctx, db.IsOptedOutParams{Project: m.Project, TestMode: m.TestMode,
		Originator: m.Originator, Recipient: m.Recipient})
	if err != nil {
		return false, fmt.Errorf("read opt-outs: %w", err)
	}
	return out, nil
}

func (s *Service) optedOutAll(ctx context.Context, ms []db.Message) ([]bool, error) {
	type scope struct {
		project  string
		testMode bool
	}
	type pair struct{ originator, recipient string }
	asked := map[scope]*db.OptedOutAmongParams{}
	var order []scope
	for _, m := range ms {
		k := scope{m.Project, m.TestMode}
		p := asked[k]
		if p == nil {
			p = &db.OptedOutAmongParams{Project: m.Project, TestMode: m.TestMode}
			asked[k], order = p, append(order, k)
		}
		p.Originators, p.Recipients = append(p.Originators, m.Originator), append(p.Recipients, m.Recipient)
	}
	stopped := map[scope]map[pair]bool{}
	for _, k := range order {
		rows, err := db.Planned(s.pool).OptedOutAmong(ctx, *asked[k])
		if err != nil {
			return nil, fmt.Errorf("read opt-outs: %w", err)
		}
		stopped[k] = map[pair]bool{}
		for _, r := range rows {
			stopped[k][pair{r.Originator, r.Recipient}] = true
		}
	}
	out := make([]bool, len(ms))
	for i, m := range ms {
		out[i] = stopped[scope{m.Project, m.TestMode}][pair{m.Originator, m.Recipient}]
	}
	return out, nil
}

// Failures of a checked fallback (spec: States/Message, the v2 rows).
var (
	smsInactive = transport.Failure{Code: "CHANNEL_INACTIVE",
		Message: "WhatsApp could not deliver the message and the fallback to SMS is off: the sender's SMS connection is switched off."}
	tenDLCRequired = transport.Failure{Code: "TEN_DLC_REQUIRED",
		Message: "WhatsApp could not deliver the message, and SMS to a +1 number needs an approved 10DLC campaign."}
)

// smsConnectionOn fails a fallback when the sender's SMS connection is switched off.
type smsConnectionOn struct{}

func (smsConnectionOn) CheckFallback(_ context.Context, _ db.Message, snd *v1alpha1.Sender) (*transport.Failure, error) {
	if contains(snd.SendableChannels(), v1alpha1.ChannelSMS) {
		return nil, nil
	}
	f := smsInactive
	return &f, nil
}
