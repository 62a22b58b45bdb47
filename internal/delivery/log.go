package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// ReplayWindow is how old a delivery may be and still be replayed: the workers claim among the
// deliveries of the last ClaimHorizon only.
const ReplayWindow = ClaimHorizon

// replayBatch is how many failed deliveries one statement of a range replay makes due: a range
// of a million is replayed without one long transaction holding them all.
const replayBatch = 1000

// healthWindow is the time an endpoint's success rate is measured over.
const healthWindow = 24 * time.Hour

// Statuses are a delivery's states.
var Statuses = []string{"pending", "delivered", "failed", "cancelled"}

// Endpoint names one webhook of a project: a Sender's (Kind sender, Name the sender's id), the
// v2 project webhook (project_v2, "v2") or the invitations webhook (project_v1, "invitations").
type Endpoint struct {
	Kind Kind
	Name string
}

// V2Endpoint is the v2 project webhook.
var V2Endpoint = Endpoint{Kind: KindProjectV2, Name: string(v1alpha1.WebhookKindV2)}

// InvitationsEndpoint is the v1 project webhook for invitation events.
var InvitationsEndpoint = Endpoint{Kind: KindProjectV1, Name: string(v1alpha1.WebhookKindInvitations)}

// SenderEndpoint is a Sender's webhook.
func SenderEndpoint(sender string) Endpoint { return Endpoint{Kind: KindSender, Name: sender} }

// EndpointOf is the endpoint a delivery goes to.
func EndpointOf(d db.WebhookDelivery) Endpoint {
	return Endpoint{Kind: Kind(d.EndpointKind), Name: d.EndpointName}
}

// String names the endpoint for people (the console, the CLI, the audit): v2, invitations, or
// sender/NAME. ParseEndpoint reads it back.
func (e Endpoint) String() string {
	if e.Kind == KindSender {
		return "sender/" + e.Name
	}
	return e.Name
}

// ParseEndpoint reads an endpoint's String; nil when it names none.
func ParseEndpoint(name string) *Endpoint {
	switch {
	case name == V2Endpoint.Name:
		return &V2Endpoint
	case name == InvitationsEndpoint.Name:
		return &InvitationsEndpoint
	case strings.HasPrefix(name, "sender/") && len(name) > len("sender/"):
		ep := SenderEndpoint(strings.TrimPrefix(name, "sender/"))
		return &ep
	}
	return nil
}

// Filter selects deliveries of the log. Zero fields select everything.
type Filter struct {
	Endpoint  *Endpoint
	Status    string
	Event     string
	MessageID string
	// Since and Until bound the deliveries' creation, [Since, Until); zero Since is the
	// retention's start, zero Until is now.
	Since, Until time.Time
	// BeforeTime and BeforeID continue a page: the deliveries made before that one.
	BeforeTime *time.Time
	BeforeID   *string
	Limit      int
}

// Log reads the webhook delivery log, replays deliveries, and tells and changes the endpoints'
// health (docs/webhooks.md#the-delivery-log).
type Log struct {
	pool *pgxpool.Pool
	// client reads endpoints from the cache and writes their WebhookEnabled condition.
	client client.Client
	now    func() time.Time
	// Retain is how long deliveries are kept (the retention policy's days); 0 is 30 days.
	Retain time.Duration
}

// NewLog returns the delivery log over pool, reading and enabling endpoints through c.
func NewLog(pool *pgxpool.Pool, c client.Client) *Log {
	return &Log{pool: pool, client: c, now: time.Now}
}

func modeOf(testMode bool) string { return string(ModeOf(testMode)) }

// List returns up to f.Limit deliveries of the project's traffic of one mode, newest first.
func (l *Log) List(ctx context.Context, project string, testMode bool, f Filter) ([]db.WebhookDelivery, error) {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "status", Message: "must be one of pending, delivered, failed, cancelled"})
	}
	now := l.now().UTC()
	since, until := f.Since, f.Until
	if oldest := now.Add(-l.retain()); since.Before(oldest) {
		since = oldest
	}
	if until.IsZero() || until.After(now.Add(time.Minute)) {
		until = now.Add(time.Minute) // ids carry their time; a clock a little ahead is still seen
	}
	if !since.Before(until) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "since", Message: "must be before until"})
	}
	p := db.ListWebhookDeliveriesParams{Project: project, Since: since, Until: until, BeforeTime: until, BeforeID: "",
		Mode: modeOf(testMode), Status: f.Status, Event: f.Event, MessageID: f.MessageID, Max: int32(f.Limit)}
	if f.BeforeTime != nil {
		p.BeforeTime, p.BeforeID = *f.BeforeTime, *f.BeforeID
	} else {
		p.BeforeTime = until.Add(time.Microsecond) // (until, "") is after every row before until
	}
	if f.Endpoint != nil {
		p.EndpointKind, p.EndpointName = string(f.Endpoint.Kind), f.Endpoint.Name
	}
	rows, err := db.Planned(l.pool).ListWebhookDeliveries(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return rows, nil
}

func (l *Log) retain() time.Duration {
	if l.Retain > 0 {
		return l.Retain
	}
	return 30 * partition.Day
}

// Get returns one delivery of the project's traffic of one mode, with its attempts.
func (l *Log) Get(ctx context.Context, project string, testMode bool, id string) (db.WebhookDelivery, []db.WebhookDeliveryAttempt, error) {
	d, err := l.get(ctx, project, testMode, id)
	if err != nil {
		return d, nil, err
	}
	attempts, err := db.Planned(l.pool).ListWebhookAttempts(ctx, id)
	if err != nil {
		return d, nil, fmt.Errorf("read attempts of %s: %w", id, err)
	}
	return d, attempts, nil
}

// AttemptsOf returns the attempts of deliveries List returned (made since since), by delivery,
// in one read.
func (l *Log) AttemptsOf(ctx context.Context, deliveries []db.WebhookDelivery, since time.Time) (map[string][]db.WebhookDeliveryAttempt, error) {
	out := map[string][]db.WebhookDeliveryAttempt{}
	if len(deliveries) == 0 {
		return out, nil
	}
	ids := make([]string, len(deliveries))
	for i, d := range deliveries {
		ids[i] = d.ID
	}
	rows, err := db.Planned(l.pool).ListWebhookAttemptsOf(ctx, db.ListWebhookAttemptsOfParams{DeliveryIds: ids, Since: since})
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	for _, a := range rows {
		out[a.DeliveryID] = append(out[a.DeliveryID], a)
	}
	return out, nil
}

func (l *Log) get(ctx context.Context, project string, testMode bool, id string) (db.WebhookDelivery, error) {
	d, err := db.Planned(l.pool).GetWebhookDelivery(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !l.visible(d, project, testMode)) {
		return db.WebhookDelivery{}, apperror.NotFoundf("webhook delivery %s not found", id)
	}
	if err != nil {
		return d, fmt.Errorf("read webhook delivery %s: %w", id, err)
	}
	return d, nil
}

// visible: another project's delivery, the other mode's, or one past retention is not found.
func (l *Log) visible(d db.WebhookDelivery, project string, testMode bool) bool {
	return d.Project == project && (d.Mode == "" || d.Mode == modeOf(testMode)) && !d.CreatedAt.Before(l.now().Add(-l.retain()))
}

// Replay makes a finished delivery due again for one attempt at once, with its event id and a
// fresh signature; the attempt is logged as a replay.
func (l *Log) Replay(ctx context.Context, project string, testMode bool, id string) (db.WebhookDelivery, error) {
	d, err := l.get(ctx, project, testMode, id)
	if err != nil {
		return d, err
	}
	now := l.now().UTC()
	switch {
	case d.Status == "pending":
		return d, apperror.New(apperror.Conflict, "delivery_pending", "the delivery is still being attempted; replay it once it has finished")
	case d.Erased:
		return d, apperror.New(apperror.Conflict, "delivery_erased", "an erasure took the data of this delivery's event: it cannot be sent again")
	case d.CreatedAt.Before(now.Add(-ReplayWindow)):
		return d, apperror.New(apperror.Conflict, "replay_window_passed",
			fmt.Sprintf("deliveries can be replayed for %d days after they were made", int(ReplayWindow/partition.Day)))
	}
	replayed, err := db.Planned(l.pool).ReplayWebhookDelivery(ctx, db.ReplayWebhookDeliveryParams{Now: now, ID: id, Project: project,
		MadeSince: now.Add(-ReplayWindow)})
	if errors.Is(err, pgx.ErrNoRows) {
		// Taken by another replay a moment ago.
		return d, apperror.New(apperror.Conflict, "delivery_pending", "the delivery is still being attempted; replay it once it has finished")
	}
	if err != nil {
		return d, fmt.Errorf("replay webhook delivery %s: %w", id, err)
	}
	return replayed, nil
}

// ReplayFailed replays every failed delivery of the endpoint made in [since, until) and returns
// how many; since must be within the replay window.
func (l *Log) ReplayFailed(ctx context.Context, project string, testMode bool, ep Endpoint, since, until time.Time) (int, error) {
	now := l.now().UTC()
	if until.IsZero() || until.After(now) {
		until = now.Add(time.Minute)
	}
	var errs []apperror.FieldError
	if since.IsZero() {
		errs = append(errs, apperror.FieldError{Path: "since", Message: "is required"})
	} else if since.Before(now.Add(-ReplayWindow)) {
		errs = append(errs, apperror.FieldError{Path: "since",
			Message: fmt.Sprintf("must be within the last %d days: older deliveries cannot be replayed", int(ReplayWindow/partition.Day))})
	} else if !since.Before(until) {
		errs = append(errs, apperror.FieldError{Path: "since", Message: "must be before until"})
	}
	if len(errs) > 0 {
		return 0, apperror.InvalidFields(errs...)
	}
	total := 0
	for {
		ids, err := db.Planned(l.pool).ReplayFailedWebhookDeliveries(ctx, db.ReplayFailedWebhookDeliveriesParams{
			FailedBefore: now, Since: since, Until: until, Project: project, EndpointKind: string(ep.Kind), EndpointName: ep.Name,
			Mode: modeOf(testMode), Max: replayBatch})
		if err != nil {
			return total, fmt.Errorf("replay failed deliveries of %s %s: %w", ep.Kind, ep.Name, err)
		}
		total += len(ids)
		if len(ids) < replayBatch {
			return total, nil
		}
	}
}

// Health is one endpoint's health: its last attempts, and its success over the last day.
type Health struct {
	Endpoint            Endpoint
	URL                 string
	LastAttemptAt       *time.Time
	LastSuccessAt       *time.Time
	LastFailureAt       *time.Time
	FailingSince        *time.Time
	ConsecutiveFailures int
	// Attempts and Succeeded count the last day's attempts.
	Attempts, Succeeded int64
	// Disabled is set while the endpoint is disabled: since when and why.
	Disabled *Disabled
}

// Disabled says why an endpoint is off.
type Disabled struct {
	At     time.Time
	Reason string
}

// SuccessRate is the share of the last day's attempts that were answered 2xx; nil without any.
func (h Health) SuccessRate() *float64 {
	if h.Attempts == 0 {
		return nil
	}
	r := float64(h.Succeeded) / float64(h.Attempts)
	return &r
}

// Health returns the project's webhooks with their health: every webhook it declares now (one
// never attempted has no times), in the order v2, invitations, then senders by name.
func (l *Log) Health(ctx context.Context, project string) ([]Health, error) {
	rows, err := db.Planned(l.pool).ListWebhookEndpointHealth(ctx, db.ListWebhookEndpointHealthParams{Project: project,
		Since: l.now().UTC().Add(-healthWindow).Truncate(time.Hour)})
	if err != nil {
		return nil, fmt.Errorf("read webhook endpoints' health: %w", err)
	}
	measured := map[Endpoint]db.ListWebhookEndpointHealthRow{}
	for _, r := range rows {
		measured[Endpoint{Kind(r.EndpointKind), r.EndpointName}] = r
	}
	declared, err := l.endpoints(ctx, project)
	if err != nil {
		return nil, err
	}
	out := make([]Health, 0, len(declared))
	for _, d := range declared {
		h := d
		if r, ok := measured[d.Endpoint]; ok {
			at := r.LastAttemptAt
			h.LastAttemptAt, h.LastSuccessAt, h.LastFailureAt, h.FailingSince = &at, r.LastSuccessAt, r.LastFailureAt, r.FailingSince
			h.ConsecutiveFailures, h.Attempts, h.Succeeded = int(r.ConsecutiveFailures), r.RecentAttempts, r.RecentSucceeded
		}
		out = append(out, h)
	}
	return out, nil
}

// EndpointHealth is Health of one endpoint; not found when the project has no such webhook.
func (l *Log) EndpointHealth(ctx context.Context, project string, ep Endpoint) (Health, error) {
	all, err := l.Health(ctx, project)
	if err != nil {
		return Health{}, err
	}
	for _, h := range all {
		if h.Endpoint == ep {
			return h, nil
		}
	}
	return Health{}, notFound(ep)
}

func notFound(ep Endpoint) error {
	if ep.Kind == KindSender {
		return apperror.NotFoundf("sender %s has no webhook", ep.Name)
	}
	return apperror.NotFoundf("the project has no %s webhook", ep.Name)
}

// endpoints lists the project's webhooks as declared, each with its URL and disabled state.
func (l *Log) endpoints(ctx context.Context, project string) ([]Health, error) {
	var out []Health
	var hooks v1alpha1.WebhookList
	if err := l.client.List(ctx, &hooks, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list webhooks of %s: %w", project, err)
	}
	slices.SortFunc(hooks.Items, func(a, b v1alpha1.Webhook) int { // v2 first
		return -cmp.Compare(a.Spec.Kind, b.Spec.Kind)
	})
	for _, wh := range hooks.Items {
		ep := V2Endpoint
		if wh.Spec.Kind == v1alpha1.WebhookKindInvitations {
			ep = InvitationsEndpoint
		}
		out = append(out, Health{Endpoint: ep, URL: withoutUserinfo(wh.Spec.URL), Disabled: disabledOf(wh.Status.Conditions)})
	}
	var senders v1alpha1.SenderList
	if err := l.client.List(ctx, &senders, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list senders of %s: %w", project, err)
	}
	slices.SortFunc(senders.Items, func(a, b v1alpha1.Sender) int { return cmp.Compare(a.Name, b.Name) })
	for _, s := range senders.Items {
		if s.Spec.Webhook == nil {
			continue
		}
		out = append(out, Health{Endpoint: SenderEndpoint(s.Name), URL: withoutUserinfo(s.Spec.Webhook.URL),
			Disabled: disabledOf(s.Status.Conditions)})
	}
	return out, nil
}
