// Package message is the lifecycle core of messages. A send takes ordered steps (its thread, its
// fields, its sender, its channel, the accept policies) and is accepted in one Postgres
// transaction (Accept: the message, its idempotency key, its message.queued event and its
// dispatch job), so an accepted message is never lost; a broadcast hands Accept many at once. A
// worker then runs the dispatch policies and hands the message to the transport the registry
// picks (Transports), and every later change (the dispatcher's, the sandbox's, a provider's
// callback) goes through ApplyStatus, each with its event in the same transaction. Inbound
// messages arrive through Receive.
package message

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/index"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/retention"
	"github.com/switchboard-io/switchboard/internal/risk"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/urlcheck"
)

// Limits of a send's fields.
const (
	maxTextLength    = 4096
	maxSubjectLength = 998
	maxKeyLength     = 255
)

// Request is a send as a client asked for it, before validation: the fields of POST
// /v1/messages and /v2/messages in the domain's terms (the wire adapters in httpapi fill it).
// A nil field was not given.
type Request struct {
	To, Channel, MessageType, Text *string
	Content                        *transport.Content
	Subject, HTMLBody, ReplyTo     *string
	Fallback                       *bool
	VoiceLanguage                  *string
	Metadata                       map[string]string
	IdempotencyKey                 *string
	Attachments                    []AttachmentInput

	// Who sends, first that applies: the sender of ConversationID's thread (a reply), the
	// sender with address From, the sender SenderID, the project's default sender.
	ConversationID *string
	From           *string
	SenderID       string

	// Strict applies the rules of the current generation (spec: Behaviour differences in v2):
	// only active connections are picked and a missing one is 409 no_channel with what to
	// connect, contradictions between fields are 400 whatever the senders have, bare digits are
	// a chat id and never guessed to be a number, and a WhatsApp-to-SMS fallback first checks
	// that SMS is on and, for +1 numbers, 10DLC.
	Strict bool
}

// Options are a send's settings that are not content, stored with the message (the json tags
// are the stored form).
type Options struct {
	HTMLBody        string `json:"htmlBody,omitempty"`
	ReplyTo         string `json:"replyTo,omitempty"`
	FallbackEnabled bool   `json:"fallbackEnabled"`
	// FallbackChecked makes a fallback to SMS check first that SMS is on and, for +1, 10DLC
	// (Request.Strict).
	FallbackChecked bool   `json:"fallbackChecked,omitempty"`
	VoiceLanguage   string `json:"voiceLanguage,omitempty"`
	// EmailAuth is what the checks of an inbound mail found (SPF, DKIM, DMARC).
	EmailAuth *transport.EmailAuth `json:"emailAuth,omitempty"`
	// Headers are header fields an outbound email carries besides its own: a broadcast's
	// List-Unsubscribe and List-Unsubscribe-Post.
	Headers map[string]string `json:"headers,omitempty"`
	// Mirrored says the message came from the WhatsApp Business app of a coexistence number
	// (history, or echo of one the business sent from the app): kept, never counted or announced.
	Mirrored string `json:"mirrored,omitempty"`
}

var languageTag = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)

// options validates and collects a send's options; fallback to SMS is on unless turned off.
func options(in Request) (Options, []apperror.FieldError) {
	var errs []apperror.FieldError
	o := Options{FallbackEnabled: in.Fallback == nil || *in.Fallback, FallbackChecked: in.Strict}
	if in.HTMLBody != nil {
		o.HTMLBody = *in.HTMLBody
	}
	if in.ReplyTo != nil {
		if !addr.IsEmail(*in.ReplyTo) {
			errs = append(errs, apperror.FieldError{Path: "replyTo", Message: "must be an email address"})
		}
		o.ReplyTo = *in.ReplyTo
	}
	if in.VoiceLanguage != nil {
		if !languageTag.MatchString(*in.VoiceLanguage) {
			errs = append(errs, apperror.FieldError{Path: "voiceLanguage", Message: "must be a language tag such as en-US"})
		}
		o.VoiceLanguage = *in.VoiceLanguage
	}
	return o, errs
}

// Service sends and reads messages.
type Service struct {
	pool       *pgxpool.Pool
	reader     client.Reader
	deliveries *delivery.Service
	queue      *river.Client[pgx.Tx]
	transports Transports
	now        func() time.Time
	// dispatchAttempts bounds the calls to a provider for one message.
	dispatchAttempts int

	groups acceptGroups
	// receipts tells providers about reads and typing; nil: no provider is told.
	receipts Receipts
	// mediaBase is the installation's public URL, for the mediaUrl of kept media.
	mediaBase string
	// prices prices live sends and finds the balance they are paid from; nil charges nothing.
	prices *billing.Prices
	// risk reviews sms, sms_oneway, email and voice sends; nil reviews nothing.
	risk *risk.Policies
	// urls verifies the URLs of live sends; nil verifies none.
	urls *urlcheck.Service
	// suspended caches projects' sending suspensions; supportURL is where a suspended project
	// is sent.
	suspended  suspensions
	supportURL string

	// unsubscribe makes the one-click unsubscribe header fields of broadcast email; nil adds
	// none.
	unsubscribe UnsubscribeHeaders
	// inboundHook is told of each inbound message in its transaction (agents); nil: none.
	inboundHook InboundHook

	// follower moves broadcast recipients with their messages; nil when nothing follows.
	follower BulkFollower
	// statuses batches the dispatcher's status changes; nil applies each on its own.
	statuses *StatusBatcher

	acceptPolicies   []AcceptPolicy
	dispatchPolicies []DispatchPolicy
	fallbackPolicies []FallbackPolicy

	// retention is how long messages and idempotency keys are kept: older ones are not shown
	// (their partitions are dropped by the retention job).
	retention retention.Policy
	// partitions names the messages' partitions for statements that address them (messagesIn).
	partitions *partition.Catalog
}

// SetRetention sets how long messages and idempotency keys are kept (retention.Default unless
// set).
func (s *Service) SetRetention(p retention.Policy) { s.retention = p }

// NewService returns a Service that sends through transports; carries says which message types
// each channel's transport can carry (nil: all).
func NewService(pool *pgxpool.Pool, reader client.Reader, deliveries *delivery.Service, queue *river.Client[pgx.Tx],
	transports Transports, carries Carries) *Service {
	s := &Service{pool: pool, reader: reader, deliveries: deliveries, queue: queue, transports: transports, now: time.Now,
		dispatchAttempts: DefaultDispatchAttempts, retention: retention.Default, partitions: partition.NewCatalog(pool)}
	s.defaultPolicies(carries)
	return s
}

// ErrDuplicate wraps the original message of an idempotent retry.
type ErrDuplicate struct{ Original db.Message }

func (e *ErrDuplicate) Error() string { return "duplicate send of message " + e.Original.ID }

// checked is a send whose fields are valid, before its sender and channel are chosen.
type checked struct {
	to          string
	kind        recipientKind
	messageType string
	requested   string
	text        string
	attachments []attachment
}

// check validates the fields every generation shares and lists every invalid one.
func check(in Request) (checked, []apperror.FieldError) {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	c := checked{messageType: "text"}
	if in.To == nil || *in.To == "" {
		bad("to", "is required")
	} else if c.to = *in.To; classifyFor(c.to, deref(in.Channel)) == invalidRecipient {
		bad("to", "must be an E.164 number (+ and up to 15 digits), an email address, a business-scoped user id or a numeric chat id")
	} else {
		c.kind = classifyFor(c.to, deref(in.Channel))
	}
	if in.MessageType != nil {
		c.messageType = *in.MessageType
		if !contains(MessageTypes, c.messageType) {
			bad("messageType", fmt.Sprintf("must be one of %v", MessageTypes))
		}
	}
	if in.Channel != nil {
		c.requested = *in.Channel
		if !contains(Channels, c.requested) {
			bad("channel", fmt.Sprintf("must be one of %v", Channels))
		}
	}
	if in.Text != nil {
		c.text = *in.Text
	}
	if contains(MessageTypes, c.messageType) {
		errs = append(errs, checkContent(c.messageType, c.text, in.Content)...)
	}
	if len([]rune(c.text)) > maxTextLength {
		bad("text", fmt.Sprintf("must be up to %d characters", maxTextLength))
	}
	email := c.kind == emailRecipient || c.requested == string(v1alpha1.ChannelEmail)
	if email && (in.Subject == nil || *in.Subject == "") {
		bad("subject", "is required for email")
	}
	if in.Subject != nil && len([]rune(*in.Subject)) > maxSubjectLength {
		bad("subject", fmt.Sprintf("must be up to %d characters", maxSubjectLength))
	}
	if in.IdempotencyKey != nil && (len(*in.IdempotencyKey) == 0 || len(*in.IdempotencyKey) > maxKeyLength) {
		bad("idempotencyKey", fmt.Sprintf("must be 1 to %d characters", maxKeyLength))
	}
	if in.HTMLBody != nil && !email {
		bad("htmlBody", "is for email")
	}
	if in.ReplyTo != nil && !email {
		bad("replyTo", "is for email")
	}
	atts, attErrs := checkAttachments(in.Attachments, email)
	c.attachments, errs = atts, append(errs, attErrs...)
	_, optErrs := options(in)
	errs = append(errs, optErrs...)
	return c, errs
}

// messageDays is how many days project's messages are kept: the installation's retention, or
// the Project's shorter one.
func (s *Service) messageDays(ctx context.Context, project string) (int, error) {
	days := s.retention.Messages
	p, err := s.project(ctx, project)
	if err != nil {
		return 0, err
	}
	if p != nil && p.Spec.Retention != nil && p.Spec.Retention.MessagesDays != nil {
		days = min(days, int(*p.Spec.Retention.MessagesDays))
	}
	return days, nil
}

// messagesSince is the oldest creation time of project's messages the API shows.
func (s *Service) messagesSince(ctx context.Context, project string) (time.Time, int, error) {
	days, err := s.messageDays(ctx, project)
	if err != nil {
		return time.Time{}, 0, err
	}
	return s.now().UTC().Add(-time.Duration(days) * 24 * time.Hour), days, nil
}

// Get returns the key's message id; another project's, or another mode's, is not found. A
// message older than the retention is not found either, and the answer says why.
func (s *Service) Get(ctx context.Context, key apikey.Key, id string) (db.Message, error) {
	since, days, err := s.messagesSince(ctx, key.Project)
	if err != nil {
		return db.Message{}, err
	}
	expired := apperror.NotFoundf("No message %s: messages are kept %d days, and it was older.", id, days)
	if at, ok := randid.TimeOf(id); ok && at.Before(since) {
		return db.Message{}, expired
	}
	m, err := s.messagesOf(s.pool, id).GetMessage(ctx, db.GetMessageParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Message{}, apperror.NotFoundf("No message %s.", id)
	}
	if err != nil {
		return db.Message{}, fmt.Errorf("read message %s: %w", id, err)
	}
	if m.CreatedAt.Before(since) {
		return db.Message{}, expired
	}
	return m, nil
}

// ListFilter narrows a message list.
type ListFilter struct {
	Channel, Status, To *string
	// Sender keeps the messages of one sender (the console's search).
	Sender *string
	// Since keeps the messages made since then (the console's search), read in one statement;
	// nil is the retention's start, read back through doubling spans until a page is full.
	Since *time.Time
	// BeforeTime and BeforeID continue after the last message of the previous page.
	BeforeTime *time.Time
	BeforeID   *string
	Limit      int
}

// List returns the key's messages, newest first.
func (s *Service) List(ctx context.Context, key apikey.Key, f ListFilter) ([]db.Message, error) {
	since, _, err := s.messagesSince(ctx, key.Project)
	if err != nil {
		return nil, err
	}
	if f.Since != nil && f.Since.After(since) {
		since = *f.Since
	}
	if f.To != nil {
		return s.listTo(ctx, key, since, f)
	}
	q := db.Planned(s.pool)
	read := func(from, to time.Time, limit int) ([]db.Message, error) {
		return q.ListMessages(ctx, db.ListMessagesParams{Project: key.Project, TestMode: key.TestMode(), Since: from, Until: to,
			Channel: f.Channel, Status: f.Status, Sender: f.Sender, BeforeTime: f.BeforeTime, BeforeID: f.BeforeID, PageSize: int32(limit)})
	}
	var rows []db.Message
	if f.Since != nil {
		// A search of a recent while (the console's) is one read of its few days.
		rows, err = read(since, pageTop(s.now(), f), f.Limit)
	} else {
		rows, err = partition.NewestFirst(pageTop(s.now(), f), since, f.Limit, read)
	}
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	return rows, nil
}

// listTo is List of the messages to one recipient, read from the days that hold them: its
// conversations' days (its outbound messages) and the days it received inbound messages as one
// of the project's addresses. A recipient that received nothing inbound is sought in its
// conversations alone, through their index. What came before those days were kept is read
// back through the spans.
func (s *Service) listTo(ctx context.Context, key apikey.Key, since time.Time, f ListFilter) ([]db.Message, error) {
	q := db.Planned(s.pool)
	where, err := q.RecipientDays(ctx, db.RecipientDaysParams{Project: key.Project, TestMode: key.TestMode(),
		Recipient: addr.Key(*f.To), SinceDay: since.UTC().Truncate(partition.Day)})
	if err != nil {
		return nil, fmt.Errorf("find the days of messages to a recipient: %w", err)
	}
	keptFrom := where.KeptFrom
	var conversations []string
	if len(where.InboundDays) == 0 {
		conversations = where.ConversationIds
		if conversations == nil {
			conversations = []string{}
		}
	}
	read := func(spans []partition.Span, limit int) ([]db.Message, error) {
		froms, tos := partition.SpanBounds(spans)
		p := db.ListRecipientMessagesParams{Project: key.Project, TestMode: key.TestMode(), Recipient: *f.To, Froms: froms, Tos: tos,
			Channel: f.Channel, Status: f.Status, Sender: f.Sender, BeforeTime: f.BeforeTime, BeforeID: f.BeforeID, PageSize: int32(limit)}
		// Before the days were kept, an inbound message to the recipient may lie in any span.
		if spans[len(spans)-1].From.Compare(keptFrom) >= 0 {
			p.ConversationIds = conversations
		}
		return q.ListRecipientMessages(ctx, p)
	}
	// The day the lists began may hold earlier messages to the recipient, before any it lists.
	days := append(append(where.ConversationDays, where.InboundDays...), keptFrom)
	rows, err := partition.OnDays(pageTop(s.now(), f), since, days, keptFrom, f.Limit, read)
	if err != nil {
		return nil, fmt.Errorf("list messages to a recipient: %w", err)
	}
	return rows, nil
}

// pageTop is where a page of messages begins, going back: at the cursor's time (its instant
// included: the cursor's id orders the rows of that microsecond), or a week ahead of this
// process's clock for the first page, which takes the rows of a clock a little ahead too.
func pageTop(now time.Time, f ListFilter) time.Time {
	if f.BeforeTime != nil {
		return f.BeforeTime.Add(time.Microsecond)
	}
	return now.Add(7 * partition.Day)
}

// pickSender returns the sender named by Service-Sender, or the project's default.
func (s *Service) pickSender(ctx context.Context, project, id string) (*v1alpha1.Sender, error) {
	if id != "" {
		var snd v1alpha1.Sender
		err := s.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: id}, &snd)
		if apierrors.IsNotFound(err) {
			return nil, apperror.InvalidFields(apperror.FieldError{Path: "Service-Sender", Message: fmt.Sprintf("no sender %s in this project", id)})
		}
		if err != nil {
			return nil, fmt.Errorf("read sender %s: %w", id, err)
		}
		return &snd, nil
	}
	// Only the senders asking to be the default: a send must not copy every sender of the project.
	var list v1alpha1.SenderList
	if err := s.reader.List(ctx, &list, client.InNamespace(project), client.MatchingFields{index.SenderDefault: "true"}); err != nil {
		return nil, fmt.Errorf("list senders: %w", err)
	}
	if d := v1alpha1.DefaultSender(list.Items); d != nil {
		return d, nil
	}
	return nil, apperror.InvalidFields(apperror.FieldError{Path: "Service-Sender",
		Message: "the project has no default sender: name one in the Service-Sender header, or set one as default"})
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// newID returns prefix and 24 random base62 characters.
func newID(prefix string) (string, error) { return randid.Prefixed(prefix, 24) }

// newMessageID returns the id of a message created at: it carries that time, which names the
// message's partition (randid.Timed).
func newMessageID(at time.Time) (string, error) { return randid.Timed("msg_", at) }
